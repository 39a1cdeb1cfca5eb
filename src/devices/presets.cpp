#include "devices/presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "devices/figures_yaml.h"
#include "ir/error.h"

namespace tandem {
namespace {

std::vector<std::string> read_notes(const YamlFile& file, const YAML::Node& node,
                                    const std::string& field) {
  std::vector<std::string> notes;
  if (!node) return notes;
  file.expect_sequence(node, field);
  for (size_t i = 0; i < node.size(); ++i) {
    notes.push_back(file.scalar(node[i], field + "[" + std::to_string(i) + "]"));
  }
  return notes;
}

Citations read_citations(const YamlFile& file) {
  Citations citations;
  const YAML::Node sources = file.root()["sources"];
  if (!sources) return citations;
  file.expect_map(sources, "sources");
  for (const auto& entry : sources) {
    const std::string tag = entry.first.Scalar();
    citations[tag] = file.scalar(entry.second, "sources." + tag);
  }
  return citations;
}

DevicePreset read_device_preset(const YamlFile& file, const std::string& name,
                                const YAML::Node& node, const Citations& citations) {
  const std::string field = "devices." + name;
  file.expect_map(node, field);
  std::vector<std::string_view> keys = {"title",   "kind", "host_link", "compute_per_core",
                                        "profile", "notes"};
  keys.insert(keys.end(), device_figure_keys().begin(), device_figure_keys().end());
  file.check_keys(node, field, keys);
  DevicePreset preset;
  preset.name = name;
  preset.file = file.path();
  preset.line = YamlFile::line(node);
  if (!node["title"]) file.fail(node, field, "missing 'title'");
  preset.title = file.scalar(node["title"], field + ".title");
  if (!node["kind"]) file.fail(node, field, "missing 'kind'");
  const auto kind = parse_device_kind(file.scalar(node["kind"], field + ".kind"));
  if (!kind) file.fail(node["kind"], field + ".kind", "expected cpu, gpu or tpu");
  preset.kind = *kind;
  if (node["host_link"]) preset.host_link = file.scalar(node["host_link"], field + ".host_link");
  if (preset.kind != DeviceKind::kCpu && preset.host_link.empty()) {
    file.fail(node, field, "a GPU or TPU preset needs a 'host_link' preset");
  }
  if (node["compute_per_core"]) {
    const std::string flag = file.scalar(node["compute_per_core"], field + ".compute_per_core");
    if (flag != "true" && flag != "false") {
      file.fail(node["compute_per_core"], field + ".compute_per_core", "expected true or false");
    }
    preset.compute_per_core = flag == "true";
  }
  preset.notes = read_notes(file, node["notes"], field + ".notes");
  read_device_figures(file, node, field, &citations, preset.figures);
  if (node["profile"]) {
    const std::string named = file.scalar(node["profile"], field + ".profile");
    preset.profile_file =
        (std::filesystem::path(file.path()).parent_path() / named).lexically_normal().string();
    auto profile = std::make_shared<CalibrationProfile>(read_profile(preset.profile_file));
    if (profile->kind != preset.kind) {
      file.fail(node["profile"], field + ".profile",
                "the profile measured a " + std::string(device_kind_name(profile->kind)) +
                    ", not a " + std::string(device_kind_name(preset.kind)));
    }
    preset.profile = std::move(profile);
  }
  return preset;
}

LinkPreset read_link_preset(const YamlFile& file, const std::string& name, const YAML::Node& node,
                            const Citations& citations) {
  const std::string field = "links." + name;
  file.expect_map(node, field);
  file.check_keys(node, field, {"title", "kind", "bandwidth", "latency", "notes"});
  LinkPreset preset;
  preset.name = name;
  preset.file = file.path();
  preset.line = YamlFile::line(node);
  if (!node["title"]) file.fail(node, field, "missing 'title'");
  preset.title = file.scalar(node["title"], field + ".title");
  if (!node["kind"]) file.fail(node, field, "missing 'kind'");
  const auto kind = parse_link_kind(file.scalar(node["kind"], field + ".kind"));
  if (!kind) file.fail(node["kind"], field + ".kind", "expected pcie, nvlink, ici or network");
  preset.kind = *kind;
  if (!node["bandwidth"]) file.fail(node, field, "missing 'bandwidth'");
  preset.bandwidth =
      read_figure(file, node["bandwidth"], field + ".bandwidth", Quantity::kBandwidth, &citations);
  if (node["latency"]) {
    preset.latency =
        read_figure(file, node["latency"], field + ".latency", Quantity::kSeconds, &citations);
  }
  preset.notes = read_notes(file, node["notes"], field + ".notes");
  return preset;
}

template <typename Preset>
std::string names_of(const std::vector<Preset>& presets) {
  std::string names;
  for (const Preset& preset : presets) names += (names.empty() ? "" : ", ") + preset.name;
  return names;
}

}  // namespace

std::optional<DeviceKind> parse_device_kind(std::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "gpu") return DeviceKind::kGpu;
  if (name == "tpu") return DeviceKind::kTpu;
  return std::nullopt;
}

