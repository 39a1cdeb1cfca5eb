#pragma once
#include <set>
#include <string>

#include "ir/graph.h"
#include "ir/op_schema.h"

namespace tandem {

// Infers the type and shape of every value of `graph` (and of its subgraphs) from its inputs
// and constants using the op schemas, folds shape arithmetic into constants, drops nodes
// whose outputs all became constants, and sets every node's cost. Throws InputError naming
// the node for an unknown op or an invalid one. Nodes named in `keep` stay nodes even when their
// outputs could be folded (a re-import at another batch that must have the same nodes).
void infer_graph(Graph& graph, const std::set<std::string>& keep = {});

// infer_graph again on a graph a pass has rewritten, every node kept a node: shapes that became
// static (a folded value, a Loop made an EmbeddingBag) reach the nodes after them, and only the
// pass decides which nodes go.
void reinfer_keeping_nodes(Graph& graph);

// Infers one node whose inputs carry their types: sets its outputs' types, their contents where
// the op computes them cheaply from constant inputs (unless `keep`), and its cost. Returns whether
// every output became a constant (the node can go). Throws InputError naming the node.
bool infer_node(Graph& graph, Node& node, bool keep = false);

// What the node's schema infers for its outputs from the graph's values as they are (types, and
// the contents of constants), changing nothing. Throws InputError naming the node.
std::vector<InferredOutput> infer_outputs(const Graph& graph, const Node& node);

// Infers a subgraph whose formal inputs and outer-scope values already carry their types.
void infer_subgraph(Graph& subgraph);

}  // namespace tandem
