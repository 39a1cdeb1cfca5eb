#include "backends/cpu/kernel_registry.h"

namespace tandem::cpu {

void register_elementwise_kernels(KernelRegistry& registry) {}

}  // namespace tandem::cpu
