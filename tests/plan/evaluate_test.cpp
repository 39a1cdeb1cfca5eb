#include "plan/evaluate.h"

#include <gtest/gtest.h>

#include "plan_test_util.h"
#include "sim/simulator.h"

namespace tandem {
namespace {

using testing::flat_cluster;
using testing::make_problem;

Plan placed(std::vector<int> devices) {
  Plan plan;
  plan.device_of_node = std::move(devices);
  return plan;
}

TEST(Evaluate, ChainOnOneDeviceSumsItsNodes) {
  const auto problem =
      make_problem(flat_cluster(2), {{1, 2}, {2, 1}, {3, 3}}, {{{1, 1e9}}, {{2, 1e9}}, {}});
  Plan plan = placed({0, 0, 0});
  evaluate_plan(*problem, plan);
  EXPECT_DOUBLE_EQ(plan.predicted.latency_seconds, 6);
  EXPECT_DOUBLE_EQ(plan.predicted.busy_seconds[0], 6);
  EXPECT_EQ(plan.transfers.size(), 0u);
  ASSERT_EQ(plan.segments.size(), 1u);
  EXPECT_EQ(plan.segments[0].nodes, (std::vector<int>{0, 1, 2}));
}

TEST(Evaluate, TransferBetweenDevicesIsCharged) {
  // 1 GB over two 1 GB/s host links with 1 ms latency each: 2.002 s.
  const auto problem = make_problem(flat_cluster(2, 1e9, 1e-3), {{1, 2}, {2, 1}}, {{{1, 1e9}}, {}});
  Plan plan = placed({0, 1});
  evaluate_plan(*problem, plan);
  EXPECT_NEAR(plan.predicted.latency_seconds, 1 + 2.002 + 1, 1e-9);
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].from_device, 0);
  EXPECT_EQ(plan.transfers[0].to_device, 1);
  EXPECT_EQ(plan.transfers[0].path.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.predicted.link_bytes[0], 1e9);
  EXPECT_DOUBLE_EQ(plan.predicted.link_bytes[1], 1e9);
  EXPECT_EQ(plan.segments.size(), 2u);
}

TEST(Evaluate, TransfersBetweenOnePairQueue) {
  // Node 0 feeds 1 and 2 on device 1 with two values: they cross one after the other.
  const auto problem =
      make_problem(flat_cluster(2, 1e9), {{1, 9}, {9, 1}, {9, 1}}, {{{1, 1e9}, {2, 1e9}}, {}, {}});
  Plan plan = placed({0, 1, 1});
  evaluate_plan(*problem, plan);
  // Arrivals at 1 + 2 = 3 and 3 + 2 = 5; nodes 1 and 2 run 3-4 and 5-6.
  EXPECT_DOUBLE_EQ(plan.predicted.latency_seconds, 6);
}

TEST(Evaluate, IndependentBranchesRunInParallel) {
  const auto problem = make_problem(flat_cluster(2), {{2, 2}, {2, 2}}, {{}, {}});
  Plan apart = placed({0, 1});
  evaluate_plan(*problem, apart);
  EXPECT_DOUBLE_EQ(apart.predicted.latency_seconds, 2);
  Plan together = placed({0, 0});
  evaluate_plan(*problem, together);
  EXPECT_DOUBLE_EQ(together.predicted.latency_seconds, 4);
}

TEST(Evaluate, ThroughputIsBatchOverLatency) {
  PlanOptions options;
  options.batch = 8;
  const auto problem = make_problem(flat_cluster(1), {{2}}, {{}}, {}, {}, options);
  Plan plan = placed({0});
  evaluate_plan(*problem, plan);
  EXPECT_DOUBLE_EQ(plan.predicted.throughput_samples_per_second, 4);
}

