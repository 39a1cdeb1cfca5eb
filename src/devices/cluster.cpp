#include "devices/cluster.h"

#include <cctype>

namespace tandem {

bool valid_cluster_id(std::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

int Cluster::device_index(const std::string& id) const {
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].id == id) return static_cast<int>(d);
  }
  return -1;
}

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kTpu: return "tpu";
  }
  return "?";
}

std::string_view backend_name(BackendKind backend) {
  switch (backend) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
    case BackendKind::kPjrt: return "pjrt";
    case BackendKind::kNone: return "none";
  }
  return "?";
}

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::kPcie: return "pcie";
    case LinkKind::kNvlink: return "nvlink";
    case LinkKind::kIci: return "ici";
    case LinkKind::kNetwork: return "network";
    case LinkKind::kHostMemory: return "host-memory";
  }
  return "?";
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp64: return "fp64";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

}  // namespace tandem
