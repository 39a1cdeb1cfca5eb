#include "backends/pjrt/pjrt_plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

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

namespace {

namespace fs = std::filesystem;

// The site-packages folders of the Python installations a user of this machine has, in the
// order of the search (docs/PJRT.md).
std::vector<fs::path> python_package_folders() {
  std::vector<fs::path> roots;  // prefixes holding lib/python3*/{site,dist}-packages
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) roots.emplace_back(venv);
  std::error_code error;
  // A missing folder is an error code too: each check gets its own, and none ends a walk.
  const auto venvs_above = [&roots](fs::path dir) {
    for (; !dir.empty(); dir = dir.parent_path()) {
      std::error_code missing;
      if (fs::is_directory(dir / ".venv", missing)) roots.push_back(dir / ".venv");
      if (dir == dir.parent_path()) break;
    }
  };
  venvs_above(fs::current_path(error));
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) venvs_above(executable.parent_path());
  if (const char* home = std::getenv("HOME"); home && *home)
    roots.push_back(fs::path(home) / ".local");
  roots.emplace_back("/usr/local");
  roots.emplace_back("/usr");
  std::vector<fs::path> folders;
  for (const fs::path& root : roots) {
    const fs::path lib = root / "lib";
    error.clear();
    if (!fs::is_directory(lib, error)) continue;
    std::vector<fs::path> found;
    for (const fs::directory_entry& python : fs::directory_iterator(lib, error)) {
      if (!python.path().filename().string().starts_with("python3")) continue;
      for (const char* kind : {"site-packages", "dist-packages"}) {
        if (fs::is_directory(python.path() / kind, error)) found.push_back(python.path() / kind);
      }
    }
    std::sort(found.begin(), found.end());
    for (const fs::path& folder : found) {
      if (std::find(folders.begin(), folders.end(), folder) == folders.end())
        folders.push_back(folder);
    }
  }
  return folders;
}

bool serves(const std::string& package, std::string_view platform) {
  if (platform == "tpu") return package.find("tpu") != std::string::npos;
  if (platform == "gpu")
    return package.find("cuda") != std::string::npos || package.find("gpu") != std::string::npos;
  return package.find(platform) != std::string::npos;
}

// A plugin library in a site-packages folder for this platform, or "".
std::string plugin_in(const fs::path& packages, std::string_view platform) {
  std::error_code error;
  if (platform == "tpu" && fs::is_regular_file(packages / "libtpu" / "libtpu.so", error))
    return (packages / "libtpu" / "libtpu.so").string();
  for (const char* space : {"jax_plugins", "xla_plugins"}) {
    if (!fs::is_directory(packages / space, error)) continue;
    std::vector<fs::path> libraries;
    for (const fs::directory_entry& package : fs::directory_iterator(packages / space, error)) {
      if (!package.is_directory(error) || !serves(package.path().filename().string(), platform))
        continue;
      for (const fs::directory_entry& file : fs::directory_iterator(package.path(), error)) {
        if (file.path().extension() == ".so" && file.is_regular_file(error))
          libraries.push_back(file.path());
      }
    }
    std::sort(libraries.begin(), libraries.end());
    if (!libraries.empty()) return libraries.front().string();
  }
  return "";
}

}  // namespace

std::string plugin_path(std::string_view from_cluster, std::string_view platform) {
  if (!from_cluster.empty()) return std::string(from_cluster);
  if (const char* env = std::getenv("TANDEM_PJRT_PLUGIN"); env != nullptr && *env != '\0')
    return env;
  const std::vector<fs::path> folders = python_package_folders();
  // Without a platform, accelerators first.
  const std::vector<std::string_view> platforms =
      platform.empty() ? std::vector<std::string_view>{"tpu", "gpu", "cpu"}
                       : std::vector<std::string_view>{platform};
  for (std::string_view wanted : platforms) {
    for (const fs::path& folder : folders) {
      const std::string found = plugin_in(folder, wanted);
      if (!found.empty()) return found;
    }
  }
  std::string searched;
  for (const fs::path& folder : folders)
    searched += (searched.empty() ? "" : ", ") + folder.string();
  throw InputError("pjrt",
                   "no PJRT plugin" +
                       (platform.empty() ? "" : " for a " + std::string(platform) + " device") +
                       ": name one with plugin: in the cluster file or in "
                       "$TANDEM_PJRT_PLUGIN, or install one (searched " +
                       (searched.empty() ? "no Python installation" : searched) + ")");
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
