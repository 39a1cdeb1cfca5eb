#pragma once
#include <cstdint>

#include "ir/fuse.h"
#include "ir/graph.h"

namespace tandem {

// Constant outputs above this many bytes per node stay nodes: folding trades a run-time op for
// memory held for the whole run, and past this size the memory is the larger cost.
inline constexpr int64_t kMaxFoldedConstantBytes = int64_t{256} << 20;

struct ConstantFolding {
  int nodes = 0;       // nodes run once at load and replaced by the constants they computed
  int64_t bytes = 0;   // bytes of those constants
  int over_cap = 0;    // nodes of constant inputs left to run: outputs above the cap
  int refused = 0;     // and those the CPU's kernels refused (the run says why, or another
                       // device runs them)
  double seconds = 0;  // what folding took
};

// Runs once, on the host CPU's kernels, every top-level node whose inputs are all constants (a
// Transpose or Cast of a weight, a scale folded into one), in graph order so that chains fold
// whole, and makes its outputs constants; the constants only those nodes read are dropped.
// Shape inference at import folds only small integer arithmetic (kMaxFoldedElements); this
// takes any element type and any op with a CPU kernel, except random ones, control flow, ops of
// data-dependent shape and nodes that produce a graph output. A node whose kernel refuses its
// inputs stays, so that running it reports the error as before.
ConstantFolding fold_constants(Graph& graph, int64_t max_bytes = kMaxFoldedConstantBytes);

// What preparing a graph for inference did.
struct InferencePreparation {
  ConstantFolding constants;
  FusionStats fusion;
};

// The graph `tandem run` executes and every verb plans: constants folded, then the inference
// rewrites of fuse_for_inference (which then see folded weights as constants).
InferencePreparation prepare_for_inference(Graph& graph);

}  // namespace tandem
