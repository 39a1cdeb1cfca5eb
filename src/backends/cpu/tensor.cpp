#include "backends/cpu/tensor_kernels.h"

namespace tandem::cpu {

void register_tensor_kernels(KernelRegistry& registry) {
  register_layout_kernels(registry);
  register_creation_kernels(registry);
  register_pad_kernels(registry);
  register_resize_kernels(registry);
  register_index_kernels(registry);
  register_data_dependent_kernels(registry);
}

}  // namespace tandem::cpu
