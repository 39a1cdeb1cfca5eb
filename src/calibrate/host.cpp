#include "calibrate/host.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace tandem::calibrate {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown CPU";
}

CpuTimes cpu_times() {
  CpuTimes times;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) ||
      cpu != "cpu" || tick <= 0)
    return times;
  times.machine_busy_seconds = (user + nice + system + irq + softirq) / tick;
  // /proc/self/stat: the command (in parentheses, may hold spaces) then fields from 3 on;
  // utime and stime are fields 14 and 15.
  std::ifstream self("/proc/self/stat");
  std::string line;
  std::getline(self, line);
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return times;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14) utime = std::strtod(field.c_str(), nullptr);
    if (index == 15) stime = std::strtod(field.c_str(), nullptr);
  }
  times.own_seconds = (utime + stime) / tick;
  times.known = true;
  return times;
}

double others_cores(const CpuTimes& before, const CpuTimes& after, double wall_seconds) {
  if (!before.known || !after.known || wall_seconds <= 0) return 0;
  const double others = (after.machine_busy_seconds - before.machine_busy_seconds) -
                        (after.own_seconds - before.own_seconds);
  return std::max(0.0, others / wall_seconds);
}

double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double memcpy_bandwidth(size_t bytes, const Repetition& repetition) {
  auto from = std::make_unique<std::byte[]>(bytes);
  auto to = std::make_unique<std::byte[]>(bytes);
  std::memset(from.get(), 1, bytes);  // touch every page before timing
  std::memset(to.get(), 0, bytes);
  const double seconds = typical_seconds(repetition, [&] {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.get(), from.get(), bytes);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return static_cast<double>(bytes) / seconds;
}

}  // namespace tandem::calibrate
