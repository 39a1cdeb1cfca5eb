// Cluster files (docs/CLUSTERS.md): hosts, devices and links, validated with errors that name
// the file, the line and the field.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>
#include <variant>

#include "devices/cluster.h"
#include "devices/figures_yaml.h"
#include "devices/link_profile.h"
#include "devices/presets.h"
#include "devices/profile.h"
#include "devices/routing.h"
#include "ir/error.h"

namespace tandem {
namespace {

int hardware_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

// Measured figures replace preset ones where the profile has them.
void apply_profile(DeviceFigures& figures, const CalibrationProfile& profile,
                   const std::string& path) {
  auto take = [&](Figure& figure, const Figure& measured) {
    if (!measured.known()) return;
    figure = measured;
    figure.source = "calibration " + path + (measured.source.empty() ? "" : ": " + measured.source);
  };
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    take(figures.matrix_flops[p], profile.figures.matrix_flops[p]);
    take(figures.vector_flops[p], profile.figures.vector_flops[p]);
  }
  take(figures.memory_bytes, profile.figures.memory_bytes);
  take(figures.memory_bandwidth, profile.figures.memory_bandwidth);
  take(figures.launch_overhead, profile.figures.launch_overhead);
  take(figures.step_overhead, profile.figures.step_overhead);
  take(figures.run_overhead, profile.figures.run_overhead);
  take(figures.handoff_latency, profile.figures.handoff_latency);
  take(figures.price_per_hour, profile.figures.price_per_hour);
}

// A preset's figures for a device; CPU compute peaks scale with the cores it may use, and the
// preset's own calibration, where it has one, replaces what it measured.
DeviceFigures preset_figures(const DevicePreset& preset, int cores) {
  DeviceFigures figures = preset.figures;
  if (preset.compute_per_core) {
    const int used = cores > 0 ? cores : hardware_cores();  // cores_used's rule
    for (auto* peaks : {&figures.matrix_flops, &figures.vector_flops}) {
      for (Figure& peak : *peaks) {
        if (!peak.known()) continue;
        peak.value *= used;
        peak.source += "; x " + std::to_string(used) + " cores";
      }
    }
  }
  if (preset.profile) apply_profile(figures, *preset.profile, preset.profile_file);
  return figures;
}

LinkSpec link_from_preset(const LinkPreset& preset) {
  LinkSpec link;
  link.kind = preset.kind;
  link.preset = preset.name;
  link.bandwidth_forward = link.bandwidth_backward = preset.bandwidth;
  link.latency = preset.latency;
  return link;
}

// The link a device gets to its host when the cluster names none: its host-link preset
// (PCIe for GPUs and TPUs), or host memory at the device's memory bandwidth for CPUs. Returns
// an error message when neither is known.
std::string add_implicit_host_link(Cluster& cluster, const DeviceSpec& device,
                                   const std::string& host_link) {
  LinkSpec link;
  if (!host_link.empty()) {
    link = link_from_preset(*PresetLibrary::instance().find_link(host_link));
  } else if (device.kind == DeviceKind::kCpu && device.figures.memory_bandwidth.known()) {
    link.kind = LinkKind::kHostMemory;
    link.bandwidth_forward = device.figures.memory_bandwidth;
    link.bandwidth_forward.source =
        "the device's memory bandwidth (" + device.figures.memory_bandwidth.source + ")";
    link.bandwidth_backward = link.bandwidth_forward;
    // A tensor between two CPU devices' workers crosses two such links: each carries half the
    // measured hand-off (handoff_latency is per hop).
    link.latency = device.figures.handoff_latency;
  } else {
    return device.kind == DeviceKind::kCpu
               ? "no memory bandwidth known for its link to host memory: give "
                 "figures.memory_bandwidth, a preset or a link to its host"
               : "no link to its host: give 'host_link' (a link preset), a preset, or a link";
  }
  link.from = device.id;
  link.to = device.host;
  link.line = device.line;
  link.implicit = true;
  cluster.links.push_back(std::move(link));
  return "";
}

std::optional<BackendKind> parse_backend(std::string_view name) {
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "cuda") return BackendKind::kCuda;
  if (name == "pjrt") return BackendKind::kPjrt;
  if (name == "none") return BackendKind::kNone;
  return std::nullopt;
}

class ClusterReader {
 public:
  explicit ClusterReader(const YamlFile& file) : file_(file), presets_(PresetLibrary::instance()) {}

