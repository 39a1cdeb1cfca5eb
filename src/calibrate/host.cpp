#include "calibrate/host.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>

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

double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double memcpy_bandwidth(size_t bytes, const Repetition& repetition) {
  auto from = std::make_unique<std::byte[]>(bytes);
  auto to = std::make_unique<std::byte[]>(bytes);
  std::memset(from.get(), 1, bytes);  // touch every page before timing
  std::memset(to.get(), 0, bytes);
  const double seconds = median_seconds(repetition, [&] {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.get(), from.get(), bytes);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return static_cast<double>(bytes) / seconds;
}

}  // namespace tandem::calibrate
