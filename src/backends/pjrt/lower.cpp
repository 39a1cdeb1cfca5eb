#include "backends/pjrt/lower.h"

#include <cstring>
#include <stdexcept>

#include "backends/pjrt/lower_rules.h"
#include "ir/error.h"
#include "ir/op_schema.h"

namespace tandem::pjrt {
namespace {

// `tensor` with its axes reordered: output axis k is input axis permutation[k].
Tensor permuted(const Tensor& tensor, std::span<const int64_t> permutation) {
  const size_t rank = permutation.size();
  Shape shape(rank);
  for (size_t k = 0; k < rank; ++k) shape[k] = tensor.dim(permutation[k]);
  Tensor result = Tensor::allocate(tensor.dtype(), shape);
  const std::vector<int64_t> in_strides = contiguous_strides(tensor.shape());
  std::vector<int64_t> strides(rank);  // input stride of each output axis
  for (size_t k = 0; k < rank; ++k) strides[k] = in_strides[static_cast<size_t>(permutation[k])];
  const size_t element = dtype_size(tensor.dtype());
  const auto* in = static_cast<const std::byte*>(tensor.raw());
  auto* out = static_cast<std::byte*>(result.raw());
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < result.numel(); ++n) {
    std::memcpy(out + static_cast<size_t>(n) * element, in + static_cast<size_t>(offset) * element,
                element);
    for (size_t k = rank; k-- > 0;) {  // next output index, odometer style
      offset += strides[k];
      if (++index[k] < shape[k]) break;
      offset -= strides[k] * shape[k];
      index[k] = 0;
    }
  }
  return result;
}

const RuleTable& rules() {
  static const RuleTable table = [] {
    RuleTable all;
    add_elementwise_rules(all);
    add_linalg_rules(all);
    add_reduction_rules(all);
    add_tensor_rules(all);
    return all;
  }();
  return table;
}

// What no rule can get past: a missing rule, a dynamic or untyped value.
std::string static_refusal(const Node& node, const Graph& graph) {
  if (!node.domain.empty()) return "no StableHLO lowering for " + node.domain + "." + node.op_type;
  if (rules().find(node.op_type) == rules().end()) {
    return "no StableHLO lowering for " + node.op_type;
  }
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[static_cast<size_t>(id)];
      if (value.type.dtype == DType::kUndefined) return "untyped value " + value.name;
      if (!is_static(value.type.shape)) {
        return "dynamic shape of " + value.name + " (XLA compiles static shapes only)";
      }
    }
  }
  return "";
}

void lower_node(LowerContext& context, const Node& node) {
  const std::string refusal = static_refusal(node, context.graph());
  if (!refusal.empty()) throw LoweringRefused(refusal);
  const LowerRule lower = rules().at(node.op_type);
  if (!is_elementwise(node) || !context.lower_channels_last(node, lower)) {
    lower(context, node);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (context.has_output(node, i)) context.value(node.outputs[i]);  // every output bound
  }
}

}  // namespace

LowerContext::LowerContext(HloBuilder& builder, const Graph& graph, bool text_only)
    : builder_(builder),
      graph_(graph),
      values_(graph.values.size()),
      channels_last_(graph.values.size()),
      text_only_(text_only) {}

bool LowerContext::has_input(const Node& node, size_t i) const {
  return i < node.inputs.size() && node.inputs[i] >= 0;
}

const TensorType& LowerContext::input_type(const Node& node, size_t i) const {
  if (frame_.node == &node) return frame_.input_types.at(i);
  return graph_.values[static_cast<size_t>(node.inputs.at(i))].type;
}

const Tensor* LowerContext::constant(const Node& node, size_t i) const {
  if (!has_input(node, i)) return nullptr;
  const Value& value = graph_.values[static_cast<size_t>(node.inputs[i])];
  return value.is_constant() ? &value.constant : nullptr;
}

std::vector<int64_t> LowerContext::constant_ints(const Node& node, size_t i) const {
  const Tensor* tensor = constant(node, i);
  if (!tensor) {
    throw LoweringRefused("input " + std::to_string(i) + " of " + node.op_type +
                          " must be a constant");
  }
  return tensor->to_int64s();
}

bool LowerContext::has_output(const Node& node, size_t i) const {
  return i < node.outputs.size() && node.outputs[i] >= 0;
}

const TensorType& LowerContext::output_type(const Node& node, size_t i) const {
  if (frame_.node == &node) return frame_.output_types.at(i);
  return graph_.values[static_cast<size_t>(node.outputs.at(i))].type;
}

