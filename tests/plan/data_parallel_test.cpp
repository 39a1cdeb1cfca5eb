// The data-parallel strategy: shares in proportion to speed, whole samples, memory.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "plan/evaluate.h"
#include "plan/strategies.h"
#include "plan_test_util.h"

namespace tandem::testing {
namespace {

PlanOptions batch_of(int64_t batch) {
  PlanOptions options;
  options.batch = batch;
  return options;
}

TEST(DataParallel, SharesSumToOneInProportionToSpeed) {
  // Device speeds 1 : 2 : 4 over a batch of 70 samples: 10, 20 and 40 samples.
  const Cluster cluster = flat_cluster(3);
  const TestProblem problem =
      make_problem(cluster, {{4, 2, 1}, {4, 2, 1}}, {{{1, 1e3}}, {}}, {}, {}, batch_of(70));
  const std::optional<Plan> plan = make_data_parallel_strategy()->plan(*problem);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->batch_share.size(), 3u);
  EXPECT_NEAR(std::accumulate(plan->batch_share.begin(), plan->batch_share.end(), 0.0), 1, 1e-12);
  EXPECT_NEAR(plan->batch_share[0], 10.0 / 70, 1e-12);
  EXPECT_NEAR(plan->batch_share[1], 20.0 / 70, 1e-12);
  EXPECT_NEAR(plan->batch_share[2], 40.0 / 70, 1e-12);
  // All finish together: the latency is each device's time for its share.
  EXPECT_NEAR(plan->predicted.latency_seconds, 8.0 * 10 / 70, 1e-9);
}

TEST(DataParallel, SharesAreWholeSamples) {
  const Cluster cluster = flat_cluster(3);
  const TestProblem problem = make_problem(cluster, {{1, 1, 1}}, {{}}, {}, {}, batch_of(4));
  const std::optional<Plan> plan = make_data_parallel_strategy()->plan(*problem);
  ASSERT_TRUE(plan.has_value());
  double total = 0;
  for (double share : plan->batch_share) {
    EXPECT_NEAR(share * 4, std::round(share * 4), 1e-12);
    total += share;
  }
  EXPECT_NEAR(total, 1, 1e-12);
}

TEST(DataParallel, NoneWithFewerThanTwoDevices) {
  const Cluster cluster = flat_cluster(2);
  // Device 1 cannot run node 1: only device 0 can run the whole graph.
  const TestProblem one_device =
      make_problem(cluster, {{1, 1}, {1, kInfinity}}, {{{1, 1e3}}, {}}, {}, {}, batch_of(8));
  EXPECT_FALSE(make_data_parallel_strategy()->plan(*one_device).has_value());
  // A batch of one sample is not split.
  const TestProblem one_sample = make_problem(cluster, {{1, 1}}, {{}}, {}, {}, batch_of(1));
  EXPECT_FALSE(make_data_parallel_strategy()->plan(*one_sample).has_value());
}

TEST(DataParallel, DropsADeviceThatCannotHoldTheWeights) {
  Cluster cluster = flat_cluster(3, 1e9, 0, 10e9);
  cluster.devices[1].figures.memory_bytes = figure(1e9);  // too small for 2 GB of weights
  const TestProblem problem = make_problem(cluster, {{1, 1, 1}}, {{}}, {2e9}, {1e3}, batch_of(8));
  const std::optional<Plan> plan = make_data_parallel_strategy()->plan(*problem);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->batch_share[1], 0);
  EXPECT_NEAR(plan->batch_share[0] + plan->batch_share[2], 1, 1e-12);
  EXPECT_TRUE(check_memory(*problem, *plan).fits);
}

}  // namespace
}  // namespace tandem::testing
