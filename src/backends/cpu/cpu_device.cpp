#include "backends/cpu/cpu_device.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "backends/cpu/conv_layout.h"
#include "backends/cpu/kernel_registry.h"
#include "ir/error.h"
#include "util/cpu_affinity.h"

namespace tandem::cpu {

std::string refusal(const Node& node, const Graph& graph) {
  return KernelRegistry::instance().refusal(node, graph);
}

std::vector<std::unique_ptr<Device>> make_devices(const Cluster&,
                                                  std::span<const DeviceSpec* const> specs, bool) {
  const std::vector<int> available = affinity_cores();
  std::vector<std::unique_ptr<Device>> devices;
  size_t next_core = 0;
  for (const DeviceSpec* spec : specs) {
    std::vector<int> cores;
    const size_t count = spec->cores > 0 ? static_cast<size_t>(spec->cores) : available.size();
    for (size_t i = 0; i < count && !available.empty(); ++i) {
      cores.push_back(available[next_core++ % available.size()]);
    }
    devices.push_back(std::make_unique<CpuDevice>(spec->id, cores));
  }
  return devices;
}

std::optional<Graph> CpuDevice::specialise(const Graph& graph) const {
  return with_channels_last_conv_chains(graph);
}

std::unique_ptr<Kernel> CpuDevice::compile(const KernelSpec& given) {
  const KernelFactory* factory = KernelRegistry::instance().find(given.node.op_type);
  if (!factory) throw InputError(given.node.label() + ": no CPU kernel for this op");
  KernelSpec spec = given;
  spec.precision = precision_;
  if (cores_.empty()) return (*factory)(spec);
  // oneDNN fixes a primitive's thread count when it is created: create it for this device's
  // cores, whichever thread compiles it (the multi-device runtime compiles on its caller's).
  struct ThreadsWhileCompiling {
    int previous = omp_get_max_threads();
    ~ThreadsWhileCompiling() { omp_set_num_threads(previous); }
  } restore;
  omp_set_num_threads(static_cast<int>(cores_.size()));
  return (*factory)(spec);
}

void CpuDevice::bind_current_thread() const {
  if (cores_.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores_) CPU_SET(core, &set);
  if (const int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
    throw std::runtime_error(name_ + ": cannot pin to its cores: " + std::strerror(error));
  omp_set_num_threads(static_cast<int>(cores_.size()));
}

void CpuDevice::bind_copy_thread() const {
  bind_current_thread();
  omp_set_num_threads(1);
}

void CpuDevice::release_waiting_thread() const { release_idle_threads(); }

int CpuDevice::busy_host_cores() const {
  return static_cast<int>(cores_.empty() ? affinity_cores().size() : cores_.size());
}

bool CpuDevice::runs_on_any_thread() const {
  std::vector<int> cores = cores_;
  std::sort(cores.begin(), cores.end());
  return (cores.empty() || cores == affinity_cores()) && cpu_threads() == busy_host_cores();
}

void set_cpu_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

int cpu_threads() { return omp_get_max_threads(); }

void release_idle_threads() {
  // OpenMP 5's pause frees the calling thread's pool (libgomp ends its threads); the next
  // parallel region here starts a new one.
  omp_pause_resource(omp_pause_soft, omp_get_initial_device());
}

TeamOnDistinctCores::TeamOnDistinctCores() : cores_(affinity_cores()) {
  if (cores_.size() < 2 || static_cast<size_t>(cpu_threads()) != cores_.size()) return;
  tried_ = true;
  pinned_ = place(true);
}

TeamOnDistinctCores::~TeamOnDistinctCores() {
  if (tried_) place(false);
}

// Whether every thread moved: one the kernel refuses to move stays where it was, and the team
// is measured as it runs.
bool TeamOnDistinctCores::place(bool each_its_own) {
  bool moved = true;
#pragma omp parallel reduction(&& : moved)
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (each_its_own) {
      CPU_SET(cores_[static_cast<size_t>(omp_get_thread_num()) % cores_.size()], &set);
    } else {
      for (int core : cores_) CPU_SET(core, &set);
    }
    moved = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
  }
  return moved;
}

}  // namespace tandem::cpu