HloValue LowerContext::add_input(int id) {
  const TensorType& type = graph_.values[static_cast<size_t>(id)].type;
  HloValue value = builder_.parameter(type.dtype, type.shape);
  bind(id, value);
  return value;
}

HloValue LowerContext::host_constant(const Tensor& tensor) {
  if (tensor.numel() <= kMaxInlinedElements) return builder_.constant(tensor);
  constants_.push_back(tensor);
  return builder_.parameter(tensor.dtype(), tensor.shape());
}

HloValue LowerContext::value(int id) {
  auto& slot = values_[static_cast<size_t>(id)];
  if (slot) return *slot;
  const Value& value = graph_.values[static_cast<size_t>(id)];
  if (!value.is_constant()) {
    throw std::logic_error("StableHLO lowering: " + value.name + " is used before it is made");
  }
  slot = host_constant(value.constant);
  return *slot;
}

HloValue LowerContext::input_permuted(const Node& node, size_t i,
                                      std::span<const int64_t> permutation) {
  const Tensor* known = constant(node, i);
  if (!known || text_only_) return builder_.transpose(input(node, i), permutation);
  return host_constant(permuted(*known, permutation));
}

HloValue LowerContext::input(const Node& node, size_t i) {
  if (!has_input(node, i)) {
    throw LoweringRefused(node.op_type + " needs input " + std::to_string(i));
  }
  if (frame_.node == &node) return *frame_.inputs.at(i);
  return value(node.inputs[i]);
}

namespace {

// [0, 2, 3, ..., rank - 1, 1]: channels-first (ONNX) to channels-last.
std::vector<int64_t> to_channels_last(size_t rank) {
  std::vector<int64_t> permutation{0};
  for (size_t axis = 2; axis < rank; ++axis) permutation.push_back(static_cast<int64_t>(axis));
  permutation.push_back(1);
  return permutation;
}

// [0, rank - 1, 1, 2, ..., rank - 2]: back to channels-first.
std::vector<int64_t> to_channels_first(size_t rank) {
  std::vector<int64_t> permutation{0, static_cast<int64_t>(rank) - 1};
  for (size_t axis = 1; axis + 1 < rank; ++axis) permutation.push_back(static_cast<int64_t>(axis));
  return permutation;
}

}  // namespace

Shape channels_last_shape(const Shape& shape) {
  Shape result;
  for (int64_t axis : to_channels_last(shape.size())) {
    result.push_back(shape[static_cast<size_t>(axis)]);
  }
  return result;
}

bool LowerContext::has_channels_last(const Node& node, size_t i) const {
  return has_input(node, i) && channels_last_[static_cast<size_t>(node.inputs[i])].has_value();
}

HloValue LowerContext::input_channels_last(const Node& node, size_t i) {
  if (has_channels_last(node, i)) return *channels_last_[static_cast<size_t>(node.inputs[i])];
  const HloValue x = input(node, i);
  return builder_.transpose(x, to_channels_last(x.shape.size()));
}

void LowerContext::set_output_channels_last(const Node& node, size_t i, const HloValue& value) {
  if (!has_output(node, i)) return;
  const HloValue first = builder_.transpose(value, to_channels_first(value.shape.size()));
  const TensorType& type = graph_.values[static_cast<size_t>(node.outputs[i])].type;
  if (type.dtype != first.dtype || type.shape != first.shape) {
    throw std::logic_error("StableHLO lowering of " + node.label() + " made channels-last " +
                           tensor_type(value.dtype, value.shape) + " for an output of type " +
                           tensor_type(type.dtype, type.shape));
  }
  bind(node.outputs[i], first);
  channels_last_[static_cast<size_t>(node.outputs[i])] = value;
}

bool LowerContext::lower_channels_last(const Node& node, LowerRule rule) {
  if (!has_output(node, 0)) return false;
  const Shape& out_shape = output_type(node, 0).shape;
  const size_t rank = out_shape.size();
  if (rank < 3) return false;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (has_output(node, i) && output_type(node, i).shape.size() != rank) return false;
  }
  bool any = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!has_input(node, i)) continue;
    const Value& value = graph_.values[static_cast<size_t>(node.inputs[i])];
    if (has_channels_last(node, i)) {
      // A form of lower rank than the output would broadcast along the wrong axes.
      if (value.type.shape.size() != rank) return false;
      any = true;
      continue;
    }
    // Transposing a full-size activation here would cost what the form saves.
    if (value.type.shape.size() > rank ||
        (!value.is_constant() && numel(value.type.shape) == numel(out_shape))) {
      return false;
    }
  }
  if (!any) return false;
  const std::vector<int64_t> permutation = to_channels_last(rank);
  Frame frame;
  frame.node = &node;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!has_input(node, i)) {
      frame.inputs.emplace_back();
      frame.input_types.emplace_back();
      continue;
    }
    HloValue x = has_channels_last(node, i) ? *channels_last_[static_cast<size_t>(node.inputs[i])]
                                            : input(node, i);
    if (!has_channels_last(node, i) && !x.shape.empty()) {
      Shape full(rank - x.shape.size(), 1);  // numpy broadcasting aligns the trailing axes
      full.insert(full.end(), x.shape.begin(), x.shape.end());
      x = builder_.transpose(builder_.reshape(x, full), permutation);
    }
    frame.input_types.push_back({x.dtype, x.shape});
    frame.inputs.push_back(std::move(x));
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const TensorType& type = output_type(node, i);
    frame.output_types.push_back({type.dtype, channels_last_shape(type.shape)});
  }
  frame_ = std::move(frame);
  try {
    rule(*this, node);
  } catch (...) {
    frame_ = Frame{};
    throw;
  }
  frame_ = Frame{};
  return true;
}

