#pragma once
// One contiguous range of a loop per OpenMP thread, shared by the CPU kernels that split work
// by position (elementwise loops, copies of contiguous pieces).
#include <omp.h>

#include <cstdint>

namespace tandem::cpu {

// Calls fn(begin, end) over [0, total) split into one contiguous range per thread; below
// `grain` on the calling thread alone.
template <typename RangeFn>
void parallel_ranges(int64_t total, int64_t grain, RangeFn&& fn) {
  if (total < grain) {
    if (total > 0) fn(int64_t{0}, total);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads();
    const int64_t thread = omp_get_thread_num();
    // Range ends on multiples of 64 units (elements, bytes) keep threads off each other's cache
    // lines.
    auto boundary = [&](int64_t t) {
      return t == threads ? total : (total * t / threads) & ~int64_t{63};
    };
    const int64_t begin = boundary(thread);
    const int64_t end = boundary(thread + 1);
    if (begin < end) fn(begin, end);
  }
}

}  // namespace tandem::cpu
