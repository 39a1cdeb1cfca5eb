#include "backends/pjrt/lower.h"

#include <stdexcept>

#include "backends/pjrt/lower_rules.h"
#include "ir/error.h"

namespace tandem::pjrt {
namespace {

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
  rules().at(node.op_type)(context, node);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (context.has_output(node, i)) context.value(node.outputs[i]);  // every output bound
  }
}

}  // namespace

LowerContext::LowerContext(HloBuilder& builder, const Graph& graph)
    : builder_(builder), graph_(graph), values_(graph.values.size()) {}

bool LowerContext::has_input(const Node& node, size_t i) const {
  return i < node.inputs.size() && node.inputs[i] >= 0;
}

const TensorType& LowerContext::input_type(const Node& node, size_t i) const {
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
  return graph_.values[static_cast<size_t>(node.outputs.at(i))].type;
}

HloValue LowerContext::add_parameter(int id) {
  const TensorType& type = graph_.values[static_cast<size_t>(id)].type;
  HloValue value = builder_.parameter(type.dtype, type.shape);
  parameters_.push_back(id);
  bind(id, value);
  return value;
}

HloValue LowerContext::value(int id) {
  auto& slot = values_[static_cast<size_t>(id)];
  if (slot) return *slot;
  const Value& value = graph_.values[static_cast<size_t>(id)];
  if (!value.is_constant()) {
    throw std::logic_error("StableHLO lowering: " + value.name + " is used before it is made");
  }
  if (value.constant.numel() > kMaxInlinedElements) return add_parameter(id);
  slot = builder_.constant(value.constant);
  return *slot;
}

HloValue LowerContext::input(const Node& node, size_t i) {
  if (!has_input(node, i)) {
    throw LoweringRefused(node.op_type + " needs input " + std::to_string(i));
  }
  return value(node.inputs[i]);
}

void LowerContext::set_output(const Node& node, size_t i, const HloValue& value) {
  if (!has_output(node, i)) return;
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
  for (int id : graph.inputs) context.add_parameter(id);
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
  lowered.parameters = context.parameters();
  lowered.input_count = graph.inputs.size();
  return lowered;
}

std::string lowering_refusal(const Node& node, const Graph& graph) {
  std::string refusal = static_refusal(node, graph);
  if (!refusal.empty()) return refusal;
  // A rule may refuse particular attributes or inputs: lower the node alone, in a scratch
  // function whose inputs are parameters (text only, nothing is compiled).
  HloBuilder builder;
  LowerContext context(builder, graph);
  for (int id : node.inputs) {
    if (id >= 0 && !graph.values[static_cast<size_t>(id)].is_constant()) {
      context.add_parameter(id);
    }
  }
  try {
    lower_node(context, node);
  } catch (const LoweringRefused& refused) {
    return refused.what();
  }
  return "";
}

std::vector<std::string> lowered_op_types() {
  std::vector<std::string> types;
  for (const auto& [type, rule] : rules()) types.push_back(type);
  return types;
}

}  // namespace tandem::pjrt
