#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace tandem {

// Shape arithmetic is folded into constants at import only for tensors up to this many
// elements: enough for shapes and indices, never a weight.
inline constexpr int64_t kMaxFoldedElements = 1024;

// What shape inference knows of one input: its type and, when known, its contents (constants,
// folded shape computations, and every input at run time).
struct ValueInfo {
  DType dtype = DType::kUndefined;
  Shape shape;
  const Tensor* value = nullptr;
  bool present() const { return dtype != DType::kUndefined; }
};

// One inferred output. `value` is set when the op could compute it cheaply from known inputs
// (shape arithmetic such as Shape -> Gather -> Concat), so later Reshapes get static shapes.
struct InferredOutput {
  DType dtype = DType::kUndefined;
  Shape shape;
  Tensor value;
};

class InferContext {
 public:
  InferContext(const Node& node, int opset, std::span<const ValueInfo> inputs)
      : node_(node), opset_(opset), inputs_(inputs) {}
  const Node& node() const { return node_; }
  int opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].present(); }
  // Throws InputError naming the node when input i is absent.
  const ValueInfo& input(size_t i) const;
  // Known contents of input i, or nullptr.
  const Tensor* input_value(size_t i) const { return has_input(i) ? inputs_[i].value : nullptr; }
  // Throws InputError("<node label>: <message>").
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Node& node_;
  int opset_;
  std::span<const ValueInfo> inputs_;
};

using InferFn = std::function<std::vector<InferredOutput>(const InferContext&)>;
using CostFn = std::function<OpCost(const Node&, std::span<const TensorType> inputs,
                                    std::span<const TensorType> outputs)>;

// Everything the IR knows about an op type, independent of any device.
struct OpSchema {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;
  // Output types from input types; validates the node (attributes, ranks, dtypes) once, at import.
  InferFn infer;
  // FLOPs and bytes; when unset, one op per output element and every input and output byte once.
  CostFn cost;
  // The output is input 0 reinterpreted (Reshape, Squeeze...): a runtime may alias its buffer.
  bool output_aliases_input = false;
  // Output shapes depend on input contents beyond what `infer` can know (NonZero, NMS...).
  bool data_dependent_shape = false;
  // Made only by Tandem's own rewrites (ir/fuse.h), never read from a model file.
  bool internal = false;
  // Each output element from the input elements at its (broadcast) index: a compiler runs a
  // chain of such ops as one loop (the cost model prices compiled devices so).
  bool elementwise = false;
};

// The registry of op schemas, keyed by op type. Families register in ops/*.cpp.
class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpSchema* find(std::string_view op_type) const;
  std::vector<std::string> op_types() const;
  void add(OpSchema schema);

 private:
  std::vector<OpSchema> schemas_;
};

// Whether `node` is an op of the default domain whose schema is `elementwise`.
bool is_elementwise(const Node& node);
// Whether `node` is an op of the default domain whose output aliases its input (a view: a
// Reshape, a Squeeze... no kernel runs).
bool is_view(const Node& node);

OpCost default_cost(const Node& node, std::span<const TensorType> inputs,
                    std::span<const TensorType> outputs);
// Bytes of a tensor type whose shape may be dynamic (dynamic dims count as 1).
double type_bytes(const TensorType& type);

// The tensor a Constant node holds, from whichever value attribute carries it (its schema
// has checked there is exactly one); for backends that run Constant nodes.
Tensor constant_node_value(const Node& node);

}  // namespace tandem
