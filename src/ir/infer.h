#pragma once
#include "ir/graph.h"

namespace tandem {

// Infers the type and shape of every value of `graph` (and of its subgraphs) from its inputs
// and constants using the op schemas, folds shape arithmetic into constants, drops nodes
// whose outputs all became constants, and sets every node's cost. Throws InputError naming
// the node for an unknown op or an invalid one.
void infer_graph(Graph& graph);

// Infers a subgraph whose formal inputs and outer-scope values already carry their types.
void infer_subgraph(Graph& subgraph);

}  // namespace tandem