  // `links` false: the hosts and devices only (load_cluster_hosts).
  Cluster read(bool links = true) {
    const YAML::Node& root = file_.root();
    if (!root.IsDefined() || root.IsNull()) file_.fail_at(0, "", "the file is empty");
    file_.expect_map(root, "");
    file_.check_keys(root, "", {"hosts", "devices", "links"});
    cluster_.file = file_.path();
    read_hosts(root["hosts"]);
    read_devices(root["devices"]);
    if (!links) return std::move(cluster_);
    if (root["links"]) read_links(root["links"]);
    add_implicit_links();
    check_paths();
    return std::move(cluster_);
  }

 private:
  void claim_id(const std::string& id, const YAML::Node& node, const std::string& field) {
    if (!valid_cluster_id(id)) {
      file_.fail(node, field, "'" + id + "' is not an id (letters, digits, '_', '-', '.')");
    }
    const auto [existing, added] = ids_.emplace(id, YamlFile::line(node));
    if (!added) {
      file_.fail(
          node, field,
          "duplicate id '" + id + "' (first at line " + std::to_string(existing->second) + ")");
    }
  }

  void read_hosts(const YAML::Node& hosts) {
    if (!hosts) file_.fail(file_.root(), "hosts", "missing: list the hosts devices sit in");
    file_.expect_sequence(hosts, "hosts");
    for (size_t i = 0; i < hosts.size(); ++i) {
      const std::string field = "hosts[" + std::to_string(i) + "]";
      if (hosts[i].IsMap()) file_.check_keys(hosts[i], field, {"id", "switch", "profile"});
      const YAML::Node id_node = hosts[i].IsMap() ? hosts[i]["id"] : hosts[i];
      if (!id_node) file_.fail(hosts[i], field, "missing 'id'");
      HostSpec host;
      host.id = file_.scalar(id_node, field + ".id");
      host.line = YamlFile::line(id_node);
      if (hosts[i].IsMap() && hosts[i]["switch"]) {
        const std::string value = file_.scalar(hosts[i]["switch"], field + ".switch");
        if (value != "true" && value != "false")
          file_.fail(hosts[i]["switch"], field + ".switch", "expected true or false");
        host.is_switch = value == "true";
      }
      if (hosts[i].IsMap() && hosts[i]["profile"]) {
        const YAML::Node& node = hosts[i]["profile"];
        if (host.is_switch) file_.fail(node, field + ".profile", "a switch has no CPU to profile");
        host.profile = beside_file(file_.scalar(node, field + ".profile"));
        if (read_profile_of(node, field + ".profile", host.profile).kind != DeviceKind::kCpu)
          file_.fail(node, field + ".profile", "the profile measured no CPU");
      }
      claim_id(host.id, id_node, field + ".id");
      host_index_.emplace(host.id, cluster_.hosts.size());
      cluster_.hosts.push_back(host);
    }
  }

  const HostSpec* find_host(std::string_view id) const {
    const auto found = host_index_.find(std::string(id));
    return found == host_index_.end() ? nullptr : &cluster_.hosts[found->second];
  }

  int device_index(const std::string& id) const {
    const auto found = device_index_.find(id);
    return found == device_index_.end() ? -1 : found->second;
  }

  void read_devices(const YAML::Node& devices) {
    if (!devices) file_.fail(file_.root(), "devices", "missing: list at least one device");
    file_.expect_sequence(devices, "devices");
    if (devices.size() == 0) file_.fail(devices, "devices", "list at least one device");
    for (size_t i = 0; i < devices.size(); ++i) {
      read_device(devices[i], "devices[" + std::to_string(i) + "]");
    }
  }

