#pragma once
#include <span>

#include "ir/graph.h"

namespace tandem {

// Bytes of the constant tensors (weights) the given nodes read, each counted once, with the
// constants inside their subgraphs.
double weights_bytes(const Graph& graph, std::span<const int> nodes);

// The most bytes of intermediate tensors alive at once when the nodes of `order` (indices into
// graph.nodes) run in that order, with the runtime's lifetimes: a tensor lives from the step
// that writes it to the last step that reads it; a view (Reshape...) allocates nothing and keeps
// its source alive; a tensor that arrives from outside (a graph input, another device's output)
// lives from its first reader; one that leaves (a graph output, read by a node not in `order`)
// lives to the end. Constants are weights, not counted here. A sum of live bytes: the runtime's
// arena is at least this, more by its fragmentation. Dynamic dims count as 1.
double peak_activation_bytes(const Graph& graph, std::span<const int> order);

}  // namespace tandem
