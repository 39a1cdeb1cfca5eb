#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "backends/device.h"

namespace tandem::cpu {

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelSpec&)>;
// The body of a kernel that keeps no state between runs.
using KernelFn = void (*)(const Node& node, std::span<const Tensor> inputs,
                          std::span<Tensor> outputs);

// CPU kernels by op type. Families register in the files named in kernel_families.h.
class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  const KernelFactory* find(std::string_view op_type) const;
  void add(std::string op_type, KernelFactory factory);
  // Registers a stateless kernel.
  void add(std::string op_type, KernelFn fn);

 private:
  std::map<std::string, KernelFactory, std::less<>> factories_;
};

void register_elementwise_kernels(KernelRegistry& registry);
void register_reduction_kernels(KernelRegistry& registry);
void register_linalg_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);

}  // namespace tandem::cpu
