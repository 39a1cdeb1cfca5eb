#pragma once
// A PJRT plugin: a shared library exporting `GetPjrtApi`, loaded once per process. The PJRT C
// API declarations come from the xla-cpu-pjrt wheel (docs/PJRT.md).
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pjrt_c_api.h"

namespace tandem::pjrt {

// A call into a plugin that failed: the PJRT error's message, prefixed with what was attempted.
class PjrtError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws PjrtError("<what>: <message>") if `error` is set; destroys the error either way.
void check(const PJRT_Api* api, PJRT_Error* error, std::string_view what);

// The plugin to load for a device of `platform` ("cpu", "gpu", "tpu"), searched in this order:
// the cluster file's `plugin:`; $TANDEM_PJRT_PLUGIN; then the places a Python installation
// keeps PJRT plugins, as JAX finds them -- the packages of the `jax_plugins` and `xla_plugins`
// namespaces (jax-cuda*-pjrt, xla-cpu-pjrt, ...) and libtpu -- in the site-packages of
// $VIRTUAL_ENV, of a `.venv` in the working directory or a parent of it, of a `.venv` in a
// parent of this executable's directory, of the user (~/.local) and of the system (/usr/local,
// /usr). A package serves a platform when its name says so (cpu; cuda or gpu; libtpu).
// An empty platform takes the first found of tpu, gpu, cpu. InputError naming the places
// searched when none is found.
std::string plugin_path(std::string_view from_cluster, std::string_view platform = {});

// Accepts a plugin's API version if its major equals the header's and its minor is at least
// the header's (older plugins may lack entries this build calls); InputError naming the plugin
// otherwise.
void check_api_version(std::string_view plugin, int major, int minor);

class PjrtPlugin {
 public:
  // Loads and initialises the plugin at `path`; the same path gives the same plugin. InputError
  // when the file can't be loaded, exports no GetPjrtApi, or has an incompatible API version.
  // Plugins stay loaded until exit: XLA's static state does not survive dlclose.
  static std::shared_ptr<PjrtPlugin> load(const std::string& path);

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int api_major() const { return api_->pjrt_api_version.major_version; }
  int api_minor() const { return api_->pjrt_api_version.minor_version; }

  PjrtPlugin(std::string path, const PJRT_Api* api) : path_(std::move(path)), api_(api) {}

 private:
  std::string path_;
  const PJRT_Api* api_;
};

}  // namespace tandem::pjrt
