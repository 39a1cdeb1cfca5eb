// Lowering rules: elementwise arithmetic, comparisons, logic, casts and activations.
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

void add_elementwise_rules(RuleTable& rules) {
  rules["Add"] = lower_binary<kAdd>;
  rules["Relu"] = lower_relu;
}

}  // namespace tandem::pjrt
