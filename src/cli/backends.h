#pragma once
// What the compiled backends of this build report: compile statistics, plugin probes.
#include <memory>
#include <string>
#include <vector>

#include "backends/device.h"
#include "devices/cluster.h"
#include "report/run_report.h"

namespace tandem::cli {

// What the compiled backends did so far, per PJRT plugin: programs compiled or found in the
// executable cache (in memory, on disk) and the time spent; how program inputs reached the
// device. Empty without compiled devices.
std::vector<ProgramStats> compile_stats(const std::vector<std::unique_ptr<Device>>& devices);

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

}  // namespace tandem::cli
