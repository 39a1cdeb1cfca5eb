#include "backends/cpu/kernel_registry.h"

namespace tandem::cpu {

void register_linalg_kernels(KernelRegistry& registry) {}

}  // namespace tandem::cpu
