#pragma once
// Every backend Tandem knows, in one table. Each entry says whether this build has it, what a
// device of it can run, how its devices are made from a cluster and what calibrates one. The
// cost model and the planner ask `cannot_run_reason` and nothing else, so a plan never puts a
// node where its backend would refuse it; the runtime gets its devices from `make_devices`.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/device.h"
#include "backends/thread_split.h"
#include "devices/cluster.h"

namespace tandem {

// A device set up for `tandem calibrate`: what it is, and how to time the link to it.
struct CalibrationTarget {
  std::unique_ptr<Device> device;
  DeviceKind kind = DeviceKind::kCpu;
  std::string description;  // "pjrt cpu: cpu", "cuda: NVIDIA H200"
  double memory_bytes = 0;  // 0 when the backend cannot tell
  // Seconds to copy `bytes` to the device and back.
  std::function<double(size_t bytes)> round_trip;
};

// A matrix product a backend runs an op as, though the op is not one: [m, k] by [k, n], and the
// bytes of the operand it builds for it, written and read once.
struct LoweredProduct {
  int64_t m = 1, n = 1, k = 1;
  double built_bytes = 0;
};

struct Backend {
  BackendKind kind;
  const char* name;  // as cluster files and --backend spell it
  // Whether nodes run one by one through the runtime's graph executor (which runs views, If
  // and Loop itself) rather than as compiled programs.
  bool eager;
  // Why this build cannot run devices of the backend, or "" when it can.
  std::string (*missing)();
  // Why `device` cannot run `node` of `graph`, or "". Asked for ops with a schema only.
  std::string (*refusal)(const DeviceSpec& device, const Node& node, const Graph& graph);
  // One device per spec, in order; each spec is of this backend. Null when missing.
  std::vector<std::unique_ptr<Device>> (*make)(const Cluster& cluster,
                                               std::span<const DeviceSpec* const> specs,
                                               bool progress);
  // The first device of the backend for calibration (`plugin`: PJRT's --plugin); null where
  // the backend has no calibration of its own (the CPU's is calibrate_cpu).
  CalibrationTarget (*calibration)(const std::string& plugin);
  // The layout each node's kernel reads and writes activations in (node order), where the
  // backend chooses one; null where it keeps the ONNX layout throughout.
  std::vector<ActivationLayout> (*activation_layouts)(const Graph& graph);
  // How each node's kernel shares its work among a device's threads (node order), where the
  // backend declares it; null where it declares none.
  std::vector<ThreadSplit> (*thread_splits)(const Graph& graph);
  // The product `device` runs `node` as where its kernel is one though the op is not (PJRT's
  // EmbeddingBag), for the cost model to price; null, or nullopt for a node, where the op's own
  // cost says what runs.
  std::optional<LoweredProduct> (*lowered_product)(const DeviceSpec& device, const Node& node,
                                                   const Graph& graph);
  // How many of its host's `host_cores` a device's work keeps busy while it runs, as its
  // Device::busy_host_cores says when it runs: the planner prices a run's hand-offs by it.
  int (*busy_host_cores)(const DeviceSpec& device, int host_cores);
  // Whether each matrix product (MatMul, Gemm, Conv) on `device` keeps a copy of its constant
  // operands of its own (packed or reordered for its kernel), so that a weight several products
  // read is that many copies in a run's working set; null where they read the one constant.
  bool (*product_weight_copies)(const DeviceSpec& device) = nullptr;
};

std::span<const Backend> backends();
const Backend& backend_of(BackendKind kind);
// The backend called `name`, or null.
const Backend* find_backend(std::string_view name);

// Why `device` cannot run `node` of `graph` ("TPU: NonZero's output shape depends on data",
// "cuda: no CUDA kernel for Unique"); empty when it can. A device with `backend: none` is
// planned as its kind runs: TPUs as compiled PJRT devices, CPUs and GPUs every op with a schema.
std::string cannot_run_reason(const DeviceSpec& device, const Node& node, const Graph& graph);
inline bool can_run(const DeviceSpec& device, const Node& node, const Graph& graph) {
  return cannot_run_reason(device, node, graph).empty();
}

// The product `device`'s backend runs `node` as (Backend::lowered_product); nullopt where it
// runs the op's own work.
std::optional<LoweredProduct> lowered_product(const DeviceSpec& device, const Node& node,
                                              const Graph& graph);

// One device per cluster device, in the cluster's order. A device whose backend this build
// lacks (or `backend: none`), or that cannot start, is refused with InputError naming the
// device and the backend, before any work: nothing runs elsewhere in its place. With
// `progress`, compiled devices say on stderr what they compile.
std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster, bool progress = false);

}  // namespace tandem
