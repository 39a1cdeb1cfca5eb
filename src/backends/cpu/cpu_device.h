#pragma once
#include <span>
#include <vector>

#include "backends/device.h"
#include "devices/cluster.h"

namespace tandem::cpu {

// The host CPU as an eager device: runs every op in the CPU kernel registry. Several of them
// can share one CPU, each on its own cores (`cores`: CPU ids; empty = all of them). Its matrix
// products compute in `precision` where they can (MatrixPrecision); everything else in float32.
class CpuDevice final : public Device {
 public:
  explicit CpuDevice(std::string name = "cpu:0", std::vector<int> cores = {},
                     MatrixPrecision precision = MatrixPrecision::kFloat32)
      : name_(std::move(name)), cores_(std::move(cores)), precision_(precision) {}
  std::string name() const override { return name_; }
  const std::vector<int>& cores() const { return cores_; }
  // Pins the calling thread to the device's cores and gives its OpenMP regions (our kernels
  // and oneDNN's) one thread per core. OpenMP thread counts are per thread: call it first in
  // every thread that runs this device's kernels.
  void bind_current_thread() const override;
  // On the device's cores too, but copying with one thread: an OpenMP team of the copy worker
  // would stand beside the compute worker's (see release_idle_threads).
  void bind_copy_thread() const override;
  // Frees the waiting thread's idle OpenMP pool (release_idle_threads).
  void release_waiting_thread() const override;
  // Its cores; every core this process may run on where it is not pinned.
  int busy_host_cores() const override;
  // Pinned to no cores or to the calling thread's own, and that thread's OpenMP team is as many
  // threads as the device's cores, as a worker's would be.
  bool runs_on_any_thread() const override;
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override;
  // Keeps chains of convolutions channels-last (conv_layout.h).
  std::optional<Graph> specialise(const Graph& graph) const override;

 private:
  std::string name_;
  std::vector<int> cores_;
  MatrixPrecision precision_;
};

// "" where oneDNN runs matrix products in `precision` on this CPU's own instructions, else why
// not (bf16 without AVX512_BF16 or AMX is emulated, slower than fp32).
std::string precision_refusal(MatrixPrecision precision);

// Why no CPU kernel runs `node` (op, element type), or "" when one does.
std::string refusal(const Node& node, const Graph& graph);

// One device per spec, each on its own consecutive cores of this machine (`cores` of the spec;
// 0 = all of them, shared).
std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster,
                                                  std::span<const DeviceSpec* const> specs,
                                                  bool progress);

// Threads used by CPU kernels and oneDNN (OpenMP); 0 keeps the default.
void set_cpu_threads(int threads);
int cpu_threads();
// Lets the calling thread's idle OpenMP threads go. While libgomp manages more threads than
// there are cores it spins only briefly before sleeping, and each parallel region then pays a
// wake-up (ResNet at 64x64 runs 3.5x slower): a thread that hands its work to device workers
// must not keep a team of its own beside theirs.
void release_idle_threads();

// While it lives, each thread of the calling thread's OpenMP team keeps to a core of its own,
// where the team has one thread per core this process may use; their cores are restored after.
// Beside a process that spins on one core, the scheduler otherwise kept both threads of a
// 2-thread team on the other core for up to seconds at a time: each parallel region then waited
// for a time slice, and calibration's figures came out 100-1000x slow.
class TeamOnDistinctCores {
 public:
  TeamOnDistinctCores();
  ~TeamOnDistinctCores();
  TeamOnDistinctCores(const TeamOnDistinctCores&) = delete;
  TeamOnDistinctCores& operator=(const TeamOnDistinctCores&) = delete;
  // Whether the team has one thread per core, so that placing it was tried.
  bool tried() const { return tried_; }
  // Whether every thread of the team now keeps to a core of its own.
  bool pinned() const { return pinned_; }

 private:
  bool place(bool each_its_own);
  std::vector<int> cores_;
  bool tried_ = false;  // the destructor puts the team back
  bool pinned_ = false;
};

}  // namespace tandem::cpu
