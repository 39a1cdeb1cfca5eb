#pragma once
// What the per-family lowering rules share: the context they lower one node in.
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/pjrt/stablehlo.h"
#include "ir/graph.h"

namespace tandem::pjrt {

// Thrown by a rule for a node it cannot lower (an attribute value or input it does not handle);
// the message says what, in a few words.
class LoweringRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LowerContext {
 public:
  // `text_only`: the module is written to see whether the node lowers, never compiled, so
  // weights are not permuted on the host (a check must stay cheap).
  LowerContext(HloBuilder& builder, const Graph& graph, bool text_only = false);

  HloBuilder& builder() { return builder_; }
  const Graph& graph() const { return graph_; }

  bool has_input(const Node& node, size_t i) const;
  // Input `i` as a value of the function; constants are written in or made parameters.
  HloValue input(const Node& node, size_t i);
  const TensorType& input_type(const Node& node, size_t i) const;
  // Input `i`'s value when it is known at compile time (a constant), else null.
  const Tensor* constant(const Node& node, size_t i) const;
  // Input `i` transposed by `permutation`: on the host, once, when it is a constant (weights
  // laid out for the device's kernels), else in the program.
  HloValue input_permuted(const Node& node, size_t i, std::span<const int64_t> permutation);
  // A tensor known at compile time: written into the text when small, else a parameter.
  HloValue host_constant(const Tensor& tensor);
  // A constant integer input's contents; LoweringRefused when the input is not constant.
  std::vector<int64_t> constant_ints(const Node& node, size_t i) const;

  bool has_output(const Node& node, size_t i) const;
  const TensorType& output_type(const Node& node, size_t i) const;
  // Binds output `i` to `value`, whose type must be the output's.
  void set_output(const Node& node, size_t i, const HloValue& value);

  // Channels-last forms. A convolution computes [N, spatial..., C] and its ONNX output is a
  // transpose of that; the form is kept, and convolutions, pooling and elementwise ops read and
  // make it, so that between them XLA neither materialises a transpose nor fuses one into an
  // elementwise loop (which turns its contiguous reads into strided ones: MobileNetV3's
  // depthwise convolution + HardSwish ran 4x slower so).
  // Input `i` channels-last: its kept form, else transposed in the program.
  HloValue input_channels_last(const Node& node, size_t i);
  bool has_channels_last(const Node& node, size_t i) const;
  // Binds output `i` to the transpose of `value`, a channels-last form kept for later readers.
  void set_output_channels_last(const Node& node, size_t i, const HloValue& value);
  // Runs an elementwise rule on the inputs' channels-last forms, when one input has such a
  // form and every other input as large as the output has one too; false, lowering nothing,
  // otherwise. Smaller inputs (per-channel scales, scalars) are broadcast to the output's rank
  // and transposed alike. While it runs, the node's input, input_type, output_type and
  // set_output speak channels-last.
  bool lower_channels_last(const Node& node, void (*rule)(LowerContext&, const Node&));

  // The function value of a value id; graph inputs must have been added first.
  HloValue value(int id);
  void bind(int id, HloValue value) { values_[static_cast<size_t>(id)] = std::move(value); }
  HloValue add_input(int id);
  // The constants made parameters, in order after the inputs.
  std::vector<Tensor>& constants() { return constants_; }

 private:
  HloBuilder& builder_;
  const Graph& graph_;
  std::vector<std::optional<HloValue>> values_;
  std::vector<std::optional<HloValue>> channels_last_;
  std::vector<Tensor> constants_;
  bool text_only_;
  // The node lower_channels_last is running, with its channels-last inputs and types.
  struct Frame {
    const Node* node = nullptr;
    std::vector<std::optional<HloValue>> inputs;
    std::vector<TensorType> input_types, output_types;
  } frame_;
};

using LowerRule = void (*)(LowerContext& context, const Node& node);
// An op's rule; one whose schema is `elementwise` gives the same result on any layout, and runs
// on its inputs' channels-last forms where it can (LowerContext::lower_channels_last).
using RuleTable = std::map<std::string, LowerRule, std::less<>>;

// Each op family adds its rules.
void add_elementwise_rules(RuleTable& rules);
void add_linalg_rules(RuleTable& rules);
void add_reduction_rules(RuleTable& rules);
void add_tensor_rules(RuleTable& rules);

// An activation applied to `x`, as the activation ops compute it and as fusion attaches it to
// Conv/Gemm/MatMul (`activation`, `activation_alpha`, `activation_beta` attributes): Relu,
// LeakyRelu (alpha), Sigmoid, Tanh, HardSigmoid (alpha, beta), HardSwish, Gelu (exact), Clip
// (alpha = low, beta = high, NaN = unbounded). LoweringRefused for any other name.
HloValue apply_activation(HloBuilder& b, const HloValue& x, std::string_view activation,
                          float alpha, float beta);
// The fused activation a node carries, if any (its `activation` attributes), applied to `x`.
HloValue apply_fused_activation(HloBuilder& b, const Node& node, const HloValue& x);

// The body of a variadic reduction over (value, int64 index) pairs: the larger value wins with
// `maximum` (else the smaller), a tie goes to the lower index (the higher with `last`). ArgMax,
// ArgMin and MaxPool's Indices.
std::string arg_reduce_region(DType dtype, bool maximum, bool last);

// [N, C, spatial...] as [N, spatial..., C]: the shape of a value's channels-last form.
Shape channels_last_shape(const Shape& shape);

// Numpy broadcasting of input `i` to output 0's shape, converted to `dtype`.
HloValue broadcast_input(LowerContext& context, const Node& node, size_t i, DType dtype);

}  // namespace tandem::pjrt
