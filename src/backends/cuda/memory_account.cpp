#include "backends/cuda/memory_account.h"

#include <cstdio>

namespace tandem::cuda {

void MemoryAccount::allocated(size_t bytes) {
  const size_t now = in_use_.fetch_add(bytes) + bytes;
  ++allocations_;
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
}

void MemoryAccount::freed(size_t bytes) { in_use_.fetch_sub(bytes); }

InputError MemoryAccount::out_of_memory(size_t bytes, size_t free, size_t total) const {
  return InputError(
      device_, "out of device memory: asked " + byte_size(static_cast<double>(bytes)) + "; " +
                   byte_size(static_cast<double>(free)) + " free of " +
                   byte_size(static_cast<double>(total)) + ", " +
                   byte_size(static_cast<double>(in_use())) + " of it held by this run (peak " +
                   byte_size(static_cast<double>(peak())) + ")");
}

std::string byte_size(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.3g %s", bytes, kUnits[unit]);
  return text;
}

}  // namespace tandem::cuda
