// Synthetic problems: shapes, determinism, the cluster, costs from the cost model.
#include "plan/synthetic.h"

#include <gtest/gtest.h>

namespace tandem {
namespace {

SyntheticSpec spec_of(DagShape shape, int nodes, int devices, uint64_t seed = 1) {
  SyntheticSpec spec;
  spec.shape = shape;
  spec.nodes = nodes;
  spec.devices = devices;
  spec.seed = seed;
  return spec;
}

int edge_count(const PlanningProblem& problem) {
  int edges = 0;
  for (int n = 0; n < problem.node_count(); ++n) {
    for (const auto& [successor, bytes] : problem.successors(n)) {
      EXPECT_GT(successor, n);
      EXPECT_GT(bytes, 0);
      ++edges;
    }
  }
  return edges;
}

TEST(Synthetic, ShapesHaveTheirEdges) {
  for (DagShape shape :
       {DagShape::kChain, DagShape::kLayered, DagShape::kTransformer, DagShape::kRandom}) {
    const SyntheticProblem synthetic = make_synthetic_problem(spec_of(shape, 500, 4));
    EXPECT_EQ(synthetic.problem->node_count(), 500) << dag_shape_name(shape);
    const int edges = edge_count(*synthetic.problem);
    if (shape == DagShape::kChain) {
      EXPECT_EQ(edges, 499);
    } else {
      EXPECT_GT(edges, 500) << dag_shape_name(shape);
    }
  }
}

TEST(Synthetic, SameSeedSameProblem) {
  const SyntheticProblem a = make_synthetic_problem(spec_of(DagShape::kRandom, 300, 4, 9));
  const SyntheticProblem b = make_synthetic_problem(spec_of(DagShape::kRandom, 300, 4, 9));
  const SyntheticProblem c = make_synthetic_problem(spec_of(DagShape::kRandom, 300, 4, 10));
  bool differs = false;
  for (int n = 0; n < 300; ++n) {
    EXPECT_EQ(a.problem->successors(n), b.problem->successors(n));
    for (int d = 0; d < 4; ++d) EXPECT_EQ(a.problem->seconds(n, d), b.problem->seconds(n, d));
    differs = differs || a.problem->successors(n) != c.problem->successors(n);
  }
  EXPECT_TRUE(differs);
}

TEST(Synthetic, ClusterMixesKindsAcrossHosts) {
  const Cluster cluster = synthetic_cluster(16);
  ASSERT_EQ(cluster.devices.size(), 16u);
  EXPECT_EQ(cluster.hosts.size(), 2u);
  int kinds[3] = {0, 0, 0};
  for (const DeviceSpec& device : cluster.devices) ++kinds[static_cast<int>(device.kind)];
  EXPECT_GT(kinds[static_cast<int>(DeviceKind::kCpu)], 0);
  EXPECT_GT(kinds[static_cast<int>(DeviceKind::kGpu)], 0);
  EXPECT_GT(kinds[static_cast<int>(DeviceKind::kTpu)], 0);
  EXPECT_FALSE(cluster.path(0, 15).empty());  // across the network
}

TEST(Synthetic, CostsComeFromTheCostModel) {
  // The TPU (device 1) cannot run NonZero; the H100 (device 0) runs everything, and a matmul
  // is much faster on it than on the CPU core (device 3).
  const SyntheticProblem synthetic = make_synthetic_problem(spec_of(DagShape::kRandom, 2000, 4));
  const PlanningProblem& problem = *synthetic.problem;
  int tpu_cannot = 0;
  for (int n = 0; n < problem.node_count(); ++n) {
    EXPECT_TRUE(problem.runnable(n, 0));
    EXPECT_GT(problem.seconds(n, 0), 0);
    if (!problem.runnable(n, 1)) ++tpu_cannot;
    if (problem.weight_bytes(n) > 0) {
      EXPECT_GT(problem.seconds(n, 3), 10 * problem.seconds(n, 0));
    }
  }
  EXPECT_GT(tpu_cannot, 0);
  EXPECT_LT(tpu_cannot, problem.node_count() / 10);
}

}  // namespace
}  // namespace tandem