  void read_device(const YAML::Node& node, const std::string& field) {
    file_.expect_map(node, field);
    file_.check_keys(node, field,
                     {"id", "kind", "preset", "count", "host", "backend", "plugin", "profile",
                      "cores", "figures", "host_link"});
    auto text = [&](const char* key) {
      return node[key] ? file_.scalar(node[key], field + "." + key) : std::string();
    };
    DeviceSpec device;
    device.line = YamlFile::line(node);
    if (!node["id"]) file_.fail(node, field, "missing 'id'");
    const std::string id = text("id");

    const DevicePreset* preset = nullptr;
    if (node["preset"]) {
      device.preset = text("preset");
      preset = presets_.find_device(device.preset);
      if (!preset) {
        file_.fail(
            node["preset"], field + ".preset",
            "unknown preset '" + device.preset + "' (known: " + presets_.device_names() + ")");
      }
      device.kind = preset->kind;
    }
    if (node["kind"]) {
      const auto kind = parse_device_kind(text("kind"));
      if (!kind) file_.fail(node["kind"], field + ".kind", "expected cpu, gpu or tpu");
      if (preset && *kind != preset->kind) {
        file_.fail(
            node["kind"], field + ".kind",
            "preset " + preset->name + " is a " + std::string(device_kind_name(preset->kind)));
      }
      device.kind = *kind;
    } else if (!preset) {
      file_.fail(node, field, "give 'kind' (cpu, gpu or tpu) or a 'preset'");
    }
    if (!preset && !node["figures"]) {
      file_.fail(node, field, "give a 'preset' or the device's 'figures'");
    }

    if (!node["host"]) file_.fail(node, field + ".host", "missing: every device sits in a host");
    device.host = text("host");
    if (!find_host(device.host)) {
      file_.fail(node["host"], field + ".host",
                 "unknown host '" + device.host + "' (hosts: " + host_names() + ")");
    }
    if (find_host(device.host)->is_switch) {
      file_.fail(node["host"], field + ".host",
                 "'" + device.host + "' is a switch: devices sit in hosts");
    }

    device.backend = device.kind == DeviceKind::kCpu ? BackendKind::kCpu : BackendKind::kNone;
    if (node["backend"]) {
      const auto backend = parse_backend(text("backend"));
      if (!backend) {
        file_.fail(node["backend"], field + ".backend", "expected cpu, cuda, pjrt or none");
      }
      device.backend = *backend;
    }
    const YAML::Node backend_node = node["backend"] ? node["backend"] : node;
    if (device.backend == BackendKind::kCpu && device.kind != DeviceKind::kCpu) {
      file_.fail(backend_node, field + ".backend", "the cpu backend runs CPU devices only");
    }
    if (device.backend == BackendKind::kCuda && device.kind != DeviceKind::kGpu) {
      file_.fail(backend_node, field + ".backend", "the cuda backend runs GPU devices only");
    }
    device.plugin = text("plugin");
    if (device.backend != BackendKind::kPjrt && !device.plugin.empty()) {
      file_.fail(node["plugin"], field + ".plugin", "only the pjrt backend takes a plugin");
    }
    // A relative plugin path is the cluster file's neighbour; a bare library name is left to
    // the dynamic loader; no plugin at all means $TANDEM_PJRT_PLUGIN when the device runs.
    if (device.plugin.find('/') != std::string::npos &&
        std::filesystem::path(device.plugin).is_relative()) {
      device.plugin =
          (std::filesystem::path(file_.path()).parent_path() / device.plugin).lexically_normal();
    }

    if (node["cores"]) {
      if (device.kind != DeviceKind::kCpu) {
        file_.fail(node["cores"], field + ".cores", "only CPU devices take 'cores'");
      }
      device.cores = file_.integer(node["cores"], field + ".cores", 1, 65536);
    }
    if (preset) device.figures = preset_figures(*preset, device.cores);
    if (node["profile"]) apply_profile_of(node["profile"], field + ".profile", device);
    if (node["figures"]) {
      file_.expect_map(node["figures"], field + ".figures");
      file_.check_keys(node["figures"], field + ".figures", device_figure_keys());
      read_device_figures(file_, node["figures"], field + ".figures", nullptr, device.figures);
    }

    std::string host_link = preset ? preset->host_link : "";
    if (node["host_link"]) {
      host_link = text("host_link");
      if (!presets_.find_link(host_link)) {
        file_.fail(
            node["host_link"], field + ".host_link",
            "unknown link preset '" + host_link + "' (known: " + presets_.link_names() + ")");
      }
    }

    int count = 1;
    if (node["count"]) count = file_.integer(node["count"], field + ".count", 1, 100000);
    for (int n = 0; n < count; ++n) {
      DeviceSpec copy = device;
      copy.id = node["count"] ? id + std::to_string(n) : id;
      claim_id(copy.id, node["id"], field + ".id");
      device_index_.emplace(copy.id, static_cast<int>(cluster_.devices.size()));
      cluster_.devices.push_back(std::move(copy));
      host_links_.push_back(host_link);
      device_fields_.push_back(field);
    }
  }

