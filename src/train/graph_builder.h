#pragma once
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::train {

// Appends nodes to a graph, inferring each one's output types as it is added, so that the code
// building a gradient knows the shape of everything it made. Names are fresh, under a prefix.
class GraphBuilder {
 public:
  using Attributes = std::map<std::string, Attribute, std::less<>>;

  GraphBuilder(Graph& graph, std::string prefix) : graph_(graph), prefix_(std::move(prefix)) {}
  Graph& graph() { return graph_; }

  // A node of `op_type` reading `inputs` (-1 for an omitted optional one); returns its outputs.
  std::vector<int> add_multi(const std::string& op_type, std::vector<int> inputs,
                             Attributes attributes, int outputs);
  // A node with one output; returns it.
  int add(const std::string& op_type, std::vector<int> inputs, Attributes attributes = {});

  int constant(Tensor tensor);
  int int64s(const std::vector<int64_t>& values);  // a 1-D int64 constant (shapes, axes)
  int scalar(float value, DType dtype = DType::kFloat32);
  // A tensor of `shape` filled with `value`, without materialising it as a constant.
  int filled(float value, const Shape& shape, DType dtype = DType::kFloat32);

  // By value: adding nodes moves the graph's values.
  Shape shape(int value) const { return graph_.values[value].type.shape; }
  DType dtype(int value) const { return graph_.values[value].type.dtype; }

  // Shorthands for the ops gradients are made of.
  int reshape(int value, const Shape& shape);
  int transpose(int value, const std::vector<int64_t>& perm);
  // Sums over `axes`; keeps them as size 1 when `keepdims`.
  int reduce_sum(int value, const std::vector<int64_t>& axes, bool keepdims);
  // `value` (broadcast to a larger shape by an op) summed back down to `shape`, as
  // broadcasting's gradient: leading axes and axes of size 1 in `shape` summed away.
  int sum_to(int value, const Shape& shape);
  int mul(int a, int b) { return add("Mul", {a, b}); }
  int sub(int a, int b) { return add("Sub", {a, b}); }
  int div(int a, int b) { return add("Div", {a, b}); }
  int sum(int a, int b) { return add("Add", {a, b}); }
  int scale(int value, float factor) { return mul(value, scalar(factor, dtype(value))); }

 private:
  std::string fresh(const std::string& stem);

  Graph& graph_;
  std::string prefix_;
  int counter_ = 0;
};

}  // namespace tandem::train
