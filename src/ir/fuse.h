#pragma once
#include "ir/graph.h"

namespace tandem {

struct FusionStats {
  int batch_norms_folded = 0;
  int residuals_fused = 0;
  int activations_fused = 0;
  int embedding_bags_fused = 0;
};

// Rewrites an inferred graph for inference, as ONNX Runtime's level-2 optimisations do:
// folds BatchNormalization into the Conv before it, and fuses a residual Add and a following
// activation into Conv, Gemm or MatMul (their `residual` input and `activation` attributes).
// Outputs stay numerically equivalent within float rounding. Subgraphs are left as they are.
FusionStats fuse_for_inference(Graph& graph);

}  // namespace tandem
