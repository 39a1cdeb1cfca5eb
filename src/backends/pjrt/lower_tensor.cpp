// Lowering rules: static data movement (Reshape, Transpose, Concat, Slice, Gather, ...).
#include "backends/pjrt/lower_rules.h"

namespace tandem::pjrt {
namespace {

void lower_reshape(LowerContext& context, const Node& node) {
  context.set_output(node, 0,
                     context.builder().reshape(context.input(node, 0),
                                               context.output_type(node, 0).shape));
}

}  // namespace

void add_tensor_rules(RuleTable& rules) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) rules[op] = lower_reshape;
}

}  // namespace tandem::pjrt
