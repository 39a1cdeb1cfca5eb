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
  auto it = entries_.find(op_type);
  return it == entries_.end() ? nullptr : &it->second.factory;
}

namespace {

bool takes(Elements elements, DType dtype) {
  switch (elements) {
    case Elements::kAny: return true;
    case Elements::kFloat32: return dtype == DType::kFloat32;
    case Elements::kNumeric:
      return dtype != DType::kFloat16 && dtype != DType::kBFloat16 && dtype != DType::kInt16;
  }
  return false;
}

}  // namespace

std::string KernelRegistry::refusal(const Node& node, const Graph& graph) const {
  const auto it = node.domain.empty() ? entries_.find(node.op_type) : entries_.end();
  if (it == entries_.end()) return "no CPU kernel for " + node.op_type;
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[static_cast<size_t>(id)];
      if (value.type.dtype == DType::kUndefined || takes(it->second.elements, value.type.dtype))
        continue;
      return std::string(dtype_name(value.type.dtype)) + " " + value.name +
             ": the CPU kernel for " + node.op_type +
             (it->second.elements == Elements::kFloat32 ? " takes float32 only"
                                                        : " does not compute in it (Cast it)");
    }
  }
  return "";
}

ThreadSplit KernelRegistry::thread_split(const Node& node, const Graph& graph) const {
  const auto it = node.domain.empty() ? entries_.find(node.op_type) : entries_.end();
  if (it == entries_.end() || it->second.splits_from <= 0 || node.outputs.empty() ||
      node.outputs[0] < 0)
    return ThreadSplit::kUndeclared;
  const Shape& shape = graph.values[static_cast<size_t>(node.outputs[0])].type.shape;
  if (!is_static(shape)) return ThreadSplit::kUndeclared;
  return numel(shape) < it->second.splits_from ? ThreadSplit::kOneThread
                                               : ThreadSplit::kOutputRanges;
}

std::vector<ThreadSplit> thread_splits(const Graph& graph) {
  const KernelRegistry& registry = KernelRegistry::instance();
  std::vector<ThreadSplit> splits;
  splits.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) splits.push_back(registry.thread_split(node, graph));
  return splits;
}

void KernelRegistry::add(std::string op_type, KernelFactory factory, Elements elements,
                         int64_t splits_from) {
  if (!entries_.emplace(op_type, Entry{std::move(factory), elements, splits_from}).second) {
    throw std::logic_error("CPU kernel registered twice: " + op_type);
  }
}

void KernelRegistry::add(std::string op_type, KernelFn fn, Elements elements, int64_t splits_from) {
  add(
      std::move(op_type),
      [fn](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
        return std::make_unique<StatelessKernel>(spec.node, fn);
      },
      elements, splits_from);
}

}  // namespace tandem::cpu