TEST(Evaluate, CostFromPricesOfDevicesUsed) {
  PlanOptions options;
  options.batch = 10;
  // Two devices at $3600/h = $1/s each; only one used, 2 s per 10 samples.
  const auto problem =
      make_problem(flat_cluster(2, 1e9, 0, 0, 3600), {{2, 2}}, {{}}, {}, {}, options);
  Plan plan = placed({0});
  evaluate_plan(*problem, plan);
  EXPECT_DOUBLE_EQ(plan.predicted.cost_per_million_samples, 1.0 / 5 * 1e6);
}

TEST(Evaluate, UnpricedDeviceGivesNoCost) {
  const auto problem = make_problem(flat_cluster(1), {{2}}, {{}});
  Plan plan = placed({0});
  evaluate_plan(*problem, plan);
  EXPECT_EQ(plan.predicted.cost_per_million_samples, 0);
}

TEST(Evaluate, SegmentsNeverLeaveAndComeBack) {
  // 0 -> 1 -> 2 and 0 -> 2: with 0 and 2 on device 0 and 1 on device 1, node 2 must not join
  // node 0's segment (the path through device 1 would leave it and come back).
  const auto problem =
      make_problem(flat_cluster(2), {{1, 1}, {1, 1}, {1, 1}}, {{{1, 1}, {2, 1}}, {{2, 1}}, {}});
  Plan plan = placed({0, 1, 0});
  evaluate_plan(*problem, plan);
  EXPECT_EQ(plan.segments.size(), 3u);
}

TEST(Evaluate, SegmentJoinsConnectedNodes) {
  // Two branches on device 0 meeting in node 2: one segment as long as nothing else intervenes.
  const auto problem =
      make_problem(flat_cluster(2), {{1, 1}, {1, 1}, {1, 1}}, {{{2, 1}}, {{2, 1}}, {}});
  Plan plan = placed({0, 0, 0});
  evaluate_plan(*problem, plan);
  // Node 1 reads nothing from node 0's segment: it opens a second one; node 2 joins one of them.
  EXPECT_LE(plan.segments.size(), 2u);
  size_t total = 0;
  for (const Segment& segment : plan.segments) total += segment.nodes.size();
  EXPECT_EQ(total, 3u);
}

TEST(Evaluate, MemoryCountsWeightsAndLiveActivations) {
  const auto problem = make_problem(flat_cluster(2, 1e9, 0, 1000), {{1, 1}, {1, 1}},
                                    {{{1, 100}}, {}}, {300, 400}, {100, 50});
  Plan plan = placed({0, 0});
  evaluate_plan(*problem, plan);
  // Weights 700; live: node 0's 100 bytes, then those plus node 1's 50.
  EXPECT_DOUBLE_EQ(plan.predicted.memory_bytes[0], 850);
  EXPECT_TRUE(check_memory(*problem, plan).fits);
}

TEST(Evaluate, CheckMemoryNamesTheDeviceShort) {
  const auto problem = make_problem(flat_cluster(2, 1e9, 0, 600), {{1, 1}, {1, 1}},
                                    {{{1, 100}}, {}}, {300, 400}, {100, 50});
  const MemoryCheck check = check_memory(*problem, placed({0, 0}));
  EXPECT_FALSE(check.fits);
  EXPECT_EQ(check.device, 0);
  EXPECT_DOUBLE_EQ(check.short_bytes, 250);
  // Device 1 holds node 1's weights (400), the 100 bytes arriving and its own 50.
  EXPECT_TRUE(check_memory(*problem, placed({0, 1})).fits);
}

TEST(Evaluate, PipelineOverlapsMicrobatches) {
  PlanOptions options;
  options.batch = 4;
  options.objective = Objective::kThroughput;
  // Two nodes of 4 s each (no launch overhead): two stages, 4 micro-batches of 1 s per stage.
  const auto problem =
      make_problem(flat_cluster(2, 1e12), {{4, 4}, {4, 4}}, {{{1, 0}}, {}}, {}, {}, options);
  Plan plan = placed({0, 1});
  plan.microbatches = 4;
  plan.stages = {{0, 0, 0, 0}, {1, 1, 1, 0}};
  evaluate_plan(*problem, plan);
  EXPECT_DOUBLE_EQ(plan.stages[0].seconds, 1);
  EXPECT_NEAR(plan.predicted.latency_seconds, 2 + 3 * 1, 1e-9);
  EXPECT_NEAR(plan.predicted.throughput_samples_per_second, 1, 1e-9);
  EXPECT_LE(plan.predicted.throughput_samples_per_second, plan.lower_bound * (1 + 1e-12));
}