void LowerContext::set_output(const Node& node, size_t i, const HloValue& value) {
  if (!has_output(node, i)) return;
  if (frame_.node == &node) {
    const TensorType& type = frame_.output_types.at(i);
    if (type.dtype != value.dtype || type.shape != value.shape) {
      throw std::logic_error("StableHLO lowering of " + node.label() + " made " +
                             tensor_type(value.dtype, value.shape) +
                             " for a channels-last output of type " +
                             tensor_type(type.dtype, type.shape));
    }
    set_output_channels_last(node, i, value);
    return;
  }
  const TensorType& type = output_type(node, i);
  if (type.dtype != value.dtype || type.shape != value.shape) {
    throw std::logic_error("StableHLO lowering of " + node.label() + " made " +
                           tensor_type(value.dtype, value.shape) + " for an output of type " +
                           tensor_type(type.dtype, type.shape));
  }
  bind(node.outputs[i], value);
}

HloValue broadcast_input(LowerContext& context, const Node& node, size_t i, DType dtype) {
  HloBuilder& b = context.builder();
  return b.broadcast_to(b.convert(context.input(node, i), dtype),
                        context.output_type(node, 0).shape);
}

LoweredGraph lower_graph(const Graph& graph) {
  HloBuilder builder;
  LowerContext context(builder, graph);
  for (int id : graph.inputs) context.add_input(id);
  for (const Node& node : graph.nodes) {
    try {
      lower_node(context, node);
    } catch (const LoweringRefused& refused) {
      throw InputError(node.label(), std::string("cannot lower to StableHLO: ") + refused.what());
    }
  }
  std::vector<HloValue> results;
  for (int id : graph.outputs) results.push_back(context.value(id));
  LoweredGraph lowered;
  lowered.module = builder.module(results);
  lowered.input_count = graph.inputs.size();
  lowered.constants = std::move(context.constants());
  return lowered;
}

std::string lowering_refusal(const Node& node, const Graph& graph) {
  std::string refusal = static_refusal(node, graph);
  if (!refusal.empty()) return refusal;
  // A rule may refuse particular attributes or inputs: lower the node alone, in a scratch
  // function whose inputs are parameters (text only, nothing is compiled).
  HloBuilder builder;
  LowerContext context(builder, graph, /*text_only=*/true);
  for (int id : node.inputs) {
    if (id >= 0 && !graph.values[static_cast<size_t>(id)].is_constant()) {
      context.add_input(id);
    }
  }
  try {
    lower_node(context, node);
  } catch (const LoweringRefused& refused) {
    return refused.what();
  }
  return "";
}

std::string compiled_refusal(const Node& node, const Graph& graph, bool tpu) {
  const auto refused = [&](const std::string& why) { return (tpu ? "TPU: " : "PJRT: ") + why; };
  if (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan") {
    return refused("control flow (" + node.op_type + ") does not compile to a static XLA program");
  }
  const OpSchema* schema = OpRegistry::instance().find(node.op_type);
  if (node.domain.empty() && schema && schema->data_dependent_shape) {
    return refused(node.op_type + "'s output shape depends on data");
  }
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[static_cast<size_t>(id)];
      if (tpu && value.type.dtype == DType::kFloat64) {
        return refused("float64 " + value.name + " (TPUs have no fp64)");
      }
    }
  }
  const std::string why = lowering_refusal(node, graph);
  return why.empty() ? "" : refused(why);
}

std::vector<std::string> lowered_op_types() {
  std::vector<std::string> types;
  for (const auto& [type, rule] : rules()) types.push_back(type);
  return types;
}

}  // namespace tandem::pjrt
