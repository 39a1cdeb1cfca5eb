#include "backends/cpu/kernel_registry.h"

#include <stdexcept>

namespace tandem::cpu {
namespace {

class StatelessKernel final : public Kernel {
 public:
  StatelessKernel(const Node& node, KernelFn fn) : node_(node), fn_(fn) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    fn_(node_, inputs, outputs);
  }

 private:
  const Node& node_;
  KernelFn fn_;
};

}  // namespace

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_elementwise_kernels(r);
    register_reduction_kernels(r);
    register_linalg_kernels(r);
    register_tensor_kernels(r);
    return r;
  }();
  return registry;
}

const KernelFactory* KernelRegistry::find(std::string_view op_type) const {
  auto it = factories_.find(op_type);
  return it == factories_.end() ? nullptr : &it->second;
}

void KernelRegistry::add(std::string op_type, KernelFactory factory) {
  if (!factories_.emplace(op_type, std::move(factory)).second) {
    throw std::logic_error("CPU kernel registered twice: " + op_type);
  }
}

void KernelRegistry::add(std::string op_type, KernelFn fn) {
  add(std::move(op_type), [fn](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    return std::make_unique<StatelessKernel>(spec.node, fn);
  });
}

}  // namespace tandem::cpu
