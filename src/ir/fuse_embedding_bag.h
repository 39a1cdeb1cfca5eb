#pragma once
#include <optional>

#include "ir/graph.h"

namespace tandem {

// PyTorch exports nn.EmbeddingBag (and F.embedding_bag) with offsets as a `Loop` over the bags
// whose body slices one bag's indices, gathers their table rows and reduces them:
//   start = Gather(starts, i), end = Gather(ends, i)
//   rows  = Gather(table, Slice(indices, Unsqueeze(start), Unsqueeze(end), axes=[0]))
//   bag   = ReduceSum(rows, axes=[0], keepdims=0)   (or ReduceMean)
// with a constant trip count and a condition that stays true. Returns the one EmbeddingBag node
// (op schema in ir/ops/tensor_index_ops.cpp) that computes the same output, reading the same
// outer values, for a `Loop` of exactly that shape in `graph`; nullopt for any other node.
std::optional<Node> embedding_bag_from_loop(const Graph& graph, const Node& loop);

}  // namespace tandem
