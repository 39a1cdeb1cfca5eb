#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace tandem {
namespace {

bool overlap_in_time(const BufferRequest& a, const BufferRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

TEST(MemoryPlan, ChainReusesTwoBuffers) {
  // a -> b -> c -> d, each read only by the next step: two slots suffice.
  std::vector<BufferRequest> requests{{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  const MemoryPlan plan = plan_memory(requests);
  EXPECT_EQ(plan.requested_bytes, 4000u);
  EXPECT_EQ(plan.arena_bytes, 2 * 1024u);  // 64-byte aligned slots
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
}

TEST(MemoryPlan, LiveBuffersNeverOverlapOnRandomLifetimes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> requests;
    for (int i = 0; i < 60; ++i) {
      const int first = static_cast<int>(rng() % 40);
      requests.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 10)});
    }
    const MemoryPlan plan = plan_memory(requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(plan.offsets[i] % 64, 0u);
      EXPECT_LE(plan.offsets[i] + requests[i].bytes, plan.arena_bytes);
      for (size_t j = i + 1; j < requests.size(); ++j) {
        if (!overlap_in_time(requests[i], requests[j])) continue;
        const bool apart = plan.offsets[i] + requests[i].bytes <= plan.offsets[j] ||
                           plan.offsets[j] + requests[j].bytes <= plan.offsets[i];
        ASSERT_TRUE(apart) << "buffers " << i << " and " << j << " overlap while both alive";
      }
    }
    EXPECT_LE(plan.arena_bytes, plan.requested_bytes + 64 * requests.size());
  }
}

TEST(MemoryPlan, EmptyPlan) {
  const MemoryPlan plan = plan_memory({});
  EXPECT_EQ(plan.arena_bytes, 0u);
}

}  // namespace
}  // namespace tandem
