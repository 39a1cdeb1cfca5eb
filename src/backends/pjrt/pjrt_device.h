#pragma once
// A PJRT device as a Tandem device: graphs (plan segments) are lowered to StableHLO, compiled
// through the plugin once (executable cache) and run as one program each.
#include <memory>
#include <string>

#include "backends/device.h"
#include "backends/pjrt/executable_cache.h"
#include "backends/pjrt/pjrt_client.h"

namespace tandem::pjrt {

// One plugin's client and executable cache, shared by every device of that plugin in the
// process (a PJRT client owns all of its plugin's devices).
struct PjrtSession {
  PjrtClient client;
  ExecutableCache cache;

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
  // Whether the lowering has a rule for the op (shapes and attributes are checked by
  // lowering_refusal, which needs the graph).
  bool supports(const Node& node) const override;
  // One node as a program of its own (op tests, calibration, eager fallbacks).
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override;
  std::unique_ptr<GraphProgram> compile_graph(const Graph& graph) override;
  bool compiled() const override { return true; }

  PjrtSession& session() const { return *session_; }
  size_t device_index() const { return device_; }

 private:
  std::string name_;
  std::shared_ptr<PjrtSession> session_;
  size_t device_;
};

}  // namespace tandem::pjrt
