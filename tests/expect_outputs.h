#pragma once
// Outputs of two runs compared as `tandem run --expect` compares them (util/compare.h).
#include <gtest/gtest.h>

#include <vector>

#include "util/compare.h"

namespace tandem::testing {

inline void expect_same_outputs(const std::vector<Tensor>& actual,
                                const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    const Comparison comparison = compare_tensors(actual[i], expected[i]);
    EXPECT_TRUE(comparison.matches)
        << "output " << i << ": " << comparison.problem << " at " << comparison.worst_index << ": "
        << comparison.actual << " vs " << comparison.expected;
  }
}

}  // namespace tandem::testing
