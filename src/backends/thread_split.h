#pragma once
#include <cstdint>

namespace tandem {

// How a node's kernel shares its work among its device's threads, where the backend declares
// it. On a CPU of several cores, a tensor that one thread wrote and all of them read (or the
// reverse) moves between the cores' caches: calibration times that hand-off, and the cost model
// prices it on the edges where the two sides split differently (docs/COST_MODEL.md).
enum class ThreadSplit : uint8_t {
  kUndeclared,    // the backend does not say (a library's matrix product, a copy in its own order)
  kOneThread,     // the calling thread runs the kernel alone
  kOutputRanges,  // each thread writes one contiguous range of the output and reads its
                  // same-sized inputs in the same order
};

}  // namespace tandem
