#include "backends/registry.h"

#include <algorithm>

#include "backends/cpu/conv_layout.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/pjrt/lower.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#ifdef TANDEM_WITH_PJRT
#include "backends/pjrt/pjrt_device.h"
#endif
#ifdef TANDEM_WITH_CUDA
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_ops.h"
#endif

namespace tandem {
namespace {

std::string present() { return ""; }

std::string cpu_refusal(const DeviceSpec&, const Node& node, const Graph& graph) {
  return cpu::refusal(node, graph);
}

std::string pjrt_refusal(const DeviceSpec& device, const Node& node, const Graph& graph) {
  return pjrt::compiled_refusal(node, graph, device.kind == DeviceKind::kTpu);
}

std::string pjrt_missing() {
#ifdef TANDEM_WITH_PJRT
  return "";
#else
  return "backend pjrt is not in this build of Tandem (built with -DTANDEM_PJRT=OFF, or without "
         "the xla-cpu-pjrt wheel that scripts/setup.sh installs)";
#endif
}

std::string cuda_missing() {
#ifdef TANDEM_WITH_CUDA
  return "";
#else
  return "backend cuda is not in this build of Tandem (built with -DTANDEM_CUDA=OFF, or without "
         "the CUDA toolkit in /usr/local/cuda)";
#endif
}

#ifdef TANDEM_WITH_CUDA
std::string cuda_refusal(const DeviceSpec&, const Node& node, const Graph& graph) {
  const std::string why = cuda::refusal(node, graph);
  return why.empty() ? "" : "cuda: " + why;
}
#else
// Without the backend there are no kernels to ask: a cuda device is planned as a GPU with no
// backend would be, and make_devices refuses to run it.
std::string cuda_refusal(const DeviceSpec&, const Node&, const Graph&) { return ""; }
#endif

std::optional<LoweredProduct> pjrt_product(const DeviceSpec&, const Node& node,
                                           const Graph& graph) {
  const std::optional<pjrt::LoweredMatrixProduct> product = pjrt::lowered_product(node, graph);
  if (!product) return std::nullopt;
  return LoweredProduct{product->m, product->n, product->k, product->built_bytes};
}

std::string none_missing() {
  return "backend: none is for simulation only (tandem plan, tandem simulate); tandem run needs "
         "a backend for every device of the cluster";
}

std::string none_refusal(const DeviceSpec& device, const Node& node, const Graph& graph) {
  return device.kind == DeviceKind::kTpu ? pjrt_refusal(device, node, graph) : "";
}

std::optional<LoweredProduct> none_product(const DeviceSpec& device, const Node& node,
                                           const Graph& graph) {
  if (device.kind != DeviceKind::kTpu) return std::nullopt;
  return pjrt_product(device, node, graph);
}

// A CPU device keeps its own cores busy; an accelerator's worker waits on it awake, one core.
int own_cores(const DeviceSpec& device, int host_cores) {
  if (device.kind != DeviceKind::kCpu) return 1;
  return device.cores > 0 ? device.cores : host_cores;
}

// oneDNN's products pack their constant weights, each into a buffer of its own (a chain of 12
// products sharing one 256x256 weight ran as 12 distinct weights, 3 MiB, past a 2 MiB L2).
bool own_copies(const DeviceSpec&) { return true; }
// A device that only plans: as the CPU backend runs a CPU's graph, as PJRT an accelerator's.
bool none_copies(const DeviceSpec& device) { return device.kind == DeviceKind::kCpu; }

// The PJRT CPU plugin runs its programs on every core, whatever the cluster file says.
int pjrt_cores(const DeviceSpec& device, int host_cores) {
  return device.kind == DeviceKind::kCpu ? host_cores : 1;
}

const Backend kBackends[] = {
    {BackendKind::kCpu, "cpu", true, &present, &cpu_refusal, &cpu::make_devices, nullptr,
     &cpu::activation_layouts, &cpu::thread_splits, nullptr, &own_cores, &own_copies},
#ifdef TANDEM_WITH_PJRT
    {BackendKind::kPjrt, "pjrt", false, &pjrt_missing, &pjrt_refusal, &pjrt::make_devices,
     &pjrt::calibration_target, nullptr, nullptr, &pjrt_product, &pjrt_cores},
#else
    {BackendKind::kPjrt, "pjrt", false, &pjrt_missing, &pjrt_refusal, nullptr, nullptr, nullptr,
     nullptr, &pjrt_product, &pjrt_cores},
#endif
#ifdef TANDEM_WITH_CUDA
    {BackendKind::kCuda, "cuda", true, &cuda_missing, &cuda_refusal, &cuda::make_devices,
     &cuda::calibration_target, nullptr, nullptr, nullptr, &own_cores},
#else
    {BackendKind::kCuda, "cuda", true, &cuda_missing, &cuda_refusal, nullptr, nullptr, nullptr,
     nullptr, nullptr, &own_cores},
#endif
    // Planned as the CPU backend runs a graph (a CPU profile's curves are the CPU's), a TPU as
    // PJRT compiles it.
    {BackendKind::kNone, "none", false, &none_missing, &none_refusal, nullptr, nullptr,
     &cpu::activation_layouts, &cpu::thread_splits, &none_product, &own_cores, &none_copies},
};

// An eager backend runs views and control flow in the graph executor; a subgraph's nodes run
// on the same device, so each must be one the backend takes.
std::string eager_refusal(const Backend& backend, const DeviceSpec& device, const Node& node,
                          const Graph& graph, const OpSchema& schema) {
  if (schema.output_aliases_input) return "";
  if (node.op_type == "If" || node.op_type == "Loop") {
    for (const char* attr : {"then_branch", "else_branch", "body"}) {
      const std::shared_ptr<Graph> sub = node.attr_graph(attr);
      if (!sub) continue;
      for (const Node& inner : sub->nodes) {
        const std::string why = cannot_run_reason(device, inner, *sub);
        if (!why.empty()) return node.op_type + " " + attr + ": " + inner.label() + ": " + why;
      }
    }
    return "";
  }
  return backend.refusal(device, node, graph);
}

}  // namespace

std::span<const Backend> backends() { return kBackends; }

const Backend& backend_of(BackendKind kind) {
  for (const Backend& backend : kBackends) {
    if (backend.kind == kind) return backend;
  }
  throw std::logic_error("backend kind missing from the registry");
}

const Backend* find_backend(std::string_view name) {
  for (const Backend& backend : kBackends) {
    if (name == backend.name) return &backend;
  }
  return nullptr;
}

std::optional<LoweredProduct> lowered_product(const DeviceSpec& device, const Node& node,
                                              const Graph& graph) {
  const Backend& backend = backend_of(device.backend);
  return backend.lowered_product ? backend.lowered_product(device, node, graph) : std::nullopt;
}

std::string cannot_run_reason(const DeviceSpec& device, const Node& node, const Graph& graph) {
  const OpSchema* schema =
      node.domain.empty() ? OpRegistry::instance().find(node.op_type) : nullptr;
  if (!schema) return "no op " + node.op_type + (node.domain.empty() ? "" : " in " + node.domain);
  const Backend& backend = backend_of(device.backend);
  if (device.backend == BackendKind::kNone) return backend.refusal(device, node, graph);
  return backend.eager ? eager_refusal(backend, device, node, graph, *schema)
                       : backend.refusal(device, node, graph);
}

std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster, bool progress) {
  for (const DeviceSpec& spec : cluster.devices) {
    const Backend& backend = backend_of(spec.backend);
    if (const std::string why = backend.missing(); !why.empty() || !backend.make) {
      throw InputError(cluster.file, "device " + spec.id + ": " + why);
    }
  }
  std::vector<std::unique_ptr<Device>> devices(cluster.devices.size());
  for (const Backend& backend : kBackends) {
    std::vector<const DeviceSpec*> specs;
    std::vector<size_t> positions;
    for (size_t i = 0; i < cluster.devices.size(); ++i) {
      if (cluster.devices[i].backend != backend.kind) continue;
      specs.push_back(&cluster.devices[i]);
      positions.push_back(i);
    }
    if (specs.empty()) continue;
    std::vector<std::unique_ptr<Device>> made = backend.make(cluster, specs, progress);
    for (size_t k = 0; k < made.size(); ++k) devices[positions[k]] = std::move(made[k]);
  }
  return devices;
}

}  // namespace tandem
