#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/cluster.h"
#include "devices/profile.h"

namespace tandem {

// Published figures of one kind of device, every one with its source (data/presets/*.yaml).
struct DevicePreset {
  std::string name;   // "nvidia-h100-sxm"
  std::string title;  // "NVIDIA H100 SXM5 80GB"
  DeviceKind kind = DeviceKind::kGpu;
  DeviceFigures figures;
  // The link preset joining it to its host when a cluster file names none (PCIe for GPUs and
  // TPUs); empty for CPUs, which reach their host's memory at their memory bandwidth.
  std::string host_link;
  // CPU presets give compute peaks per core; a device multiplies them by its cores.
  bool compute_per_core = false;
  // A calibration of one such device (`profile:`, beside the preset file), for a kind whose ops'
  // times a few peaks cannot give (a compiled device's program step, fusion and convolutions):
  // its figures replace the preset's and its curves price a device that names no profile.
  std::shared_ptr<const CalibrationProfile> profile;
  std::string profile_file;
  std::vector<std::string> notes;
  std::string file;
  int line = 0;
};

struct LinkPreset {
  std::string name;  // "pcie-gen5-x16"
  std::string title;
  LinkKind kind = LinkKind::kPcie;
  Figure bandwidth;  // bytes per second, each way
  Figure latency;    // seconds
  std::vector<std::string> notes;
  std::string file;
  int line = 0;
};

class PresetLibrary {
 public:
  // The presets in $TANDEM_PRESETS, or else in the source tree's data/presets; loaded once.
  static const PresetLibrary& instance();
  // Reads every *.yaml file of a directory; InputError (subject: the file) on bad data.
  static PresetLibrary load(const std::string& directory);

  const DevicePreset* find_device(std::string_view name) const;
  const LinkPreset* find_link(std::string_view name) const;
  const std::vector<DevicePreset>& devices() const { return devices_; }
  const std::vector<LinkPreset>& links() const { return links_; }
  // "a, b, c": for error messages that list what exists.
  std::string device_names() const;
  std::string link_names() const;

 private:
  std::vector<DevicePreset> devices_;
  std::vector<LinkPreset> links_;
};

// Where instance() reads from.
std::string presets_directory();

// Parsers shared with cluster files; nullopt for an unknown name.
std::optional<DeviceKind> parse_device_kind(std::string_view name);
std::optional<LinkKind> parse_link_kind(std::string_view name);

}  // namespace tandem
