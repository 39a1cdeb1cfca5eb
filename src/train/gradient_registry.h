#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "train/graph_builder.h"

namespace tandem::train {

// What a gradient rule sees of one forward node: the node (a copy: the graph grows while the
// rule builds), the gradient arriving at each of its outputs, and which inputs want one.
class GradientContext {
 public:
  GradientContext(GraphBuilder& builder, Node node, std::vector<int> output_grads,
                  std::vector<bool> wanted)
      : builder(builder),
        node(std::move(node)),
        output_grads_(std::move(output_grads)),
        wanted_(std::move(wanted)) {}

  GraphBuilder& builder;
  const Node node;

  int input(size_t i) const { return i < node.inputs.size() ? node.inputs[i] : -1; }
  int output(size_t i) const { return i < node.outputs.size() ? node.outputs[i] : -1; }
  Shape input_shape(size_t i) const { return builder.shape(input(i)); }
  bool wants(size_t i) const { return i < wanted_.size() && wanted_[i]; }
  // The gradient of the loss with respect to output i; zeros when no path carries one.
  int output_grad(size_t i = 0);
  // Throws InputError: "<node label>: cannot differentiate: <why>".
  [[noreturn]] void refuse(const std::string& why) const;
  // `axis` of a tensor of `rank` dimensions counted from 0 (a negative one from the end), or a
  // refusal when it is out of range.
  int64_t axis(int64_t axis, size_t rank) const;
  // The constant contents of input i (axes, shapes, starts), or a refusal naming it.
  std::vector<int64_t> constant_ints(size_t i) const;

 private:
  std::vector<int> output_grads_;
  std::vector<bool> wanted_;
};

// Builds the gradients of a node's inputs from its outputs' gradients: one value id per input,
// -1 for an input that gets none (not wanted, or not differentiable).
using GradientRule = std::function<std::vector<int>(GradientContext&)>;

struct GradientEntry {
  GradientRule rule;
  // The inputs a gradient can flow into (axes, shapes, indices and labels do not); empty with
  // `every_input` for variadic ops (Concat, Sum).
  std::vector<int> differentiable;
  bool every_input = false;
  bool differentiable_input(int i) const;
};

// Gradient rules by op type. Families register in the register_*_gradients functions below.
class GradientRegistry {
 public:
  static const GradientRegistry& instance();
  const GradientEntry* find(std::string_view op_type) const;
  std::vector<std::string> op_types() const;
  void add(std::string op_type, std::vector<int> differentiable, GradientRule rule);
  void add_variadic(std::string op_type, GradientRule rule);

 private:
  std::map<std::string, GradientEntry, std::less<>> entries_;
};

void register_elementwise_gradients(GradientRegistry& registry);
void register_linalg_gradients(GradientRegistry& registry);
void register_normalization_gradients(GradientRegistry& registry);
void register_tensor_gradients(GradientRegistry& registry);

}  // namespace tandem::train
