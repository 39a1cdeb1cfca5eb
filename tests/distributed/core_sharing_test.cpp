#include "distributed/core_sharing.h"

#include <gtest/gtest.h>

#include "util/cpu_affinity.h"

namespace tandem::distributed {
namespace {

TEST(ShareOfCores, RanksOnTheSameCoresOfOneMachineTakeTurnsInRankOrder) {
  // mpirun oversubscribed or without binding: both ranks see cores 0 and 1.
  const std::vector<RankCores> ranks = {{"box", {0, 1}, 1}, {"box", {0, 1}, 1}};
  EXPECT_EQ(share_of_cores(ranks, 0), std::vector<int>({0}));
  EXPECT_EQ(share_of_cores(ranks, 1), std::vector<int>({1}));
}

TEST(ShareOfCores, EachRankTakesAsManyAsItsDevicesClaim) {
  const std::vector<RankCores> ranks = {{"box", {0, 1, 2, 3, 4, 5}, 2},
                                        {"box", {0, 1, 2, 3, 4, 5}, 0},
                                        {"box", {0, 1, 2, 3, 4, 5}, 3}};
  EXPECT_EQ(share_of_cores(ranks, 0), std::vector<int>({0, 1}));
  // A rank without CPU devices keeps what it has and takes no share from the others.
  EXPECT_EQ(share_of_cores(ranks, 1), std::vector<int>({0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(share_of_cores(ranks, 2), std::vector<int>({2, 3, 4}));
}

TEST(ShareOfCores, MoreClaimedThanThereAreWrapsRound) {
  const std::vector<RankCores> ranks = {{"box", {4, 7}, 1}, {"box", {4, 7}, 1}, {"box", {4, 7}, 1}};
  EXPECT_EQ(share_of_cores(ranks, 2), std::vector<int>({4}));
}

TEST(ShareOfCores, RanksMpirunBoundOrOnOtherMachinesKeepTheirCores) {
  const std::vector<RankCores> bound = {{"box", {0}, 1}, {"box", {1}, 1}};
  EXPECT_EQ(share_of_cores(bound, 1), std::vector<int>({1}));
  const std::vector<RankCores> apart = {{"a", {0, 1}, 1}, {"b", {0, 1}, 1}};
  EXPECT_EQ(share_of_cores(apart, 0), std::vector<int>({0, 1}));
  EXPECT_EQ(share_of_cores(apart, 1), std::vector<int>({0, 1}));
}

TEST(ShareOfCores, ARankWhoseDevicesUseEveryCoreKeepsThemAll) {
  const std::vector<RankCores> ranks = {{"box", {0, 1}, 2}, {"box", {0, 1}, 1}};
  EXPECT_EQ(share_of_cores(ranks, 0), std::vector<int>({0, 1}));
  EXPECT_EQ(share_of_cores(ranks, 1), std::vector<int>({0}));  // after rank 0's two, wrapped
}

TEST(RestrictAffinity, NarrowsThisProcessAndCanWidenItAgain) {
  const std::vector<int> before = affinity_cores();
  ASSERT_FALSE(before.empty());
  restrict_affinity({before.back()});
  EXPECT_EQ(affinity_cores(), std::vector<int>({before.back()}));
  restrict_affinity(before);
  EXPECT_EQ(affinity_cores(), before);
}

}  // namespace
}  // namespace tandem::distributed
