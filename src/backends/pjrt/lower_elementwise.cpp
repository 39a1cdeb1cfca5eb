// Lowering rules: elementwise arithmetic, comparisons, logic, casts and activations.
#include <cmath>
#include <limits>

#include "backends/pjrt/lower_rules.h"

namespace tandem::pjrt {
namespace {

template <const char* kOp>
void lower_binary(LowerContext& context, const Node& node) {
  const DType dtype = context.output_type(node, 0).dtype;
  HloBuilder& b = context.builder();
  context.set_output(node, 0,
                     b.binary(kOp, broadcast_input(context, node, 0, dtype),
                              broadcast_input(context, node, 1, dtype)));
}

constexpr char kAdd[] = "add";

void lower_relu(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  context.set_output(node, 0, b.binary("maximum", x, b.splat(x.dtype, x.shape, 0)));
}

}  // namespace

HloValue apply_activation(HloBuilder& b, const HloValue& x, std::string_view activation,
                          float alpha, float beta) {
  const auto splat = [&](double value) { return b.splat(x.dtype, x.shape, value); };
  if (activation == "Relu") return b.binary("maximum", x, splat(0));
  if (activation == "LeakyRelu") {
    return b.select(b.compare("GE", x, splat(0)), x, b.binary("multiply", x, splat(alpha)));
  }
  if (activation == "Sigmoid") return b.unary("logistic", x);
  if (activation == "Tanh") return b.unary("tanh", x);
  if (activation == "HardSigmoid" || activation == "HardSwish") {
    // HardSwish is x * HardSigmoid(x) with alpha 1/6, beta 0.5.
    const bool swish = activation == "HardSwish";
    const HloValue linear = b.binary("add", b.binary("multiply", x, splat(swish ? 1.0 / 6 : alpha)),
                                     splat(swish ? 0.5 : beta));
    const HloValue gate = b.op("clamp", {splat(0), linear, splat(1)}, x.dtype, x.shape);
    return swish ? b.binary("multiply", x, gate) : gate;
  }
  if (activation == "Gelu") {
    // Exact Gelu: x/2 * (1 + erf(x/sqrt 2)); StableHLO has no erf, XLA takes CHLO's.
    const HloValue erf =
        b.unary("chlo.erf", b.binary("multiply", x, splat(0.7071067811865476)));
    return b.binary("multiply", b.binary("multiply", x, splat(0.5)),
                    b.binary("add", splat(1), erf));
  }
  if (activation == "Clip") {
    HloValue y = x;
    if (!std::isnan(alpha)) y = b.binary("maximum", y, splat(alpha));
    if (!std::isnan(beta)) y = b.binary("minimum", y, splat(beta));
    return y;
  }
  throw LoweringRefused("no lowering of the activation " + std::string(activation));
}

HloValue apply_fused_activation(HloBuilder& b, const Node& node, const HloValue& x) {
  if (!node.has("activation")) return x;
  const std::string activation = node.attr_string("activation", "");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float alpha_default = activation == "LeakyRelu" ? 0.01f : activation == "HardSigmoid" ? 0.2f : nan;
  const float beta_default = activation == "HardSigmoid" ? 0.5f : nan;
  return apply_activation(b, x, activation, node.attr_float("activation_alpha", alpha_default),
                          node.attr_float("activation_beta", beta_default));
}

void add_elementwise_rules(RuleTable& rules) {
  rules["Add"] = lower_binary<kAdd>;
  rules["Relu"] = lower_relu;
}

}  // namespace tandem::pjrt
