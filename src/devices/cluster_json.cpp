#include "devices/cluster_json.h"

#include <cmath>

namespace tandem {
namespace {

nlohmann::json precisions_json(const std::array<Figure, kPrecisionCount>& peaks) {
  nlohmann::json json = nlohmann::json::object();
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    if (peaks[p].known()) {
      json[std::string(precision_name(static_cast<Precision>(p)))] = figure_json(peaks[p]);
    }
  }
  return json;
}

nlohmann::json figures_json(const DeviceFigures& figures) {
  nlohmann::json tile = {{"value", figures.matrix_tile}};
  if (!figures.matrix_tile_source.empty()) tile["source"] = figures.matrix_tile_source;
  nlohmann::json memory = figure_json(figures.memory_bytes);
  if (!memory.is_null())
    memory["value"] = static_cast<int64_t>(std::llround(figures.memory_bytes.value));
  return {{"matrix_flops_per_s", precisions_json(figures.matrix_flops)},
          {"vector_flops_per_s", precisions_json(figures.vector_flops)},
          {"memory_bytes", memory},
          {"memory_bandwidth_bytes_per_s", figure_json(figures.memory_bandwidth)},
          {"launch_overhead_s", figure_json(figures.launch_overhead)},
          {"step_overhead_s", figure_json(figures.step_overhead)},
          {"run_overhead_s", figure_json(figures.run_overhead)},
          {"handoff_latency_s", figure_json(figures.handoff_latency)},
          {"price_usd_per_hour", figure_json(figures.price_per_hour)},
          {"matrix_tile", tile}};
}

}  // namespace

nlohmann::json figure_json(const Figure& figure) {
  if (!figure.known()) return nullptr;
  nlohmann::json json = {{"value", figure.value}, {"source", figure.source}};
  if (!figure.note.empty()) json["note"] = figure.note;
  return json;
}

nlohmann::json cluster_json(const Cluster& cluster) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const HostSpec& host : cluster.hosts) hosts.push_back(host.id);
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceSpec& device : cluster.devices) {
    nlohmann::json json = {{"id", device.id},         {"kind", device_kind_name(device.kind)},
                           {"host", device.host},     {"backend", backend_name(device.backend)},
                           {"preset", device.preset}, {"figures", figures_json(device.figures)}};
    if (!device.plugin.empty()) json["plugin"] = device.plugin;
    if (!device.profile.empty()) json["profile"] = device.profile;
    if (device.kind == DeviceKind::kCpu) json["cores"] = device.cores;
    devices.push_back(std::move(json));
  }
  nlohmann::json links = nlohmann::json::array();
  for (const LinkSpec& link : cluster.links) {
    nlohmann::json json = {{"from", link.from},
                           {"to", link.to},
                           {"kind", link_kind_name(link.kind)},
                           {"preset", link.preset},
                           {"implicit", link.implicit},
                           {"bandwidth_forward_bytes_per_s", figure_json(link.bandwidth_forward)},
                           {"bandwidth_backward_bytes_per_s", figure_json(link.bandwidth_backward)},
                           {"latency_s", figure_json(link.latency)}};
    if (!link.profile.empty()) json["profile"] = link.profile;
    links.push_back(std::move(json));
  }
  return {{"cluster", cluster.file.empty() ? "built-in: this machine" : cluster.file},
          {"hosts", hosts},
          {"devices", devices},
          {"links", links}};
}

}  // namespace tandem
