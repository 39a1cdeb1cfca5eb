#pragma once
#include <vector>

#include "ir/graph.h"

namespace tandem::train {

// Reverse-mode differentiation on the IR. The gradient of a graph is more nodes of the same
// graph, built by each op's rule (train/gradient_registry.h) from ordinary ops, so every backend,
// the cost model, the planner and the simulator treat a training step as any other graph.

// Of `candidates` (value ids), those `loss` depends on through inputs that carry a gradient (not
// through shapes, indices or comparisons), in the order given.
std::vector<int> values_loss_depends_on(const Graph& graph, int loss,
                                        const std::vector<int>& candidates);

// Appends to `graph` the nodes computing d loss / d value for each of `wrt`, where `loss` is a
// float value of one element; returns the gradients' value ids, in the order of `wrt` (-1 for a
// value the loss does not depend on). Throws InputError naming the first node on a path from a
// `wrt` value to the loss that has no gradient rule, or whose rule refuses its attributes.
//
// With `recompute` (gradient checkpointing), the backward pass keeps about every sqrt(N)-th
// activation of the N forward nodes it differentiates and recomputes the others from the nearest
// kept one when it first needs them, so that only one stretch between kept activations is live at
// a time: less memory for about one more forward pass of compute. The gradients are the same.
//
// `origins`, when given, gets one entry per node of the graph after the call: -1 for the nodes
// it had, and for each node appended the index of the forward node whose gradient it is part of
// (the loss's producer for the seed): where a planner may put it beside its forward node.
std::vector<int> append_gradients(Graph& graph, int loss, const std::vector<int>& wrt,
                                  bool recompute = false, std::vector<int>* origins = nullptr);

}  // namespace tandem::train