  // A path the file names: relative to the file's folder unless absolute.
  std::string beside_file(const std::string& named) const {
    if (std::filesystem::path(named).is_absolute()) return named;
    return (std::filesystem::path(file_.path()).parent_path() / named).string();
  }

  CalibrationProfile read_profile_of(const YAML::Node& node, const std::string& field,
                                     const std::string& path) const {
    try {
      return read_profile(path);
    } catch (const InputError& e) {
      file_.fail(node, field, e.subject() + ": " + e.what());
    }
  }

  void apply_profile_of(const YAML::Node& node, const std::string& field, DeviceSpec& device) {
    device.profile = beside_file(file_.scalar(node, field));
    const CalibrationProfile profile = read_profile_of(node, field, device.profile);
    if (profile.kind != device.kind) {
      file_.fail(node, field,
                 "the profile measured a " + std::string(device_kind_name(profile.kind)) +
                     ", not a " + std::string(device_kind_name(device.kind)));
    }
    apply_profile(device.figures, profile, device.profile);
  }

  std::string host_names() const {
    std::string names;
    for (const HostSpec& host : cluster_.hosts) names += (names.empty() ? "" : ", ") + host.id;
    return names;
  }

  // What an endpoint id names: a device index, or -1 - host index; nullopt when unknown.
  std::optional<int> endpoint(const std::string& id) const {
    const int device = device_index(id);
    if (device >= 0) return device;
    const auto host = host_index_.find(id);
    if (host != host_index_.end()) return -1 - static_cast<int>(host->second);
    return std::nullopt;
  }

  void read_links(const YAML::Node& links) {
    file_.expect_sequence(links, "links");
    for (size_t i = 0; i < links.size(); ++i) {
      const YAML::Node& node = links[i];
      const std::string field = "links[" + std::to_string(i) + "]";
      file_.expect_map(node, field);
      file_.check_keys(node, field,
                       {"from", "to", "between", "preset", "kind", "bandwidth", "bandwidth_forward",
                        "bandwidth_backward", "latency", "profile"});
      const LinkEntry entry = read_link(node, field);
      if (node["between"]) {
        const YAML::Node& ids = node["between"];
        if (node["from"] || node["to"]) {
          file_.fail(node, field, "give either 'from' and 'to', or 'between'");
        }
        file_.expect_sequence(ids, field + ".between");
        if (ids.size() < 2) file_.fail(ids, field + ".between", "list two ids or more");
        for (size_t a = 0; a < ids.size(); ++a) {
          for (size_t b = a + 1; b < ids.size(); ++b) {
            add_link(entry, ids[a], ids[b], field + ".between");
          }
        }
      } else {
        if (!node["from"] || !node["to"]) {
          file_.fail(node, field, "give 'from' and 'to' (or 'between')");
        }
        add_link(entry, node["from"], node["to"], field);
      }
    }
  }

  // A link entry as written: add_link makes the link of each pair of endpoints it joins, its
  // figures from the preset, then the link profile's measurement of that pair, then the file's
  // own figures.
  struct LinkEntry {
    LinkSpec link;            // the preset's kind and figures
    bool kind_given = false;  // the file gave a kind (a preset counts)
    std::optional<Figure> bandwidth_forward, bandwidth_backward, latency;  // the file's own
    std::optional<LinkProfile> profile;
    std::string profile_path;
    YAML::Node node;  // the entry, for errors
    std::string field;
  };

