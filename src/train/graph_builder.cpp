#include "train/graph_builder.h"

#include "ir/error.h"
#include "ir/infer.h"

namespace tandem::train {

std::string GraphBuilder::fresh(const std::string& stem) {
  std::string name;
  do {
    name = prefix_ + "/" + stem + "_" + std::to_string(counter_++);
  } while (graph_.find_value(name) >= 0);
  return name;
}

std::vector<int> GraphBuilder::add_multi(const std::string& op_type, std::vector<int> inputs,
                                         Attributes attributes, int outputs) {
  Node node;
  node.name = fresh(op_type);
  node.op_type = op_type;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  for (int i = 0; i < outputs; ++i) node.outputs.push_back(graph_.add_value(fresh(op_type)));
  for (int id : node.outputs) graph_.values[id].producer = static_cast<int>(graph_.nodes.size());
  // Inferred before it joins the graph: a bug in a gradient names the node it made.
  infer_node(graph_, node, /*keep=*/true);
  std::vector<int> ids = node.outputs;
  graph_.nodes.push_back(std::move(node));
  return ids;
}

int GraphBuilder::add(const std::string& op_type, std::vector<int> inputs, Attributes attributes) {
  return add_multi(op_type, std::move(inputs), std::move(attributes), 1).front();
}

int GraphBuilder::constant(Tensor tensor) {
  const int id = graph_.add_value(fresh("const"));
  graph_.values[id].type = {tensor.dtype(), tensor.shape()};
  graph_.values[id].constant = std::move(tensor);
  return id;
}

int GraphBuilder::int64s(const std::vector<int64_t>& values) {
  return constant(
      Tensor::from_vector(DType::kInt64, {static_cast<int64_t>(values.size())}, values));
}

int GraphBuilder::scalar(float value, DType dtype) {
  Tensor tensor = Tensor::allocate(dtype, {});
  if (dtype == DType::kFloat32) {
    *tensor.data<float>() = value;
  } else if (dtype == DType::kFloat64) {
    *tensor.data<double>() = value;
  } else {
    throw InputError("training needs float32 or float64 tensors, not " +
                     std::string(dtype_name(dtype)));
  }
  return constant(std::move(tensor));
}

int GraphBuilder::filled(float value, const Shape& shape, DType dtype) {
  return add("Expand", {scalar(value, dtype), int64s(shape)});
}

int GraphBuilder::reshape(int value, const Shape& shape) {
  if (this->shape(value) == shape) return value;
  return add("Reshape", {value, int64s(shape)});
}

int GraphBuilder::transpose(int value, const std::vector<int64_t>& perm) {
  return add("Transpose", {value}, {{"perm", perm}});
}

int GraphBuilder::reduce_sum(int value, const std::vector<int64_t>& axes, bool keepdims) {
  if (axes.empty()) return value;
  return add("ReduceSum", {value, int64s(axes)}, {{"keepdims", int64_t{keepdims ? 1 : 0}}});
}

int GraphBuilder::sum_to(int value, const Shape& shape) {
  const Shape& from = this->shape(value);
  if (from == shape) return value;
  const size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t axis = 0; axis < from.size(); ++axis) {
    if (axis < lead || (shape[axis - lead] == 1 && from[axis] != 1))
      axes.push_back(static_cast<int64_t>(axis));
  }
  return reshape(reduce_sum(value, axes, true), shape);
}

}  // namespace tandem::train
