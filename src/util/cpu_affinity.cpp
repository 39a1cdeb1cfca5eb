#include "util/cpu_affinity.h"

#include <dirent.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tandem {

std::vector<int> affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int core = 0; core < CPU_SETSIZE; ++core) {
    if (CPU_ISSET(core, &set)) cores.push_back(core);
  }
  return cores;
}

void restrict_affinity(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) CPU_SET(core, &set);
  // sched_setaffinity sets one thread's; MPI's own threads are running already, so every
  // thread of the process is narrowed (new threads inherit their creator's).
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks)
    throw std::runtime_error(std::string("cannot list this process's threads: ") +
                             std::strerror(errno));
  std::string error;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const pid_t thread = static_cast<pid_t>(std::atoi(entry->d_name));
    if (sched_setaffinity(thread, sizeof(set), &set) != 0 && errno != ESRCH)
      error = std::strerror(errno);
  }
  closedir(tasks);
  if (!error.empty()) throw std::runtime_error("cannot narrow this process's cores: " + error);
}

}  // namespace tandem
