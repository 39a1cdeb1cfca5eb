#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"

namespace tandem {

class Graph;

using Attribute =
    std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                 std::vector<std::string>, Tensor, std::shared_ptr<Graph>>;

struct TensorType {
  DType dtype = DType::kUndefined;
  Shape shape;
};

// What an op costs, independent of the device: the cost model turns it into time.
struct OpCost {
  double flops = 0;  // floating-point (or integer) arithmetic operations
  double bytes = 0;  // bytes read plus bytes written, each tensor once
};

struct Value {
  std::string name;
  TensorType type;
  Tensor constant;           // defined for initializers and folded constants
  int producer = -1;         // index of the producing node, -1 for inputs and constants
  bool outer_scope = false;  // a subgraph's reference to a value of an enclosing graph
  bool is_constant() const { return constant.defined(); }
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;        // "" for the default ONNX domain
  std::vector<int> inputs;   // value ids; -1 for an omitted optional input
  std::vector<int> outputs;  // value ids; -1 for an omitted optional output
  std::map<std::string, Attribute, std::less<>> attributes;
  OpCost cost;

  bool has(std::string_view attr) const { return attributes.find(attr) != attributes.end(); }
  int64_t attr_int(std::string_view attr, int64_t fallback) const;
  float attr_float(std::string_view attr, float fallback) const;
  std::string attr_string(std::string_view attr, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view attr, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view attr) const;
  const Tensor* attr_tensor(std::string_view attr) const;
  std::shared_ptr<Graph> attr_graph(std::string_view attr) const;
  // "name (OpType)", for error messages.
  std::string label() const;
};

// A dataflow graph in single static assignment form. Nodes are kept in a topological order.
class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // graph inputs (not constants), in declaration order
  std::vector<int> outputs;  // graph outputs, in declaration order
  int opset = 0;             // default-domain opset of the model

  int add_value(std::string name, TensorType type = {});
  // Id of the value with this name, or -1.
  int find_value(std::string_view name) const;
  // Value ids referring to enclosing graphs, in order of first use.
  std::vector<int> outer_scope_values() const;

  // Removes the nodes marked in `erased` (one flag per node), keeping the others in their order.
  // Producers are left to the caller (sort_topologically sets them).
  void erase_nodes(const std::vector<bool>& erased);
  // Orders nodes so that every value is produced before use and sets producers;
  // throws InputError naming a node on a cycle or a value that nothing produces.
  void sort_topologically();
  // Value ids `node` reads from this graph: its inputs and what its subgraphs capture; sorted,
  // each once.
  std::vector<int> values_read(const Node& node) const;
  // For every value, the index of its last consuming node (nodes.size() for graph outputs,
  // -1 when unused). Uses inside subgraphs count as uses by the node that owns the subgraph.
  std::vector<int> last_uses() const;

  // Subgraph values a node's subgraphs read from this graph's scope, by name.
  static std::vector<std::string> captured_names(const Graph& subgraph);

 private:
  std::map<std::string, int, std::less<>> index_;
};

}  // namespace tandem
