#include "backends/cpu/cpu_device.h"

#include <omp.h>

#include "backends/cpu/kernel_registry.h"
#include "ir/error.h"

namespace tandem::cpu {

bool CpuDevice::supports(const Node& node) const {
  return node.domain.empty() && KernelRegistry::instance().find(node.op_type) != nullptr;
}

std::unique_ptr<Kernel> CpuDevice::compile(const KernelSpec& spec) {
  const KernelFactory* factory = KernelRegistry::instance().find(spec.node.op_type);
  if (!factory) throw InputError(spec.node.label() + ": no CPU kernel for this op");
  return (*factory)(spec);
}

void set_cpu_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

int cpu_threads() { return omp_get_max_threads(); }

}  // namespace tandem::cpu
