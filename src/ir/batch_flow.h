#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem {

// Follows the batch through a graph, to prove that every output sample depends on its own input
// sample only -- the condition for running pieces of the batch apart (micro-batches, data-
// parallel shares) and joining their outputs. `whole` is the graph at `batch` samples, `piece`
// the same nodes re-inferred at one sample; `input_axis` gives each input's batch axis (-1: none).
//
// A value's batch axis is the one whose size is `batch` times larger in `whole` than in `piece`;
// reshapes may merge the batch with neighbouring dims, as long as each sample stays one block.
// A node mixes samples when its output does not follow the batch (a reduction, a MatMul over
// it), when it works across the batch axis (Softmax, LayerNormalization, Concat, Gather, Slice,
// TopK, ... along it; a convolution or pooling that does not lead with it), or when it runs a
// subgraph over batched data (If, Loop, Scan: not analysed). Non-constant inputs without a
// batch axis are refused too: each piece would read all of it.
//
struct BatchFlow {
  std::string refusal;           // "" when the graph splits, else why, naming the node or input
  std::vector<int> output_axis;  // per graph output, when it splits: its batch axis
};
BatchFlow follow_batch(const Graph& whole, const Graph& piece, int64_t batch,
                       const std::vector<int>& input_axis);

}  // namespace tandem
