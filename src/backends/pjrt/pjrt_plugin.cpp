#include "backends/pjrt/pjrt_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "ir/error.h"

namespace tandem::pjrt {

void check(const PJRT_Api* api, PJRT_Error* error, std::string_view what) {
  if (error == nullptr) return;
  PJRT_Error_Message_Args message{};
  message.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  message.error = error;
  api->PJRT_Error_Message(&message);
  std::string text = std::string(what) + ": " + std::string(message.message, message.message_size);
  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = error;
  api->PJRT_Error_Destroy(&destroy);
  throw PjrtError(text);
}

std::string plugin_path(std::string_view from_cluster) {
  if (!from_cluster.empty()) return std::string(from_cluster);
  if (const char* env = std::getenv("TANDEM_PJRT_PLUGIN"); env != nullptr && *env != '\0')
    return env;
  throw InputError("pjrt",
                   "no PJRT plugin given: name one in the cluster file or in $TANDEM_PJRT_PLUGIN");
}

void check_api_version(std::string_view plugin, int major, int minor) {
  if (major == PJRT_API_MAJOR && minor >= PJRT_API_MINOR) return;
  throw InputError(std::string(plugin),
                   "PJRT API version mismatch: the plugin implements " + std::to_string(major) +
                       "." + std::to_string(minor) + ", Tandem was built against " +
                       std::to_string(PJRT_API_MAJOR) + "." + std::to_string(PJRT_API_MINOR) +
                       " and needs the same major version and at least its minor");
}

namespace {

std::shared_ptr<PjrtPlugin> open_plugin(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw InputError(path,
                     std::string("cannot load PJRT plugin: ") + (reason ? reason : "unknown"));
  }
  using GetApi = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApi>(dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    dlclose(handle);
    throw InputError(path, "not a PJRT plugin: it exports no GetPjrtApi");
  }
  const PJRT_Api* api = get_api();
  if (api == nullptr) throw InputError(path, "GetPjrtApi returned no API");
  check_api_version(path, api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version);
  PJRT_Plugin_Initialize_Args init{};
  init.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
  check(api, api->PJRT_Plugin_Initialize(&init), path + ": PJRT_Plugin_Initialize");
  return std::make_shared<PjrtPlugin>(path, api);
}

}  // namespace

std::shared_ptr<PjrtPlugin> PjrtPlugin::load(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<PjrtPlugin>> loaded;
  std::lock_guard lock(mutex);
  auto& plugin = loaded[path];
  if (plugin == nullptr) {
    try {
      plugin = open_plugin(path);
    } catch (...) {
      loaded.erase(path);
      throw;
    }
  }
  return plugin;
}

}  // namespace tandem::pjrt
