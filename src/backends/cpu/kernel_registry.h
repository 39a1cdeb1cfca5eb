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

// Which element types a kernel takes, over all of its inputs and outputs.
enum class Elements {
  kNumeric,  // float32, float64, the integer types but int16, bool (not float16/bfloat16,
             // which reach CPU kernels only through Cast)
  kAny,      // every type: the kernel moves elements by size or converts them
  kFloat32,  // float32 only (oneDNN's convolutions as this backend builds them)
};

// CPU kernels by op type, with the element types each takes. Families register in the
// register_*_kernels functions below.
class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  const KernelFactory* find(std::string_view op_type) const;
  // Why no kernel here runs `node` ("no CPU kernel for Scan", "float16 x: the CPU kernel
  // for Conv takes float32 only"); empty when one does.
  std::string refusal(const Node& node, const Graph& graph) const;
  void add(std::string op_type, KernelFactory factory, Elements elements = Elements::kNumeric);
  // Registers a stateless kernel.
  void add(std::string op_type, KernelFn fn, Elements elements = Elements::kNumeric);

 private:
  struct Entry {
    KernelFactory factory;
    Elements elements;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

void register_elementwise_kernels(KernelRegistry& registry);
void register_reduction_kernels(KernelRegistry& registry);
void register_linalg_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);

}  // namespace tandem::cpu
