#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

enum class DeviceKind { kCpu, kGpu, kTpu };
// Which backend executes a device; kNone = simulate and plan only.
enum class BackendKind { kCpu, kCuda, kPjrt, kNone };
// Arithmetic precisions with separate peak figures.
enum class Precision { kFp64, kFp32, kTf32, kBf16, kFp16, kInt8 };
inline constexpr size_t kPrecisionCount = 6;

// A figure and where it came from: a preset's cited source, a calibration profile, or the
// cluster file itself. Unknown figures have value 0 and an empty source.
struct Figure {
  double value = 0;
  std::string source;
  std::string note;  // a caveat; "uncertain: ..." when the sources conflict or are weak
  bool known() const { return value > 0; }
  bool uncertain() const { return note.starts_with("uncertain"); }
};

// Published or measured performance figures of one kind of device.
struct DeviceFigures {
  // Peak dense operations per second, per precision, for the matrix units (tensor cores, MXU,
  // AMX) and for the vector units (CUDA cores, VPU, SIMD) separately.
  std::array<Figure, kPrecisionCount> matrix_flops;
  std::array<Figure, kPrecisionCount> vector_flops;
  Figure memory_bytes;      // capacity
  Figure memory_bandwidth;  // bytes per second
  Figure launch_overhead;   // seconds per op (kernel launch, XLA step share, dispatch)
  Figure step_overhead;     // seconds per launch of a compiled program (PJRT execute)
  // The multi-device runtime's own costs where this device takes part (measured by `tandem
  // calibrate` on a CPU; unknown: none):
  Figure run_overhead;     // seconds a plan's run costs beyond its segments' work
  Figure handoff_latency;  // seconds per hop of a tensor between its worker and host memory
  Figure price_per_hour;   // USD on demand, where published
  int matrix_tile = 1;     // MXU / tensor-core tile edge work is padded to (128, 256, 16...)
  std::string matrix_tile_source;
};

struct DeviceSpec {
  std::string id;  // unique in the cluster, e.g. "gpu0"; `count: N` expands to gpu0..gpuN-1
  DeviceKind kind = DeviceKind::kCpu;
  std::string preset;  // e.g. "nvidia-h100-sxm"; empty when figures are explicit
  std::string host;    // id of the host it sits in
  BackendKind backend = BackendKind::kNone;
  std::string plugin;   // PJRT plugin path, for kPjrt
  std::string profile;  // calibration profile path, when one is named
  int cores = 0;        // CPU devices: cores it may use (0 = all)
  DeviceFigures figures;
  int line = 0;  // where it was declared, for error messages
};

enum class LinkKind { kPcie, kNvlink, kIci, kNetwork, kHostMemory };

// A link between two endpoints: device ids, or host ids for host-to-host networks.
struct LinkSpec {
  std::string from, to;
  LinkKind kind = LinkKind::kPcie;
  std::string preset;
  Figure bandwidth_forward;   // bytes per second from -> to
  Figure bandwidth_backward;  // bytes per second to -> from
  Figure latency;             // seconds
  std::string profile;        // the link profile its figures come from (`tandem calibrate --mpi`)
  int line = 0;
  bool implicit = false;  // added for a device that names no link to its host
};

struct HostSpec {
  std::string id;
  int line = 0;
  // A network switch (`switch: true`): no devices, only network links; it forwards a transfer
  // without staging it, so a path through it pays each link's latency and the slowest link's
  // bandwidth once.
  bool is_switch = false;
  // The calibration profile of the host's CPU as one device, every core (`tandem calibrate`):
  // the figures of the whole-machine view (whole_machine_view) where the host's CPU devices name
  // profiles of their own.
  std::string profile;
};

struct Cluster {
  std::string file;  // the cluster file, or "" for a built-in one
  std::vector<HostSpec> hosts;
  std::vector<DeviceSpec> devices;
  std::vector<LinkSpec> links;

  int device_index(const std::string& id) const;  // -1 when unknown
  // The links a tensor crosses from device a to device b, in order, with the direction each
  // is crossed in (true = from -> to). Empty when a == b. Devices in different hosts go
  // device -> host -> network -> host -> device (through switches where the network has them).
  // Throws when there is no path. Each call searches the whole cluster: for many pairs, one
  // Router (devices/routing.h) answers every path from a device in one search.
  struct Hop {
    int link;
    bool forward;
  };
  std::vector<Hop> path(int from_device, int to_device) const;
};

// Reads and validates a cluster file (docs/CLUSTERS.md); InputError names file, line and field.
Cluster load_cluster(const std::string& path);
// A cluster file's hosts and devices, checked as load_cluster checks them, its links left unread
// (their link profiles may not exist yet): which hosts `tandem calibrate --mpi` measures.
Cluster load_cluster_hosts(const std::string& path);
// This machine's CPU as one device "cpu0" in host "local", backend cpu: figures from the generic
// CPU preset, or from a calibration profile when one is given.
Cluster local_cluster(const std::string& profile = "");

// A host's CPU devices share its cores and memory: a split across them is worth making only when
// it beats the machine as one device. The whole-machine view is the cluster with each such
// host's CPU devices (two or more CPU devices run on its cores: the CPU backend's, a PJRT CPU
// plugin's) replaced by one CPU-backend device `<host>.cpu` on all their cores (every core when
// one of them takes every core), figures from their preset at those cores, then from the host's
// `profile`. `cluster` is empty when no host shares its cores between CPU devices, or when a
// host that does cannot be merged (`why_not` says why: devices of different presets, links of
// their own, profiles without one for the host).
struct WholeMachineView {
  std::optional<Cluster> cluster;
  std::string why_not;
  std::vector<std::string> merged;  // "local.cpu (cpu0 + cpu1)" per merged host
};
WholeMachineView whole_machine_view(const Cluster& cluster);

// The cores a CPU device computes on: its `cores`, else every core of this machine (as the
// runtime pins it and the presets scale it).
int cores_used(const DeviceSpec& device);

// Whether `id` may name a host or device: letters, digits, '_', '-', '.'.
bool valid_cluster_id(std::string_view id);

std::string_view device_kind_name(DeviceKind kind);    // "cpu", "gpu", "tpu"
std::string_view backend_name(BackendKind backend);    // "cpu", "cuda", "pjrt", "none"
std::string_view link_kind_name(LinkKind kind);        // "pcie", "nvlink", "ici", ...
std::string_view precision_name(Precision precision);  // "fp64", "fp32", "tf32", ...

}  // namespace tandem
