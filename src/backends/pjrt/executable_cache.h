#pragma once
// Compiled executables by module text: in memory for the process, and on disk (serialised by
// the plugin) so that a second run of the same segment skips compilation.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backends/pjrt/pjrt_client.h"

namespace tandem::pjrt {

class ExecutableCache {
 public:
  struct Stats {
    int memory_hits = 0;
    int disk_hits = 0;
    int compiles = 0;
    double compile_seconds = 0;  // compiling, over all misses
    double load_seconds = 0;     // reading and deserialising, over all disk hits
    int lookups() const { return memory_hits + disk_hits + compiles; }
  };

  // `directory` empty: memory only. Otherwise entries are <key>.mlir (the module, compared in
  // full on a hit, so a hash collision cannot return the wrong program) and <key>.pjrt.
  explicit ExecutableCache(std::string directory = {});

  // The executable of `module` for `client`, compiled at most once per process and, with a
  // directory, once per machine and plugin. `before_compile` is called when it must compile
  // (progress for the user: compiling takes seconds on large segments).
  std::shared_ptr<const PjrtExecutable> get(const PjrtClient& client, const std::string& module,
                                            const std::function<void()>& before_compile = {});

  Stats stats() const;
  const std::string& directory() const { return directory_; }

  // $TANDEM_CACHE_DIR/pjrt, else $XDG_CACHE_HOME/tandem/pjrt, else ~/.cache/tandem/pjrt; empty
  // when none can be named.
  static std::string default_directory();

 private:
  std::string directory_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const PjrtExecutable>> loaded_;
  Stats stats_;
};

}  // namespace tandem::pjrt
