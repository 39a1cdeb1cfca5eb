// Lowering rules: reductions, Softmax, LogSoftmax, LayerNormalization.
#include "backends/pjrt/lower_rules.h"

namespace tandem::pjrt {

void add_reduction_rules(RuleTable& /*rules*/) {}

}  // namespace tandem::pjrt