  LinkEntry read_link(const YAML::Node& node, const std::string& field) {
    LinkEntry entry;
    entry.node = node;
    entry.field = field;
    if (node["profile"]) {
      entry.profile_path = beside_file(file_.scalar(node["profile"], field + ".profile"));
      try {
        entry.profile = read_link_profile(entry.profile_path);
      } catch (const InputError& e) {
        file_.fail(node["profile"], field + ".profile", e.subject() + ": " + e.what());
      }
    }
    LinkSpec& link = entry.link;
    link.line = YamlFile::line(node);
    bool kind_known = false;
    if (node["preset"]) {
      const std::string name = file_.scalar(node["preset"], field + ".preset");
      const LinkPreset* preset = presets_.find_link(name);
      if (!preset) {
        file_.fail(node["preset"], field + ".preset",
                   "unknown link preset '" + name + "' (known: " + presets_.link_names() + ")");
      }
      link = link_from_preset(*preset);
      link.line = YamlFile::line(node);
      kind_known = true;
    }
    entry.kind_given = kind_known;
    if (node["kind"]) {
      const auto kind = parse_link_kind(file_.scalar(node["kind"], field + ".kind"));
      if (!kind) {
        file_.fail(node["kind"], field + ".kind",
                   "expected pcie, nvlink, ici, network or host-memory");
      }
      if (kind_known && *kind != link.kind) {
        file_.fail(
            node["kind"], field + ".kind",
            "preset " + link.preset + " is a " + std::string(link_kind_name(link.kind)) + " link");
      }
      link.kind = *kind;
      entry.kind_given = true;
    }
    if (node["bandwidth"]) {
      if (node["bandwidth_forward"] || node["bandwidth_backward"]) {
        file_.fail(node, field, "give 'bandwidth' (both ways) or the directional ones, not both");
      }
      entry.bandwidth_forward = read_figure(file_, node["bandwidth"], field + ".bandwidth",
                                            Quantity::kBandwidth, nullptr);
      entry.bandwidth_backward = entry.bandwidth_forward;
    }
    if (node["bandwidth_forward"]) {
      entry.bandwidth_forward =
          read_figure(file_, node["bandwidth_forward"], field + ".bandwidth_forward",
                      Quantity::kBandwidth, nullptr);
    }
    if (node["bandwidth_backward"]) {
      entry.bandwidth_backward =
          read_figure(file_, node["bandwidth_backward"], field + ".bandwidth_backward",
                      Quantity::kBandwidth, nullptr);
    }
    const bool both_ways = (link.bandwidth_forward.known() || entry.bandwidth_forward) &&
                           (link.bandwidth_backward.known() || entry.bandwidth_backward);
    if (!both_ways && !entry.profile) {
      file_.fail(node, field, "give a 'preset', a 'profile' or the 'bandwidth' each way");
    }
    if (node["latency"]) {
      entry.latency =
          read_figure(file_, node["latency"], field + ".latency", Quantity::kSeconds, nullptr);
    }
    return entry;
  }

  // The measured latency and bandwidth each way of the hosts `link` joins, from its entry's
  // link profile.
  void apply_link_profile(const LinkEntry& entry, LinkSpec& link, const DeviceSpec* device) const {
    const YAML::Node where = entry.node["profile"];
    const std::string field = entry.field + ".profile";
    if (device) {
      file_.fail(where, field,
                 "a link profile measures the network between hosts (one MPI rank each): " +
                     device->id + " is a device, link two hosts with it");
    }
    bool reversed = false;
    const LinkProfile::Pair* pair = entry.profile->find(link.from, link.to, reversed);
    if (!pair) {
      std::string measured;
      for (const LinkProfile::Pair& each : entry.profile->pairs) {
        measured += (measured.empty() ? "" : ", ") + each.from + "-" + each.to;
      }
      file_.fail(where, field,
                 entry.profile_path + " has no measurement between " + link.from + " and " +
                     link.to + " (it measured " + measured +
                     "): calibrate with `mpirun -np N tandem calibrate --mpi --cluster " +
                     file_.path() + "`, one rank per host, so that it names these hosts");
    }
    const std::string calibration = "calibration " + entry.profile_path + ": ";
    std::string ranks;
    if (pair->from_rank >= 0 && pair->to_rank >= 0) {
      ranks =
          ", ranks " + std::to_string(pair->from_rank) + " and " + std::to_string(pair->to_rank);
    }
    const std::string how = "one-way, half the median MPI round trip of the smallest message";
    link.latency = {pair->latency_seconds, calibration + how + ranks, ""};
    auto bandwidth = [&](double value, const std::string& from, const std::string& to) {
      std::string how = calibration + from + " -> " + to + ", MPI messages";
      if (pair->fit_bytes > 0) how += " of " + human_bytes(pair->fit_bytes) + " and more";
      how += " fitted as latency + bytes / bandwidth";
      if (pair->model_error > 0) {
        char within[64];
        std::snprintf(within, sizeof within, " (within %.0f%% of every size measured)",
                      pair->model_error * 100);
        how += within;
      }
      return Figure{value, how + ranks, ""};
    };
    link.bandwidth_forward = reversed ? bandwidth(pair->bandwidth_backward, link.from, link.to)
                                      : bandwidth(pair->bandwidth_forward, link.from, link.to);
    link.bandwidth_backward = reversed ? bandwidth(pair->bandwidth_forward, link.to, link.from)
                                       : bandwidth(pair->bandwidth_backward, link.to, link.from);
    link.profile = entry.profile_path;
  }

