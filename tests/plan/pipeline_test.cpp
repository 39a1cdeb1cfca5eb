// The pipeline strategy: its split against every split and device assignment on small chains,
// memory and support, and the bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "plan/evaluate.h"
#include "plan/pipeline_split.h"
#include "plan/strategies.h"
#include "plan/synthetic.h"
#include "plan_test_util.h"

namespace tandem::testing {
namespace {

using Successors = std::vector<std::vector<std::pair<int, double>>>;

Successors chain_edges(int nodes, std::mt19937_64& random) {
  Successors successors(nodes);
  for (int n = 0; n + 1 < nodes; ++n) {
    successors[n] = {{n + 1, 1e5 * static_cast<double>(1 + random() % 100)}};
  }
  return successors;
}

std::vector<std::vector<double>> random_seconds(int nodes, int devices, std::mt19937_64& random) {
  std::vector<std::vector<double>> seconds(nodes, std::vector<double>(devices));
  for (auto& row : seconds) {
    for (double& s : row) s = 1e-3 * static_cast<double>(1 + random() % 10);
  }
  return seconds;
}

PlanOptions throughput_options(int microbatches) {
  PlanOptions options;
  options.objective = Objective::kThroughput;
  options.microbatches = microbatches;
  options.batch = 8;
  return options;
}

// Every split of the chain into contiguous stages on distinct devices, by the evaluator.
double exhaustive_throughput(const PlanningProblem& problem) {
  const int nodes = problem.node_count(), devices = problem.device_count();
  double best = 0;
  // A bit set of the positions after which a stage ends.
  for (int cuts = 0; cuts < (1 << (nodes - 1)); ++cuts) {
    std::vector<std::pair<int, int>> ranges;
    int first = 0;
    for (int n = 0; n < nodes; ++n) {
      if (n == nodes - 1 || (cuts >> n & 1)) {
        ranges.push_back({first, n});
        first = n + 1;
      }
    }
    if (static_cast<int>(ranges.size()) > devices) continue;
    std::vector<int> order(devices);
    std::iota(order.begin(), order.end(), 0);
    do {
      Plan plan;
      plan.microbatches = problem.options().microbatches;
      plan.device_of_node.assign(nodes, 0);
      for (size_t s = 0; s < ranges.size(); ++s) {
        plan.stages.push_back({order[s], ranges[s].first, ranges[s].second, 0});
      }
      evaluate_plan(problem, plan);
      if (check_memory(problem, plan).fits)
        best = std::max(best, plan.predicted.throughput_samples_per_second);
    } while (std::next_permutation(order.begin(), order.end()));
  }
  return best;
}

TEST(Pipeline, EqualsExhaustiveSplitsOnSmallChains) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 30; ++trial) {
    const int nodes = 2 + static_cast<int>(random() % 6);
    const Cluster cluster = flat_cluster(3, 1e9, 1e-5);
    const TestProblem problem =
        make_problem(cluster, random_seconds(nodes, 3, random), chain_edges(nodes, random), {}, {},
                     throughput_options(1 + static_cast<int>(random() % 4)));
    const std::optional<Plan> plan = make_pipeline_strategy()->plan(*problem);
    ASSERT_TRUE(plan.has_value());
    const double optimum = exhaustive_throughput(*problem);
    EXPECT_NEAR(plan->predicted.throughput_samples_per_second, optimum, optimum * 1e-5)
        << "trial " << trial << ", " << nodes << " nodes";
  }
}

TEST(PipelineSplit, BottleneckIsTheLargestStageOrBoundary) {
  // Three equal nodes, three equal devices, free transfers: one node per stage.
  const Cluster cluster = flat_cluster(3, 1e12, 0);
  const TestProblem problem =
      make_problem(cluster, {{3, 3, 3}, {3, 3, 3}, {3, 3, 3}}, {{{1, 1.0}}, {{2, 1.0}}, {}}, {}, {},
                   throughput_options(1));
  const PipelineSplitter splitter(*problem);
  const auto split = splitter.split({0, 1, 2});
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->ends, (std::vector<int>{1, 2, 3}));
  EXPECT_NEAR(split->bottleneck, 3, 1e-5);
  EXPECT_FALSE(splitter.split({0, 1, 2}, 3 * (1 - 1e-3)).has_value());  // nothing beats it
}

TEST(Pipeline, MicrobatchesScaleWorkButNotLaunchOverhead) {
  Cluster cluster = flat_cluster(1);
  cluster.devices[0].figures.launch_overhead = figure(1e-3);
  const TestProblem problem = make_problem(cluster, {{5e-3}}, {{}}, {}, {}, throughput_options(4));
  const PipelineSplitter splitter(*problem);
  EXPECT_NEAR(splitter.node_seconds(0, 0), 1e-3 + 4e-3 / 4, 1e-12);
}

TEST(Pipeline, StagesFitMemory) {
  // Six nodes of 1 GB of weights each, devices of 2.5 GB: three stages of two nodes.
  const Cluster cluster = flat_cluster(3, 1e9, 0, 2.5e9);
  std::vector<std::vector<double>> seconds(6, std::vector<double>(3, 1e-3));
  Successors successors(6);
  for (int n = 0; n < 5; ++n) successors[n] = {{n + 1, 1e3}};
  const TestProblem problem = make_problem(cluster, seconds, successors,
                                           std::vector<double>(6, 1e9), {}, throughput_options(2));
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(*problem);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->stages.size(), 3u);
  EXPECT_TRUE(check_memory(*problem, *plan).fits);

  const TestProblem too_big = make_problem(
      cluster, seconds, successors, std::vector<double>(6, 1.3e9), {}, throughput_options(2));
  EXPECT_FALSE(make_pipeline_strategy()->plan(*too_big).has_value());
}

TEST(Pipeline, StagesAvoidDevicesThatCannotRunTheirNodes) {
  const Cluster cluster = flat_cluster(2, 1e12, 0);
  // Node 1 cannot run on device 0, which is otherwise the fastest.
  const TestProblem problem =
      make_problem(cluster, {{1, 5}, {kInfinity, 5}, {1, 5}}, {{{1, 1.0}}, {{2, 1.0}}, {}}, {}, {},
                   throughput_options(1));
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(*problem);
  ASSERT_TRUE(plan.has_value());
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(problem->runnable(n, plan->device_of_node[n]));
}

TEST(Pipeline, SyntheticPlansFitAndStayUnderTheBound) {
  for (DagShape shape : {DagShape::kLayered, DagShape::kTransformer, DagShape::kRandom}) {
    SyntheticSpec spec;
    spec.shape = shape;
    spec.nodes = 2000;
    spec.devices = 8;
    spec.options = throughput_options(8);
    const SyntheticProblem synthetic = make_synthetic_problem(spec);
    const PlanningProblem& problem = *synthetic.problem;
    const std::optional<Plan> plan = make_pipeline_strategy()->plan(problem);
    ASSERT_TRUE(plan.has_value()) << dag_shape_name(shape);
    EXPECT_TRUE(check_memory(problem, *plan).fits);
    for (int n = 0; n < problem.node_count(); ++n)
      ASSERT_TRUE(problem.runnable(n, plan->device_of_node[n]));
    EXPECT_LE(plan->predicted.throughput_samples_per_second, plan->lower_bound * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace tandem::testing
