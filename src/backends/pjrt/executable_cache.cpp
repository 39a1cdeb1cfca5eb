#include "backends/pjrt/executable_cache.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tandem::pjrt {
namespace {

namespace fs = std::filesystem;

// FNV-1a, 64 bits: names files only; a hit compares the whole module.
uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes through a temporary name of this process and renames, so that a reader never sees
// half a file and two processes filling the same entry never write into one file.
void write_file(const fs::path& path, std::string_view bytes) {
  const fs::path temporary = path.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return;
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) fs::remove(temporary, error);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ExecutableCache::ExecutableCache(std::string directory) : directory_(std::move(directory)) {}

std::string ExecutableCache::default_directory() {
  if (const char* dir = std::getenv("TANDEM_CACHE_DIR"); dir && *dir) {
    return (fs::path(dir) / "pjrt").string();
  }
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir) {
    return (fs::path(dir) / "tandem" / "pjrt").string();
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return (fs::path(home) / ".cache" / "tandem" / "pjrt").string();
  }
  return {};
}

std::shared_ptr<const PjrtExecutable> ExecutableCache::get(
    const PjrtClient& client, const std::string& module,
    const std::function<void()>& before_compile) {
  // One plugin's executables are not another's: the plugin and its version are in the key.
  const std::string identity =
      client.plugin().path() + "\n" + std::to_string(client.plugin().api_major()) + "." +
      std::to_string(client.plugin().api_minor()) + "\n" + client.platform_name() + "\n";
  const std::string key_text = identity + module;
  std::lock_guard lock(mutex_);
  if (auto found = loaded_.find(key_text); found != loaded_.end()) {
    ++stats_.memory_hits;
    return found->second;
  }
  char name[17];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(fnv1a(key_text)));
  const fs::path base = directory_.empty() ? fs::path() : fs::path(directory_) / name;

  std::shared_ptr<const PjrtExecutable> executable;
  if (!directory_.empty()) {
    const auto start = std::chrono::steady_clock::now();
    if (read_file(base.string() + ".mlir") == key_text) {
      const std::string bytes = read_file(base.string() + ".pjrt");
      try {
        if (!bytes.empty()) {
          executable = std::make_shared<PjrtExecutable>(client.deserialize(bytes));
        }
      } catch (const PjrtError&) {
        // A stale or foreign entry: compile instead, and overwrite it below.
      }
    }
    if (executable) {
      ++stats_.disk_hits;
      stats_.load_seconds += seconds_since(start);
    }
  }
  if (!executable) {
    if (before_compile) before_compile();
    const auto start = std::chrono::steady_clock::now();
    executable = std::make_shared<PjrtExecutable>(client.compile_mlir(module));
    ++stats_.compiles;
    stats_.compile_seconds += seconds_since(start);
    if (!directory_.empty()) {
      try {
        const std::string bytes = executable->serialize();
        std::error_code error;
        fs::create_directories(directory_, error);
        if (!error) {
          write_file(base.string() + ".pjrt", bytes);
          write_file(base.string() + ".mlir", key_text);
        }
      } catch (const PjrtError&) {
        // The plugin cannot serialise: the cache stays in memory.
      }
    }
  }
  loaded_.emplace(key_text, executable);
  return executable;
}

ExecutableCache::Stats ExecutableCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tandem::pjrt
