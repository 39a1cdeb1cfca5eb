#include "ir/op_schema.h"
#include "ir/ops/families.h"

namespace tandem {

void register_elementwise_ops(OpRegistry& registry) {}

}  // namespace tandem
