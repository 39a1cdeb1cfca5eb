#pragma once
#include <vector>

#include "plan/problem.h"

namespace tandem {

// The device of every node that minimises, along the node order 0..N-1, the sum of the nodes'
// times plus one transfer wherever consecutive nodes change device (of every value crossing
// that position): dynamic programming over (node, device), O(N·D²). On a chain with nothing
// running in parallel that sum is the latency, so the placement is optimal there; on other
// DAGs it is a candidate that ignores parallelism. Memory is not modelled (the caller checks).
// Empty when no device sequence runs every node.
std::vector<int> chain_placement(const PlanningProblem& problem);

}  // namespace tandem