  void add_link(const LinkEntry& entry, const YAML::Node& from_node, const YAML::Node& to_node,
                const std::string& field) {
    LinkSpec link = entry.link;
    const bool kind_given = entry.kind_given;
    link.from = file_.scalar(from_node, field + ".from");
    link.to = file_.scalar(to_node, field + ".to");
    const auto from = endpoint(link.from);
    if (!from) file_.fail(from_node, field, "unknown device or host '" + link.from + "'");
    const auto to = endpoint(link.to);
    if (!to) file_.fail(to_node, field, "unknown device or host '" + link.to + "'");
    if (*from == *to) file_.fail(to_node, field, "a link joins two different endpoints");
    const auto pair = std::minmax(link.from, link.to);
    const auto [existing, added] = linked_pairs_.emplace(pair, link.line);
    if (!added) {
      file_.fail(to_node, field,
                 "a second link between " + link.from + " and " + link.to + " (first at line " +
                     std::to_string(existing->second) + ")");
    }

    const DeviceSpec* from_device = *from >= 0 ? &cluster_.devices[*from] : nullptr;
    const DeviceSpec* to_device = *to >= 0 ? &cluster_.devices[*to] : nullptr;
    // A device's link to a host is its link to its own host.
    for (auto [device, host] : {std::pair{from_device, link.to}, std::pair{to_device, link.from}}) {
      if (device && !(from_device && to_device) && device->host != host) {
        file_.fail(to_node, field,
                   device->id + " sits in host " + device->host + ", not in " + host);
      }
    }
    if (entry.profile) apply_link_profile(entry, link, from_device ? from_device : to_device);
    if (entry.bandwidth_forward) link.bandwidth_forward = *entry.bandwidth_forward;
    if (entry.bandwidth_backward) link.bandwidth_backward = *entry.bandwidth_backward;
    if (entry.latency) link.latency = *entry.latency;
    if (!kind_given) {
      if (!from_device && !to_device) {
        link.kind = LinkKind::kNetwork;
      } else if (from_device && to_device) {
        file_.fail(to_node, field, "give the 'kind' of a link between two devices");
      } else {
        const DeviceSpec* device = from_device ? from_device : to_device;
        link.kind = device->kind == DeviceKind::kCpu ? LinkKind::kHostMemory : LinkKind::kPcie;
      }
    }
    check_link_kind(link, from_device, to_device, to_node, field);
    cluster_.links.push_back(std::move(link));
  }

  void check_link_kind(const LinkSpec& link, const DeviceSpec* from, const DeviceSpec* to,
                       const YAML::Node& node, const std::string& field) const {
    const bool hosts = !from && !to;
    const bool devices = from && to;
    auto both = [&](DeviceKind kind) { return devices && from->kind == kind && to->kind == kind; };
    std::string problem;
    switch (link.kind) {
      case LinkKind::kNetwork:
        if (!hosts) problem = "a network link joins two hosts";
        break;
      case LinkKind::kNvlink:
        if (!both(DeviceKind::kGpu)) problem = "an nvlink link joins two GPUs";
        break;
      case LinkKind::kIci:
        if (!both(DeviceKind::kTpu)) problem = "an ici link joins two TPUs";
        break;
      case LinkKind::kPcie:
        if (hosts) problem = "a pcie link joins a device to its host or to another device";
        break;
      case LinkKind::kHostMemory:
        if (devices || hosts || (from ? from : to)->kind != DeviceKind::kCpu) {
          problem = "a host-memory link joins a CPU device to its host";
        }
        break;
    }
    if (!problem.empty()) file_.fail(node, field, problem);
  }

  void add_implicit_links() {
    std::set<std::string> linked_to_host;
    for (const LinkSpec& link : cluster_.links) {
      const int from = device_index(link.from), to = device_index(link.to);
      if (from >= 0 && to < 0) linked_to_host.insert(link.from);
      if (to >= 0 && from < 0) linked_to_host.insert(link.to);
    }
    const size_t devices = cluster_.devices.size();
    for (size_t d = 0; d < devices; ++d) {
      const DeviceSpec device = cluster_.devices[d];
      if (linked_to_host.count(device.id)) continue;
      const std::string problem = add_implicit_host_link(cluster_, device, host_links_[d]);
      if (!problem.empty()) file_.fail_at(device.line, device_fields_[d], problem);
    }
  }

