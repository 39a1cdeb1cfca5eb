#pragma once
// The backends this build of Tandem can run, as devices for a cluster.
#include <memory>
#include <string>
#include <vector>

#include "backends/device.h"
#include "devices/cluster.h"

namespace tandem::cli {

// One device per cluster device: CPU devices on their own consecutive cores of this machine
// (`cores` of the spec; 0 = all), PJRT devices on their plugin's addressable devices in the
// order they are declared. A device whose backend this build lacks (or `backend: none`), or
// that cannot start, is refused with InputError naming the device and the backend, before
// any work: nothing runs elsewhere in its place.
// With `progress`, compiled devices say on stderr what they compile as they start.
std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster, bool progress = false);

// What the compiled backends did so far, per PJRT plugin: programs compiled or found in the
// executable cache (in memory, on disk) and the time spent; how program inputs reached the
// device. Empty without compiled devices.
struct CompileStats {
  std::string plugin;
  std::string cache_directory;  // empty: memory only
  int compiles = 0, memory_hits = 0, disk_hits = 0;
  double compile_seconds = 0, load_seconds = 0;
  // Program inputs: uploaded from the host, copied device to device, found on the device.
  int uploaded = 0, device_to_device = 0, reused = 0;
};
std::vector<CompileStats> compile_stats(const std::vector<std::unique_ptr<Device>>& devices);

// What a PJRT plugin named by a cluster reports once loaded, and which cluster devices use it.
struct PluginProbe {
  std::string path;
  std::string api_version;                // "0.81"
  std::string platform;                   // "cpu", "tpu", "cuda"
  std::vector<std::string> device_kinds;  // one per addressable device, in order
  std::vector<std::string> cluster_devices;
};
// Loads every PJRT plugin the cluster's devices name; InputError when one cannot be loaded or
// this build has no PJRT backend.
std::vector<PluginProbe> probe_plugins(const Cluster& cluster);

// Lets the planner ask the PJRT backend which nodes it lowers (where the backend is built).
void install_backend_checks();

}  // namespace tandem::cli
