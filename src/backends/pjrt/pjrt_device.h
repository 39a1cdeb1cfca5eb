#pragma once
// A PJRT device as a Tandem device: graphs (plan segments) are lowered to StableHLO, compiled
// through the plugin once (executable cache) and run as one program each.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backends/device.h"
#include "backends/pjrt/executable_cache.h"
#include "backends/pjrt/pjrt_client.h"
#include "backends/registry.h"

namespace tandem::pjrt {

// Device-side twins of host tensors: a program's outputs stay on its device after they are
// copied out, so that a program of the same plugin reading them (on that device, or on another
// after a device-to-device copy) need not upload them again. Entries live as long as the host
// tensor they shadow.
class ResidentBuffers {
 public:
  struct Counts {
    int reused = 0;            // inputs found on the program's device: no upload
    int device_to_device = 0;  // copies between devices of the plugin
    int uploaded = 0;          // inputs uploaded from host memory
  };
  void keep(const void* host, size_t device, std::shared_ptr<const PjrtBuffer> buffer);
  // The twin of `host` on `device`, or null.
  std::shared_ptr<const PjrtBuffer> find(const void* host, size_t device) const;
  // A twin of `host` on any device, or null.
  std::shared_ptr<const PjrtBuffer> find_any(const void* host) const;
  void forget(const void* host);
  void count(int Counts::*which);
  Counts counts() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const void*, std::map<size_t, std::shared_ptr<const PjrtBuffer>>> buffers_;
  Counts counts_;
};

// One plugin's client and executable cache, shared by every device of that plugin in the
// process (a PJRT client owns all of its plugin's devices).
struct PjrtSession {
  PjrtClient client;
  ExecutableCache cache;
  ResidentBuffers resident;
  // Told before each compilation ("pjrt0: compiling a segment of 47 ops"), when set.
  std::function<void(const std::string&)> progress;

  // The session of the plugin at `path`, made on first use with the default cache directory
  // (ExecutableCache::default_directory(); $TANDEM_CACHE_DIR=off keeps it in memory).
  static std::shared_ptr<PjrtSession> open(const std::string& path);
  PjrtSession(std::shared_ptr<PjrtPlugin> plugin, std::string cache_directory)
      : client(std::move(plugin)), cache(std::move(cache_directory)) {}
};

class PjrtDevice : public Device {
 public:
  // `device` indexes the client's addressable devices.
  PjrtDevice(std::string name, std::shared_ptr<PjrtSession> session, size_t device = 0);

  std::string name() const override { return name_; }
  // One node as a program of its own (op tests, calibration, eager fallbacks).
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override;
  std::unique_ptr<GraphProgram> compile_graph(const Graph& graph) override;
  bool compiled() const override { return true; }
  // From another device of this plugin: a device-to-device copy of its twin (the host tensor is
  // shared, not copied); otherwise a host copy.
  Tensor receive(const Tensor& tensor) override;

  PjrtSession& session() const { return *session_; }
  size_t device_index() const { return device_; }

 private:
  std::string name_;
  std::shared_ptr<PjrtSession> session_;
  size_t device_;
};

// One device per spec, on its plugin's addressable devices in the order they are declared
// (the plugin named by the spec, or found as plugin_path says). InputError naming the device
// when a plugin cannot start or has fewer devices than the cluster declares.
std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster,
                                                  std::span<const DeviceSpec* const> specs,
                                                  bool progress);

// The first device of the plugin (`plugin`: --plugin, or found as plugin_path says); the link
// is timed by copying a buffer in and out through the plugin.
CalibrationTarget calibration_target(const std::string& plugin);

}  // namespace tandem::pjrt
