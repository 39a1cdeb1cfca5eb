#include "runtime/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace tandem {
namespace {

constexpr size_t kAlignment = 64;

size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;
  for (size_t id : order) {
    const BufferRequest& request = requests[id];
    plan.requested_bytes += request.bytes;
    // Ranges of already placed buffers whose lifetimes overlap this one, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t other : placed) {
      const BufferRequest& o = requests[other];
      if (o.first_step <= request.last_step && request.first_step <= o.last_step) {
        busy.emplace_back(plan.offsets[other], plan.offsets[other] + aligned(o.bytes));
      }
    }
    std::sort(busy.begin(), busy.end());
    // Smallest gap that fits, else the end of the highest busy range.
    const size_t need = aligned(request.bytes);
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= cursor && begin - cursor >= need && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best == SIZE_MAX) best = cursor;
    plan.offsets[id] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + need);
    placed.push_back(id);
  }
  return plan;
}

}  // namespace tandem
