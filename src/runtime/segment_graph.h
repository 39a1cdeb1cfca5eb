#pragma once
#include <vector>

#include "ir/graph.h"

namespace tandem {

// A segment of a plan as a graph of its own, so that one GraphExecutor compiles and runs it on
// its device: the nodes, the constants they read, as inputs the values other segments (or the
// caller) provide, as outputs the values other segments read or the graph returns.
struct SegmentGraph {
  Graph graph;
  std::vector<int> inputs;   // ids in the whole graph, following graph.inputs
  std::vector<int> outputs;  // ids in the whole graph, following graph.outputs
};

// For every value of `graph`, the top-level nodes that read it, directly or captured by a
// subgraph (If, Loop).
std::vector<std::vector<int>> value_readers(const Graph& graph);

// `nodes` are indices into graph.nodes in topological order.
SegmentGraph extract_segment(const Graph& graph, const std::vector<int>& nodes,
                             const std::vector<std::vector<int>>& readers);

}  // namespace tandem