TEST(Evaluate, DataParallelSplitsTheBatch) {
  PlanOptions options;
  options.batch = 4;
  const auto problem =
      make_problem(flat_cluster(2), {{4, 2}, {4, 2}}, {{{1, 0}}, {}}, {}, {}, options);
  Plan plan = placed({0, 0});
  plan.batch_share = {1.0 / 3, 2.0 / 3};
  evaluate_plan(*problem, plan);
  EXPECT_NEAR(plan.predicted.latency_seconds, 8.0 / 3, 1e-12);
  EXPECT_NEAR(plan.predicted.busy_seconds[1], 8.0 / 3, 1e-12);
  EXPECT_GE(plan.predicted.latency_seconds, plan.lower_bound * (1 - 1e-12));
}

TEST(Evaluate, SpeedupOverBestSingleDevice) {
  const auto problem = make_problem(flat_cluster(2), {{2, 3}, {2, 3}}, {{}, {}});
  Plan plan = placed({0, 1});
  evaluate_plan(*problem, plan);
  EXPECT_EQ(problem->best_single_device(), 0);
  EXPECT_DOUBLE_EQ(plan.speedup_over_best_single, 4.0 / 3);
}

// The runtime's own costs, from the figures of the devices a plan runs on: the evaluator and
// the simulator agree.
TEST(Evaluate, RunOverheadOncePerBatchTheLargestOfThePlansDevices) {
  Cluster cluster = flat_cluster(2);
  cluster.devices[0].figures.run_overhead = testing::figure(0.25);
  cluster.devices[1].figures.run_overhead = testing::figure(0.5);
  PlanOptions options;
  options.batch = 13;
  const auto problem = make_problem(cluster, {{1, 2}, {2, 1}, {3, 3}}, {{{1, 1e9}}, {{2, 1e9}}, {}},
                                    {}, {}, options);
  Plan plan = placed({0, 0, 0});
  EXPECT_DOUBLE_EQ(problem->run_overhead(plan), 0.25);
  evaluate_plan(*problem, plan);
  EXPECT_DOUBLE_EQ(plan.predicted.latency_seconds, 6.25);
  EXPECT_DOUBLE_EQ(plan.predicted.throughput_samples_per_second, 13 / 6.25);
  // The best single device pays it too: this plan is that device, no faster and no slower.
  EXPECT_DOUBLE_EQ(plan.speedup_over_best_single, 1);
  EXPECT_DOUBLE_EQ(simulate(*problem, plan).latency_seconds, 6.25);
  // A plan that also runs on device 1 waits for its worker too.
  Plan split = placed({0, 1, 0});
  EXPECT_DOUBLE_EQ(problem->run_overhead(split), 0.5);
  evaluate_plan(*problem, split);
  EXPECT_DOUBLE_EQ(simulate(*problem, split).latency_seconds, split.predicted.latency_seconds);
}

