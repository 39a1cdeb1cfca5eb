#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem {

// How a model's batch divides into pieces (pipeline micro-batches, data-parallel shares), found
// by re-binding the batch dimension and re-inferring the whole model at a smaller size
// (onnx/batch_split.h): which axis of each input and output holds the batch, wherever it sits,
// and the model bound to any number of samples. A model that does not re-infer, or whose
// outputs do not follow the batch, gets a refusal instead, and is never split.
struct BatchSplit {
  std::string dim;    // the symbolic dimension that is the batch, e.g. "batch"; "" when none
  int64_t batch = 1;  // its size as bound
  std::vector<int> input_axis;   // per graph input: its batch axis; -1: every piece reads it whole
  std::vector<int> output_axis;  // per graph output: the axis its pieces are joined along
  // Per graph output: whether its pieces add up instead (a training step's loss and gradients,
  // each piece's already scaled to the whole batch); empty when every output joins.
  std::vector<bool> output_summed;
  std::string refusal;  // why the batch cannot be split; empty when it can
  // The model bound to `samples` and prepared as the whole one was: the same nodes, every
  // shape re-inferred.
  std::function<std::shared_ptr<const Graph>(int64_t samples)> graph_for;

  bool splittable() const { return refusal.empty(); }
};

}  // namespace tandem