  void check_paths() const {
    const auto [from, to] = first_unconnected_pair(cluster_);
    if (from < 0) return;
    const DeviceSpec& a = cluster_.devices[from];
    const DeviceSpec& b = cluster_.devices[to];
    file_.fail_at(b.line, "links",
                  "no path between " + a.id + " (host " + a.host + ") and " + b.id + " (host " +
                      b.host + "): add a network link between their hosts");
  }

  const YamlFile& file_;
  const PresetLibrary& presets_;
  Cluster cluster_;
  std::map<std::string, int, std::less<>> ids_;         // id -> line
  std::unordered_map<std::string, size_t> host_index_;  // id -> index in cluster_.hosts
  std::unordered_map<std::string, int> device_index_;   // id -> index in cluster_.devices
  std::map<std::pair<std::string, std::string>, int> linked_pairs_;
  std::vector<std::string> host_links_;     // per device: its host-link preset, if any
  std::vector<std::string> device_fields_;  // per device: "devices[i]"
};

}  // namespace

Cluster load_cluster(const std::string& path) {
  const YamlFile file(path);
  try {
    return ClusterReader(file).read();
  } catch (const YAML::Exception& e) {
    // A shape of YAML the reader did not expect: still the file's fault, never a crash.
    file.fail_at(e.mark.is_null() ? 0 : e.mark.line + 1, "", e.msg);
  }
}

Cluster load_cluster_hosts(const std::string& path) {
  const YamlFile file(path);
  try {
    return ClusterReader(file).read(false);
  } catch (const YAML::Exception& e) {
    file.fail_at(e.mark.is_null() ? 0 : e.mark.line + 1, "", e.msg);
  }
}

Cluster local_cluster(const std::string& profile_path) {
  const PresetLibrary& presets = PresetLibrary::instance();
  const char* preset_name = "cpu-generic-avx2";
  const DevicePreset* preset = presets.find_device(preset_name);
  if (!preset) {
    throw InputError(presets_directory(), std::string("no preset ") + preset_name);
  }
  Cluster cluster;
  cluster.hosts.push_back({"local", 0});
  DeviceSpec cpu;
  cpu.id = "cpu0";
  cpu.kind = DeviceKind::kCpu;
  cpu.preset = preset_name;
  cpu.host = "local";
  cpu.backend = BackendKind::kCpu;
  cpu.figures = preset_figures(*preset, 0);
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_bytes > 0) {
    cpu.figures.memory_bytes = {static_cast<double>(pages) * static_cast<double>(page_bytes),
                                "this machine's physical memory (sysconf)", ""};
  }
  if (!profile_path.empty()) {
    const CalibrationProfile profile = read_profile(profile_path);
    if (profile.kind != DeviceKind::kCpu) {
      throw InputError(profile_path, "the profile measured a " +
                                         std::string(device_kind_name(profile.kind)) +
                                         ", not this machine's CPU");
    }
    apply_profile(cpu.figures, profile, profile_path);
    cpu.profile = profile_path;
  }
  cluster.devices.push_back(cpu);
  const std::string problem = add_implicit_host_link(cluster, cluster.devices.back(), "");
  if (!problem.empty()) throw InputError(presets_directory(), preset_name + (": " + problem));
  return cluster;
}

