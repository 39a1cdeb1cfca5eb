#pragma once
// A PJRT device as a Tandem device: graphs (plan segments) are lowered to StableHLO, compiled
// through the plugin once (executable cache) and run as one program each.
#include <atomic>
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

// How program inputs reached their device, over a session's life: uploaded from host memory,
// copied from another device of the plugin (by the runtime's copy worker, before the program
// needed them); the rest were on the device already.
struct TransferCounts {
  std::atomic<int> program_inputs{0}, uploaded{0}, device_to_device{0};
  int found_on_device() const { return program_inputs - uploaded; }
};

// One plugin's client and executable cache, shared by every device of that plugin in the
// process (a PJRT client owns all of its plugin's devices).
struct PjrtSession {
  PjrtClient client;
  ExecutableCache cache;
  TransferCounts transfers;
  // Told before each compilation ("pjrt0: compiling a segment of 47 ops"), when set.
  std::function<void(const std::string&)> progress;

  // The session of the plugin at `path`, made on first use with the default cache directory
  // (ExecutableCache::default_directory(); $TANDEM_CACHE_DIR=off keeps it in memory).
  static std::shared_ptr<PjrtSession> open(const std::string& path);
  PjrtSession(std::shared_ptr<PjrtPlugin> plugin, std::string cache_directory)
      : client(std::move(plugin)), cache(std::move(cache_directory)) {}
};

class PjrtDevice;

// A PJRT device's memory: its tensors are PJRT buffers (Tensor::raw() is the PjrtBuffer, which
// the tensor owns), made by programs or copies and never written after.
class PjrtMemory final : public MemorySpace {
 public:
  explicit PjrtMemory(const PjrtDevice& device) : device_(device) {}
  std::string name() const override;
  void copy_to_host(const Tensor& tensor, void* host) const override;
  const PjrtDevice& device() const { return device_; }
  // A buffer as a tensor of this memory.
  Tensor wrap(PjrtBuffer buffer, DType dtype, Shape shape) const;

 private:
  const PjrtDevice& device_;
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
  // XLA's CPU client computes on a pool of every core; other plugins on their devices.
  int busy_host_cores() const override;
  // The plugin runs a program in threads of its own, whichever thread asks.
  bool runs_on_any_thread() const override { return true; }
  const MemorySpace* memory() const override { return &memory_; }
  // PJRT buffers are made by programs and copies: there is no uninitialised one to write into.
  Tensor allocate(DType dtype, Shape shape) override;
  // From this device: the same immutable buffer; from another device of this plugin: a
  // device-to-device copy; otherwise an upload from host memory.
  Tensor receive(const Tensor& tensor) override;

  PjrtSession& session() const { return *session_; }
  size_t device_index() const { return device_; }

 private:
  std::string name_;
  std::shared_ptr<PjrtSession> session_;
  size_t device_;
  PjrtMemory memory_{*this};
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
