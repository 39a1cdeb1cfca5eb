#pragma once
#include <functional>

#include "ir/batch_split.h"
#include "onnx/importer.h"

namespace tandem {

// Finds how `model` (imported from model.path with `options`) splits along its batch: the
// symbolic dimension named like a batch ("batch", "N", ...) or, failing that, the one every
// input leads with; then re-imports the model at one sample, runs `prepare` on it (the fusion
// the whole graph had), and checks that it has the same nodes, that each input changes on its
// batch axis only and each output on exactly one axis. Never throws for a model that cannot be
// split: the reason is in BatchSplit::refusal. The batch is then followed through every node
// (ir/batch_flow.h) to prove that no node mixes samples.
BatchSplit find_batch_split(const ImportedModel& model, const ImportOptions& options,
                            std::function<void(Graph&)> prepare = {});

}  // namespace tandem
