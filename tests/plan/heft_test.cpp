#include <gtest/gtest.h>

#include <random>

#include "plan/evaluate.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "plan_test_util.h"

namespace tandem {
namespace {

using testing::flat_cluster;
using testing::make_problem;
using testing::TestProblem;

// HEFT's predicted latency stays within this factor of the best placement found by exhaustive
// search on the small random DAGs below (the worst seen over these seeds is reported by the
// test on failure).
constexpr double kHeftFactor = 1.5;

// A random DAG of `nodes` nodes on `devices` devices: each node reads one or two earlier ones,
// times from 1 to 10 s, one device in five cannot run a node, transfers 0-4 GB over 1 GB/s.
TestProblem random_problem(std::mt19937& rng, int nodes, int devices, double memory = 0) {
  std::uniform_real_distribution<double> seconds(1, 10), bytes(0, 4e9), weights(0, 100);
  std::uniform_int_distribution<int> fifth(0, 4);
  std::vector<std::vector<double>> times(nodes, std::vector<double>(devices));
  std::vector<std::vector<std::pair<int, double>>> successors(nodes);
  std::vector<double> weight_bytes(nodes);
  for (int n = 0; n < nodes; ++n) {
    bool any = false;
    for (int d = 0; d < devices; ++d) {
      times[n][d] = fifth(rng) == 0 ? kInfinity : seconds(rng);
      any = any || times[n][d] < kInfinity;
    }
    if (!any) times[n][0] = seconds(rng);
    weight_bytes[n] = weights(rng);
    if (n == 0) continue;
    const int reads = 1 + fifth(rng) % 2;
    for (int r = 0; r < reads; ++r) {
      const int from = std::uniform_int_distribution<int>(0, n - 1)(rng);
      bool seen = false;
      for (const auto& edge : successors[from]) seen = seen || edge.first == n;
      if (!seen) successors[from].push_back({n, bytes(rng)});
    }
  }
  return make_problem(flat_cluster(devices, 1e9, 1e-3, memory), times, successors, weight_bytes);
}

// The best latency over every placement (each evaluated in node order), or +inf when none fits.
double exhaustive_best(const PlanningProblem& problem) {
  const int nodes = problem.node_count(), devices = problem.device_count();
  std::vector<int> placement(nodes, 0);
  double best = kInfinity;
  while (true) {
    bool runnable = true;
    for (int n = 0; n < nodes && runnable; ++n) runnable = problem.runnable(n, placement[n]);
    if (runnable) {
      Plan plan;
      plan.device_of_node = placement;
      if (check_memory(problem, plan).fits) {
        evaluate_plan(problem, plan);
        best = std::min(best, plan.predicted.latency_seconds);
      }
    }
    int n = 0;
    while (n < nodes && ++placement[n] == devices) placement[n++] = 0;
    if (n == nodes) return best;
  }
}

void expect_valid(const PlanningProblem& problem, const Plan& plan) {
  for (int n = 0; n < problem.node_count(); ++n)
    EXPECT_TRUE(problem.runnable(n, plan.device_of_node[n])) << "node " << n;
  EXPECT_TRUE(check_memory(problem, plan).fits);
  EXPECT_GE(plan.predicted.latency_seconds, plan.lower_bound * (1 - 1e-9));
  EXPECT_LE(plan.efficiency, 1 + 1e-9);
}

TEST(Heft, NearExhaustiveOnSmallDags) {
  std::mt19937 rng(4);
  double worst = 0, total = 0;
  int cases = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int nodes = 4 + trial % 5, devices = 2 + trial % 2;
    const TestProblem problem = random_problem(rng, nodes, devices);
    const std::optional<Plan> plan = make_heft_strategy()->plan(*problem);
    ASSERT_TRUE(plan);
    expect_valid(*problem, *plan);
    const double best = exhaustive_best(*problem);
    EXPECT_GE(plan->predicted.latency_seconds, problem->bound() * (1 - 1e-9));
    EXPECT_GE(best, problem->bound() * (1 - 1e-9));
    const double ratio = plan->predicted.latency_seconds / best;
    worst = std::max(worst, ratio);
    total += ratio;
    ++cases;
  }
  EXPECT_LE(worst, kHeftFactor) << "mean ratio " << total / cases;
  RecordProperty("worst_ratio", std::to_string(worst));
  RecordProperty("mean_ratio", std::to_string(total / cases));
}

TEST(Heft, RespectsMemory) {
  std::mt19937 rng(7);
  int planned = 0;
  for (int trial = 0; trial < 30; ++trial) {
    // Capacity for roughly half the graph's weights and activations on each device.
    const TestProblem problem = random_problem(rng, 6, 3, 4.5e9);
    const std::optional<Plan> plan = make_heft_strategy()->plan(*problem);
    if (!plan) continue;
    ++planned;
    expect_valid(*problem, *plan);
  }
  EXPECT_GT(planned, 0);
}

TEST(Heft, ChainStaysOnTheFastestDevice) {
  // Transfers cost more than any gain from the other device.
  const auto problem =
      make_problem(flat_cluster(2, 1e9), {{1, 2}, {1, 2}, {1, 2}}, {{{1, 1e10}}, {{2, 1e10}}, {}});
  const std::optional<Plan> plan = make_heft_strategy()->plan(*problem);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->device_of_node, (std::vector<int>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(plan->predicted.latency_seconds, 3);
  EXPECT_DOUBLE_EQ(plan->speedup_over_best_single, 1);
}

TEST(Heft, ParallelBranchesSpread) {
  // A fork of four 4 s branches, free transfers: two devices halve the time.
  const auto problem =
      make_problem(flat_cluster(2, 1e15), {{1, 1}, {4, 4}, {4, 4}, {4, 4}, {4, 4}, {1, 1}},
                   {{{1, 1}, {2, 1}, {3, 1}, {4, 1}}, {{5, 1}}, {{5, 1}}, {{5, 1}}, {{5, 1}}, {}});
  const std::optional<Plan> plan = make_heft_strategy()->plan(*problem);
  ASSERT_TRUE(plan);
  EXPECT_NEAR(plan->predicted.latency_seconds, 10, 1e-6);
  EXPECT_NEAR(plan->speedup_over_best_single, 18.0 / 10, 1e-6);
}

TEST(Heft, InsertsIntoIdleGaps) {
  // Node 3 (short, independent) fits in device 0's idle gap while node 2 waits for a transfer.
  const auto problem = make_problem(flat_cluster(2, 1e9), {{1, 9}, {9, 1}, {2, 9}, {1, 9}},
                                    {{{1, 1e9}}, {{2, 1e9}}, {}, {}});
  const std::optional<Plan> plan = make_heft_strategy()->plan(*problem);
  ASSERT_TRUE(plan);
  expect_valid(*problem, *plan);
  EXPECT_LE(plan->predicted.latency_seconds, exhaustive_best(*problem) + 1e-9);
}

TEST(Single, NulloptWhenADeviceCannotRunEverything) {
  const auto problem = make_problem(flat_cluster(2), {{1, kInfinity}, {1, 1}}, {{{1, 1}}, {}});
  EXPECT_FALSE(make_single_strategy(1, "d1")->plan(*problem));
  const std::optional<Plan> plan = make_single_strategy(0, "d0")->plan(*problem);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->strategy, "single:d0");
  EXPECT_EQ(make_single_strategy(1, "d1")->name(), "single:d1");
}

TEST(Single, NulloptWhenItDoesNotFit) {
  const auto problem =
      make_problem(flat_cluster(1, 1e9, 0, 100), {{1}, {1}}, {{{1, 1}}, {}}, {60, 60});
  EXPECT_FALSE(make_single_strategy(0, "d0")->plan(*problem));
}

TEST(Greedy, FirstDeviceOfThePriorityThatRunsTheNode) {
  const auto problem = make_problem(flat_cluster(3), {{5, 1, 1}, {kInfinity, 1, 5}, {5, 5, 5}},
                                    {{{1, 1}}, {{2, 1}}, {}});
  const std::optional<Plan> plan = make_greedy_strategy({0, 2, 1})->plan(*problem);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->device_of_node, (std::vector<int>{0, 2, 0}));
  EXPECT_EQ(plan->strategy, "greedy");
}

TEST(Greedy, DefaultPriorityPutsAcceleratorsFirst) {
  Cluster cluster = flat_cluster(2);
  cluster.devices[0].kind = DeviceKind::kCpu;
  const auto problem = make_problem(cluster, {{1, 1}}, {{}});
  const std::optional<Plan> plan = make_strategy("greedy", cluster)->plan(*problem);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->device_of_node, (std::vector<int>{1}));
}

TEST(Greedy, FallsDownTheListWhenWeightsOverflow) {
  const auto problem =
      make_problem(flat_cluster(2, 1e9, 0, 100), {{1, 1}, {1, 1}}, {{{1, 1}}, {}}, {60, 60});
  const std::optional<Plan> plan = make_greedy_strategy({0, 1})->plan(*problem);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->device_of_node, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace tandem
