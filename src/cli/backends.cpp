#include "cli/backends.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "backends/cpu/cpu_device.h"
#include "devices/capabilities.h"
#include "ir/error.h"
#ifdef TANDEM_WITH_PJRT
#include "backends/pjrt/lower.h"
#include "backends/pjrt/pjrt_device.h"
#endif

namespace tandem::cli {
namespace {

// Why this build cannot run a device of this backend.
std::string missing_backend(BackendKind backend) {
  switch (backend) {
    case BackendKind::kNone:
      return "backend: none is for simulation only (tandem plan, tandem simulate); tandem run "
             "needs a backend for every device of the cluster";
    case BackendKind::kCuda:
      return "backend cuda is not in this build of Tandem (the CUDA backend is not written "
             "yet); run it with tandem plan and tandem simulate, or give the device another "
             "backend";
    case BackendKind::kPjrt:
      return "backend pjrt is not in this build of Tandem (built with -DTANDEM_PJRT=OFF, or "
             "without the xla-cpu-pjrt wheel that scripts/setup.sh installs)";
    case BackendKind::kCpu: break;
  }
  return "backend " + std::string(backend_name(backend)) + " is not in this build of Tandem";
}

}  // namespace

std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster, bool progress) {
  const std::vector<int> available = cpu::available_cores();
  std::vector<std::unique_ptr<Device>> devices;
  size_t next_core = 0;
  std::map<std::string, size_t> next_ordinal;  // per PJRT plugin
  for (const DeviceSpec& spec : cluster.devices) {
    if (spec.backend == BackendKind::kCpu) {
      std::vector<int> cores;
      const size_t count = spec.cores > 0 ? static_cast<size_t>(spec.cores) : available.size();
      for (size_t i = 0; i < count && !available.empty(); ++i) {
        cores.push_back(available[next_core++ % available.size()]);
      }
      devices.push_back(std::make_unique<cpu::CpuDevice>(spec.id, cores));
      continue;
    }
#ifdef TANDEM_WITH_PJRT
    if (spec.backend == BackendKind::kPjrt) {
      const std::string plugin = pjrt::plugin_path(spec.plugin, device_kind_name(spec.kind));
      std::shared_ptr<pjrt::PjrtSession> session;
      try {
        session = pjrt::PjrtSession::open(plugin);
      } catch (const std::exception& error) {
        throw InputError(cluster.file,
                         "device " + spec.id + " (backend pjrt) cannot start: " + error.what());
      }
      if (progress) {
        session->progress = [](const std::string& what) {
          std::fprintf(stderr, "%s\n", what.c_str());
        };
      }
      const size_t ordinal = next_ordinal[plugin]++;
      if (ordinal >= session->client.addressable_device_count()) {
        throw InputError(cluster.file,
                         "device " + spec.id + ": the PJRT plugin " + plugin + " has " +
                             std::to_string(session->client.addressable_device_count()) +
                             " devices, fewer than the cluster declares");
      }
      devices.push_back(std::make_unique<pjrt::PjrtDevice>(spec.id, session, ordinal));
      continue;
    }
#endif
    throw InputError(cluster.file, "device " + spec.id + ": " + missing_backend(spec.backend));
  }
  return devices;
}

std::vector<CompileStats> compile_stats(const std::vector<std::unique_ptr<Device>>& devices) {
  std::vector<CompileStats> stats;
#ifdef TANDEM_WITH_PJRT
  std::vector<const pjrt::PjrtSession*> seen;
  for (const auto& device : devices) {
    const auto* pjrt_device = dynamic_cast<const pjrt::PjrtDevice*>(device.get());
    if (!pjrt_device) continue;
    const pjrt::PjrtSession& session = pjrt_device->session();
    if (std::find(seen.begin(), seen.end(), &session) != seen.end()) continue;
    seen.push_back(&session);
    const pjrt::ExecutableCache::Stats cache = session.cache.stats();
    const pjrt::ResidentBuffers::Counts moves = session.resident.counts();
    stats.push_back({session.client.plugin().path(), session.cache.directory(), cache.compiles,
                     cache.memory_hits, cache.disk_hits, cache.compile_seconds, cache.load_seconds,
                     moves.uploaded, moves.device_to_device, moves.reused});
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

void install_backend_checks() {
#ifdef TANDEM_WITH_PJRT
  set_lowering_check(&pjrt::lowering_refusal);
#endif
}

}  // namespace tandem::cli
