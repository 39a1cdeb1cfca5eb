#include "cli/backends.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "ir/error.h"
#ifdef TANDEM_WITH_PJRT
#include "backends/pjrt/pjrt_device.h"
#endif

namespace tandem::cli {

std::vector<ProgramStats> compile_stats(const std::vector<std::unique_ptr<Device>>& devices) {
  std::vector<ProgramStats> stats;
#ifdef TANDEM_WITH_PJRT
  std::vector<const pjrt::PjrtSession*> seen;
  for (const auto& device : devices) {
    const auto* pjrt_device = dynamic_cast<const pjrt::PjrtDevice*>(device.get());
    if (!pjrt_device) continue;
    const pjrt::PjrtSession& session = pjrt_device->session();
    if (std::find(seen.begin(), seen.end(), &session) != seen.end()) continue;
    seen.push_back(&session);
    const pjrt::ExecutableCache::Stats cache = session.cache.stats();
    const pjrt::TransferCounts& moves = session.transfers;
    stats.push_back({.plugin = session.client.plugin().path(),
                     .cache_directory = session.cache.directory(),
                     .compiles = cache.compiles,
                     .disk_hits = cache.disk_hits,
                     .memory_hits = cache.memory_hits,
                     .compile_seconds = cache.compile_seconds,
                     .load_seconds = cache.load_seconds,
                     .uploaded = moves.uploaded,
                     .device_to_device = moves.device_to_device,
                     .on_device = moves.found_on_device()});
  }
#else
  (void)devices;
#endif
  return stats;
}

std::vector<PluginProbe> probe_plugins(const Cluster& cluster) {
  std::vector<PluginProbe> probes;
#ifdef TANDEM_WITH_PJRT
  for (const DeviceSpec& spec : cluster.devices) {
    if (spec.backend != BackendKind::kPjrt) continue;
    const std::string plugin = pjrt::plugin_path(spec.plugin, device_kind_name(spec.kind));
    auto probe = std::find_if(probes.begin(), probes.end(),
                              [&](const PluginProbe& known) { return known.path == plugin; });
    if (probe == probes.end()) {
      const auto session = pjrt::PjrtSession::open(plugin);
      PluginProbe fresh;
      fresh.path = plugin;
      fresh.api_version = std::to_string(session->client.plugin().api_major()) + "." +
                          std::to_string(session->client.plugin().api_minor());
      fresh.platform = session->client.platform_name();
      for (const pjrt::PjrtDeviceInfo& device : session->client.devices()) {
        if (device.addressable) fresh.device_kinds.push_back(device.kind);
      }
      probes.push_back(std::move(fresh));
      probe = probes.end() - 1;
    }
    probe->cluster_devices.push_back(spec.id);
  }
#else
  for (const DeviceSpec& spec : cluster.devices) {
    if (spec.backend == BackendKind::kPjrt) {
      throw InputError("--probe", "this build of Tandem has no PJRT backend to load " + spec.id +
                                      "'s plugin with (scripts/setup.sh)");
    }
  }
#endif
  return probes;
}

}  // namespace tandem::cli
