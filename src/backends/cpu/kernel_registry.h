#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/device.h"
#include "backends/thread_split.h"

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
  // How the kernel registered for `node`'s op shares its work among the threads, by its
  // output's elements; kUndeclared where its registration did not say or the shape is not known.
  ThreadSplit thread_split(const Node& node, const Graph& graph) const;
  // `splits_from`: the output elements from which the kernel writes one contiguous range per
  // thread (reading its same-sized inputs in that order), below which it runs on one thread; 0
  // where it does not work that way (oneDNN's products split as oneDNN chooses).
  void add(std::string op_type, KernelFactory factory, Elements elements = Elements::kNumeric,
           int64_t splits_from = 0);
  // Registers a stateless kernel.
  void add(std::string op_type, KernelFn fn, Elements elements = Elements::kNumeric,
           int64_t splits_from = 0);

 private:
  struct Entry {
    KernelFactory factory;
    Elements elements;
    int64_t splits_from;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// Each node's ThreadSplit on this backend, in node order (Backend::thread_splits).
std::vector<ThreadSplit> thread_splits(const Graph& graph);

void register_elementwise_kernels(KernelRegistry& registry);
void register_reduction_kernels(KernelRegistry& registry);
void register_linalg_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);

}  // namespace tandem::cpu
