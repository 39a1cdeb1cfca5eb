// `tandem devices`: a cluster's devices, their figures and the links between them.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/backends.h"
#include "cli/commands.h"
#include "devices/cluster.h"
#include "devices/cluster_json.h"
#include "report/json_schema.h"
#include "report/table.h"

namespace tandem::cli {
namespace {

// "989 TFLOP/s", "3.35 TB/s", "-" when unknown, a trailing "?" when the sources disagree.
std::string quantity(const Figure& figure, const char* unit) {
  if (!figure.known()) return "-";
  std::string text = si(figure.value);
  if (std::isdigit(static_cast<unsigned char>(text.back()))) text += " ";
  return text + unit + (figure.uncertain() ? "?" : "");
}

std::string seconds(const Figure& figure) {
  if (!figure.known()) return "-";
  const std::string text = figure.value < 1e-3 ? format("%.3g us", figure.value * 1e6)
                                               : format("%.3g ms", figure.value * 1e3);
  return text + (figure.uncertain() ? "?" : "");
}

std::string price(const Figure& figure) {
  if (!figure.known()) return "-";
  return format("$%.2f/h", figure.value) + (figure.uncertain() ? "?" : "");
}

std::string render_devices(const Cluster& cluster) {
  Table devices({"device", "kind", "host", "backend", "preset", "fp32 matrix", "bf16 matrix",
                 "memory", "bandwidth", "price"});
  for (const DeviceSpec& device : cluster.devices) {
    const DeviceFigures& figures = device.figures;
    devices.add_row({device.id, std::string(device_kind_name(device.kind)), device.host,
                     std::string(backend_name(device.backend)),
                     device.preset.empty() ? "(figures)" : device.preset,
                     quantity(figures.matrix_flops[static_cast<int>(Precision::kFp32)], "FLOP/s"),
                     quantity(figures.matrix_flops[static_cast<int>(Precision::kBf16)], "FLOP/s"),
                     quantity(figures.memory_bytes, "B"), quantity(figures.memory_bandwidth, "B/s"),
                     price(figures.price_per_hour)});
  }
  Table links({"from", "to", "kind", "preset", "bandwidth ->", "bandwidth <-", "latency"});
  for (const LinkSpec& link : cluster.links) {
    std::string preset = link.preset.empty() && !link.implicit ? "(figures)" : link.preset;
    if (link.implicit) preset += preset.empty() ? "(implicit)" : " (implicit)";
    if (!link.profile.empty()) {
      const std::string measured =
          "(measured: " + std::filesystem::path(link.profile).filename().string() + ")";
      preset = link.preset.empty() ? measured : link.preset + " " + measured;
    }
    links.add_row({link.from, link.to, std::string(link_kind_name(link.kind)), preset,
                   quantity(link.bandwidth_forward, "B/s"),
                   quantity(link.bandwidth_backward, "B/s"), seconds(link.latency)});
  }
  const std::string title = cluster.file.empty() ? "this machine" : cluster.file;
  return "cluster  " + title + "\n\n" + devices.render() + "\n" + links.render() +
         "\n? = the sources disagree or are weak; - = unknown. `--json` gives every figure's "
         "source.\n";
}

}  // namespace

int devices_command(const DevicesOptions& options) {
  const Cluster cluster = options.cluster.empty() ? local_cluster() : load_cluster(options.cluster);
  const std::vector<PluginProbe> probes =
      options.probe ? probe_plugins(cluster) : std::vector<PluginProbe>{};
  if (options.json) {
    nlohmann::json json = cluster_json(cluster);
    json["schema_version"] = kJsonSchemaVersion;
    if (options.probe) {
      json["plugins"] = nlohmann::json::array();
      for (const PluginProbe& probe : probes) {
        json["plugins"].push_back({{"path", probe.path},
                                   {"api_version", probe.api_version},
                                   {"platform", probe.platform},
                                   {"device_kinds", probe.device_kinds},
                                   {"cluster_devices", probe.cluster_devices}});
      }
    }
    std::printf("%s\n", json.dump(2).c_str());
    return kExitOk;
  }
  std::string text = render_devices(cluster);
  if (options.probe) {
    Table plugins({"plugin", "PJRT API", "platform", "its devices", "cluster devices"});
    for (const PluginProbe& probe : probes) {
      std::string kinds, ids;
      for (const std::string& kind : probe.device_kinds)
        kinds += (kinds.empty() ? "" : ", ") + kind;
      for (const std::string& id : probe.cluster_devices) ids += (ids.empty() ? "" : ", ") + id;
      plugins.add_row({probe.path, probe.api_version, probe.platform, kinds, ids});
    }
    text += probes.empty() ? "\nno device of the cluster runs on a PJRT plugin\n"
                           : "\n" + plugins.render();
  }
  std::printf("%s", text.c_str());
  return kExitOk;
}

}  // namespace tandem::cli