TEST(Evaluate, ProgramStepOncePerRunOfEachSegment) {
  // A chain of 1 s nodes on d0, d1, d0: d0 runs two segments, each a program step of 0.1 s.
  Cluster cluster = flat_cluster(2, 1e12);
  cluster.devices[0].figures.step_overhead = testing::figure(0.1);
  const auto problem = make_problem(cluster, {{1, 1}, {1, 1}, {1, 1}}, {{{1, 0}}, {{2, 0}}, {}});
  EXPECT_DOUBLE_EQ(problem->segment_overhead(0), 0.1);
  EXPECT_DOUBLE_EQ(problem->segment_overhead(1), 0);
  Plan plan = placed({0, 1, 0});
  evaluate_plan(*problem, plan);
  ASSERT_EQ(plan.segments.size(), 3u);
  EXPECT_NEAR(plan.predicted.latency_seconds, 3.2, 1e-9);
  EXPECT_NEAR(plan.predicted.busy_seconds[0], 2.2, 1e-9);
  EXPECT_NEAR(simulate(*problem, plan).latency_seconds, 3.2, 1e-9);
  // All on d0: one segment, one step.
  Plan whole = placed({0, 0, 0});
  evaluate_plan(*problem, whole);
  EXPECT_NEAR(whole.predicted.latency_seconds, 3.1, 1e-9);
  EXPECT_NEAR(simulate(*problem, whole).latency_seconds, 3.1, 1e-9);
}

TEST(Evaluate, ProgramStepOncePerMicrobatchAndOncePerReplica) {
  Cluster cluster = flat_cluster(2, 1e12);
  cluster.devices[0].figures.step_overhead = testing::figure(0.1);
  cluster.devices[1].figures.step_overhead = testing::figure(0.1);
  PlanOptions options;
  options.batch = 4;
  const auto problem = make_problem(cluster, {{4, 4}, {4, 4}}, {{{1, 0}}, {}}, {}, {}, options);
  // Two stages, 4 micro-batches of 1 s per stage: each stage's run pays its step.
  Plan pipeline = placed({0, 1});
  pipeline.microbatches = 4;
  pipeline.stages = {{0, 0, 0, 0}, {1, 1, 1, 0}};
  evaluate_plan(*problem, pipeline);
  EXPECT_NEAR(pipeline.stages[0].seconds, 1.1, 1e-9);
  EXPECT_NEAR(pipeline.predicted.busy_seconds[0], 4 * 1.1, 1e-9);
  EXPECT_NEAR(pipeline.predicted.latency_seconds, 2.2 + 3 * 1.1, 1e-9);
  EXPECT_NEAR(simulate(*problem, pipeline).latency_seconds, 2.2 + 3 * 1.1, 1e-9);
  // Half the batch on each device: each replica, one segment of both nodes, pays one step.
  Plan shared = placed({0, 0});
  shared.batch_share = {0.5, 0.5};
  evaluate_plan(*problem, shared);
  EXPECT_NEAR(shared.predicted.latency_seconds, 4 + 0.1, 1e-9);
  EXPECT_NEAR(simulate(*problem, shared).latency_seconds, 4 + 0.1, 1e-9);
}

TEST(LowerBound, CriticalPathWhenItDominates) {
  const auto problem = make_problem(flat_cluster(2), {{2, 3}, {1, 5}}, {{{1, 1e12}}, {}});
  EXPECT_DOUBLE_EQ(lower_bound(*problem), 3);
}

TEST(LowerBound, WorkOverAggregateSpeed) {
  // Eight independent nodes, 1 s on either of two devices: at least 4 s.
  std::vector<std::vector<double>> seconds(8, {1, 1});
  const auto problem =
      make_problem(flat_cluster(2), seconds, std::vector<std::vector<std::pair<int, double>>>(8));
  EXPECT_NEAR(lower_bound(*problem), 4, 1e-9);
}

TEST(LowerBound, ThroughputIsDivisibleLoad) {
  PlanOptions options;
  options.objective = Objective::kThroughput;
  options.batch = 6;
  // Device 0 does the graph in 3 s, device 1 in 6 s: together at most 6 / 2 = 3 samples/s.
  const auto problem =
      make_problem(flat_cluster(2), {{1, 2}, {2, 4}}, {{{1, 0}}, {}}, {}, {}, options);
  EXPECT_GE(lower_bound(*problem), 3 - 1e-9);
  EXPECT_LE(lower_bound(*problem), 3 * 1.05);
}

}  // namespace
}  // namespace tandem