std::optional<LinkKind> parse_link_kind(std::string_view name) {
  if (name == "pcie") return LinkKind::kPcie;
  if (name == "nvlink") return LinkKind::kNvlink;
  if (name == "ici") return LinkKind::kIci;
  if (name == "network") return LinkKind::kNetwork;
  if (name == "host-memory") return LinkKind::kHostMemory;
  return std::nullopt;
}

std::string presets_directory() {
  const char* overridden = std::getenv("TANDEM_PRESETS");
  return overridden && *overridden ? overridden : TANDEM_PRESETS_DIR;
}

const PresetLibrary& PresetLibrary::instance() {
  static const PresetLibrary library = load(presets_directory());
  return library;
}

PresetLibrary PresetLibrary::load(const std::string& directory) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(directory)) {
    throw InputError(directory, "no preset directory here (set TANDEM_PRESETS to one)");
  }
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw InputError(directory, "no *.yaml preset files here");

  PresetLibrary library;
  for (const std::string& path : paths) {
    const YamlFile file(path);
    file.expect_map(file.root(), "");
    file.check_keys(file.root(), "", {"sources", "devices", "links"});
    const Citations citations = read_citations(file);
    auto check_new = [&](bool exists, const YAML::Node& node, const std::string& field) {
      if (exists) file.fail(node, field, "a preset of this name is already defined");
    };
    if (const YAML::Node devices = file.root()["devices"]) {
      file.expect_map(devices, "devices");
      for (const auto& entry : devices) {
        const std::string name = entry.first.Scalar();
        check_new(library.find_device(name) != nullptr, entry.first, "devices." + name);
        library.devices_.push_back(read_device_preset(file, name, entry.second, citations));
      }
    }
    if (const YAML::Node links = file.root()["links"]) {
      file.expect_map(links, "links");
      for (const auto& entry : links) {
        const std::string name = entry.first.Scalar();
        check_new(library.find_link(name) != nullptr, entry.first, "links." + name);
        library.links_.push_back(read_link_preset(file, name, entry.second, citations));
      }
    }
  }
  for (const DevicePreset& device : library.devices_) {
    if (!device.host_link.empty() && !library.find_link(device.host_link)) {
      throw InputError(device.file, "line " + std::to_string(device.line) + ": devices." +
                                        device.name + ".host_link: unknown link preset '" +
                                        device.host_link + "'");
    }
  }
  return library;
}

const DevicePreset* PresetLibrary::find_device(std::string_view name) const {
  for (const DevicePreset& preset : devices_) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

const LinkPreset* PresetLibrary::find_link(std::string_view name) const {
  for (const LinkPreset& preset : links_) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string PresetLibrary::device_names() const { return names_of(devices_); }
std::string PresetLibrary::link_names() const { return names_of(links_); }

}  // namespace tandem
