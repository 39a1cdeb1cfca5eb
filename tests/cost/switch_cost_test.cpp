// Transfers through switches (cut through: latencies, and the bytes once at the slowest link),
// every device's transfer time from one search against the pair-by-pair figure, and cost twins.
#include <gtest/gtest.h>

#include "cost/cost_model.h"
#include "test_cluster.h"

namespace tandem {
namespace {

using testing::gpu;
using testing::host;
using testing::link;

// Hosts a, b and c, one GPU each, their network ports on switch s; port c is slower.
Cluster switched() {
  Cluster cluster;
  HostSpec fabric = host("s");
  fabric.is_switch = true;
  cluster.hosts = {fabric, host("a"), host("b"), host("c")};
  cluster.devices = {gpu("ga", "a"), gpu("gb", "b"), gpu("gc", "c")};
  cluster.links = {link("ga", "a", LinkKind::kPcie, 60e9, 60e9, 10e-6),
                   link("gb", "b", LinkKind::kPcie, 60e9, 60e9, 10e-6),
                   link("gc", "c", LinkKind::kPcie, 60e9, 60e9, 10e-6),
                   link("a", "s", LinkKind::kNetwork, 25e9, 25e9, 1e-6),
                   link("b", "s", LinkKind::kNetwork, 25e9, 25e9, 2e-6),
                   link("c", "s", LinkKind::kNetwork, 10e9, 12.5e9, 3e-6)};
  return cluster;
}

constexpr double kBytes = 64e6;

TEST(SwitchCost, ASwitchCutsThrough) {
  const CostModel model(switched());
  const double pcie = 10e-6 + kBytes / 60e9;
  // a -> s -> b: both ports' latencies, the bytes once.
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, 0, 1),
                   pcie + (1e-6 + 2e-6 + kBytes / 25e9) + pcie);
  // a -> s -> c: c's port takes 12.5 GB/s from the switch (its link's backward direction).
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, 0, 2),
                   pcie + (1e-6 + 3e-6 + kBytes / 12.5e9) + pcie);
  // c -> s -> a: 10 GB/s out of c, 25 into a: the slower counts.
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, 2, 0),
                   pcie + (3e-6 + 1e-6 + kBytes / 10e9) + pcie);
  EXPECT_TRUE(model.relays({3, true}));    // a -> s
  EXPECT_FALSE(model.relays({3, false}));  // s -> a
  EXPECT_FALSE(model.relays({0, true}));   // ga -> a
}

TEST(SwitchCost, AHostBetweenHostsStagesTheBytes) {
  Cluster cluster = switched();
  cluster.hosts[0].is_switch = false;  // s is a host: store and forward
  const CostModel model(cluster);
  const double pcie = 10e-6 + kBytes / 60e9;
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, 0, 1),
                   pcie + (1e-6 + kBytes / 25e9) + (2e-6 + kBytes / 25e9) + pcie);
}

void expect_rows_match(const Cluster& cluster) {
  const CostModel model(cluster);
  const double sizes[] = {0, 1, 3e6, 1 << 30};
  for (int from = 0; from < static_cast<int>(cluster.devices.size()); ++from) {
    const std::vector<std::vector<double>> rows = model.transfer_seconds_from(from, sizes);
    for (int to = 0; to < static_cast<int>(cluster.devices.size()); ++to) {
      for (size_t s = 0; s < std::size(sizes); ++s) {
        // Bit for bit: the planner's figures must not depend on how they were asked for.
        EXPECT_EQ(rows[s][to], model.transfer_seconds(sizes[s], from, to))
            << from << " -> " << to << ", " << sizes[s] << " bytes";
      }
    }
  }
}

TEST(SwitchCost, EveryDeviceFromOneSearchMatchesPairByPair) {
  expect_rows_match(switched());
  expect_rows_match(testing::compute_cluster());
  Cluster staged = switched();
  staged.hosts[0].is_switch = false;
  expect_rows_match(staged);
}

TEST(SwitchCost, AlikeDevicesAreCostTwins) {
  Cluster cluster = switched();
  cluster.devices[2].figures.launch_overhead = testing::figure(7e-6);
  const CostModel model(cluster);
  EXPECT_EQ(model.cost_twin(0), 0);
  EXPECT_EQ(model.cost_twin(1), 0);
  EXPECT_EQ(model.cost_twin(2), 2);  // another launch overhead
  const CostModel mixed(testing::compute_cluster());
  for (int d = 0; d < 4; ++d) EXPECT_EQ(mixed.cost_twin(d), d);
}

}  // namespace
}  // namespace tandem