namespace {

// A device that computes on its host's CPU cores: the CPU backend's, or a PJRT CPU plugin's.
bool runs_on_host_cores(const DeviceSpec& device) {
  return device.kind == DeviceKind::kCpu &&
         (device.backend == BackendKind::kCpu || device.backend == BackendKind::kPjrt);
}

// The host's CPU devices as one, or why they cannot be: `members` are their indices, one of them
// at least on the CPU backend (whole_machine_view merges no host without one).
std::variant<DeviceSpec, std::string> merged_cpu(const Cluster& cluster, const HostSpec& host,
                                                 const std::vector<int>& members) {
  DeviceSpec whole;
  whole.id = host.id + ".cpu";
  whole.kind = DeviceKind::kCpu;
  whole.host = host.id;
  whole.backend = BackendKind::kCpu;
  whole.line = host.line;
  if (cluster.device_index(whole.id) >= 0) return "a device is already named " + whole.id;
  bool every_core = false, profiled = false;
  // The whole is the CPU backend on every core: its figures are its CPU backend devices' (a
  // PJRT plugin's preset prices XLA's programs, not the CPU backend's kernels).
  const auto cpu_backend = std::find_if(members.begin(), members.end(), [&](int d) {
    return cluster.devices[d].backend == BackendKind::kCpu;
  });
  const std::string& cpu_preset = cluster.devices[*cpu_backend].preset;
  for (int d : members) {
    const DeviceSpec& device = cluster.devices[d];
    every_core |= device.cores == 0;
    whole.cores += device.cores;
    profiled |= !device.profile.empty();
    if (device.backend == BackendKind::kCpu && device.preset != cpu_preset)
      return "its CPU devices name different presets (" + cpu_preset + ", " + device.preset + ")";
    for (const LinkSpec& link : cluster.links) {
      if (!link.implicit && (link.from == device.id || link.to == device.id))
        return device.id + " has links of its own";
    }
  }
  if (every_core) whole.cores = 0;
  whole.preset = cpu_preset;
  const DevicePreset* preset =
      whole.preset.empty() ? nullptr : PresetLibrary::instance().find_device(whole.preset);
  if (!preset && host.profile.empty())
    return "its CPU devices name no preset and the host no profile";
  // A split calibrated on this machine against a whole machine priced by a preset would favour
  // the guess: measured figures on both sides, or on neither.
  if (profiled && host.profile.empty())
    return "its CPU devices name profiles and the host none for its CPU as one device (hosts: "
           "[{id: " +
           host.id + ", profile: FILE}], FILE from `tandem calibrate`)";
  if (preset) whole.figures = preset_figures(*preset, whole.cores);
  if (!host.profile.empty()) {
    apply_profile(whole.figures, read_profile(host.profile), host.profile);
    whole.profile = host.profile;
  }
  return whole;
}

}  // namespace

int cores_used(const DeviceSpec& device) {
  return device.cores > 0 ? device.cores : hardware_cores();
}

WholeMachineView whole_machine_view(const Cluster& cluster) {
  WholeMachineView view;
  Cluster merged = cluster;
  merged.devices.clear();
  std::set<std::string> gone;  // members' ids
  std::vector<DeviceSpec> wholes;
  for (const HostSpec& host : cluster.hosts) {
    std::vector<int> members;
    for (size_t d = 0; d < cluster.devices.size(); ++d) {
      const DeviceSpec& device = cluster.devices[d];
      if (device.host == host.id && runs_on_host_cores(device))
        members.push_back(static_cast<int>(d));
    }
    if (members.size() < 2) continue;
    const bool cpu_backend = std::any_of(members.begin(), members.end(), [&](int d) {
      return cluster.devices[d].backend == BackendKind::kCpu;
    });
    if (!cpu_backend) continue;  // PJRT CPU devices alone: each already plans on every core
    auto whole = merged_cpu(cluster, host, members);
    if (auto* why = std::get_if<std::string>(&whole)) {
      view.why_not += (view.why_not.empty() ? "host " : "; host ") + host.id + ": " + *why;
      continue;
    }
    std::string names;
    for (int d : members) {
      gone.insert(cluster.devices[d].id);
      names += (names.empty() ? "" : " + ") + cluster.devices[d].id;
    }
    view.merged.push_back(std::get<DeviceSpec>(whole).id + " (" + names + ")");
    wholes.push_back(std::move(std::get<DeviceSpec>(whole)));
  }
  if (wholes.empty()) return view;
  // Each whole-machine device takes its first member's place; the other devices keep theirs.
  std::vector<bool> placed(wholes.size(), false);
  for (const DeviceSpec& device : cluster.devices) {
    if (!gone.count(device.id)) {
      merged.devices.push_back(device);
      continue;
    }
    for (size_t w = 0; w < wholes.size(); ++w) {
      if (wholes[w].host == device.host && !placed[w]) {
        merged.devices.push_back(wholes[w]);
        placed[w] = true;
      }
    }
  }
  std::erase_if(merged.links,
                [&](const LinkSpec& link) { return gone.count(link.from) || gone.count(link.to); });
  for (const DeviceSpec& whole : wholes) {
    const std::string problem = add_implicit_host_link(merged, whole, "");
    if (!problem.empty()) return {std::nullopt, "host " + whole.host + ": " + problem, {}};
  }
  view.cluster = std::move(merged);
  return view;
}

}  // namespace tandem
