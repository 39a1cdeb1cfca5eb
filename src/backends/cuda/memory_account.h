#pragma once
// The bookkeeping of one GPU's allocator, apart from CUDA so that it is tested without a GPU:
// bytes handed out and their peak, and the out-of-memory error that names the device, the
// bytes asked and what was free.
#include <atomic>
#include <cstddef>
#include <string>

#include "ir/error.h"

namespace tandem::cuda {

class MemoryAccount {
 public:
  explicit MemoryAccount(std::string device) : device_(std::move(device)) {}
  void allocated(size_t bytes);
  void freed(size_t bytes);
  size_t in_use() const { return in_use_.load(); }
  size_t peak() const { return peak_.load(); }
  size_t allocations() const { return allocations_.load(); }
  // The error for `bytes` the device could not give, with the free and total bytes it reports:
  // "gpu0: out of device memory: asked 1.5 GiB; 200 MiB free of 79.6 GiB, 78.1 GiB of it held
  // by this run (peak 78.3 GiB)".
  InputError out_of_memory(size_t bytes, size_t free, size_t total) const;

 private:
  std::string device_;
  std::atomic<size_t> in_use_{0}, peak_{0}, allocations_{0};
};

// "1.5 GiB", "200 MiB", "512 B".
std::string byte_size(double bytes);

}  // namespace tandem::cuda
