// The simulator on hosts joined by a switch: a transfer crosses the stretch through the switch
// at once (both ports' latencies, then the bytes on both links together), as the evaluator
// predicts; two senders into one host share its port; a host in the switch's place stages the
// bytes instead.
#include <gtest/gtest.h>

#include "plan/plan_test_util.h"
#include "sim/simulator.h"

namespace tandem {
namespace {

using testing::make_problem;

constexpr double kTolerance = 1e-12;
constexpr double kPcie = 50e9, kPcieLatency = 2e-6, kPort = 25e9, kPortLatency = 1e-6;

// Three hosts with one device each; each host's port on switch s (or on host s when
// `staged`).
Cluster three_hosts(bool staged = false) {
  Cluster cluster;
  HostSpec fabric = testing::host("s");
  fabric.is_switch = !staged;
  cluster.hosts = {fabric, testing::host("h0"), testing::host("h1"), testing::host("h2")};
  for (int d = 0; d < 3; ++d) {
    const std::string id = "d" + std::to_string(d), host = "h" + std::to_string(d);
    DeviceSpec spec = testing::gpu(id, host);
    spec.figures.launch_overhead = {};
    cluster.devices.push_back(spec);
    cluster.links.push_back(testing::link(id, host, LinkKind::kPcie, kPcie, kPcie, kPcieLatency));
    cluster.links.push_back(
        testing::link(host, "s", LinkKind::kNetwork, kPort, kPort, kPortLatency));
  }
  return cluster;
}

Plan placed(std::vector<int> device_of_node) {
  Plan plan;
  plan.device_of_node = std::move(device_of_node);
  return plan;
}

TEST(SwitchSimulation, OneTransferCutsThroughAsTheEvaluatorSays) {
  const double bytes = 8e6;
  const auto problem =
      make_problem(three_hosts(), {{1e-3, 9, 9}, {9, 9, 2e-3}}, {{{1, bytes}}, {}});
  SimulationOptions options;
  options.record_timeline = true;
  const SimulationResult result = simulate(*problem, placed({0, 2}), options);
  const double pcie = kPcieLatency + bytes / kPcie;
  const double through_switch = 2 * kPortLatency + bytes / kPort;
  EXPECT_NEAR(result.latency_seconds, 1e-3 + pcie + through_switch + pcie + 2e-3, kTolerance);
  EXPECT_NEAR(problem->transfer_seconds(bytes, 0, 2), pcie + through_switch + pcie, kTolerance);
  // Both ports carried the bytes, at the same time.
  EXPECT_DOUBLE_EQ(result.links[1].bytes, bytes);  // h0 - s
  EXPECT_DOUBLE_EQ(result.links[5].bytes, bytes);  // h2 - s
  EXPECT_NEAR(result.links[1].busy_seconds, bytes / kPort, kTolerance);
  EXPECT_NEAR(result.links[5].busy_seconds, bytes / kPort, kTolerance);
  int spans = 0;
  for (const TimelineSpan& span : result.timeline.spans) {
    if (span.name != "n0 -> d2") continue;
    ++spans;
    if (result.timeline.tracks[span.track].name.find("-s") != std::string::npos)
      EXPECT_NEAR(span.duration_seconds, through_switch, kTolerance);
  }
  EXPECT_EQ(spans, 4);  // PCIe, both ports, PCIe
}

TEST(SwitchSimulation, TwoSendersShareTheReceiversPort) {
  const double bytes = 8e6;
  const auto problem = make_problem(three_hosts(), {{1e-3, 9, 9}, {9, 1e-3, 9}, {9, 9, 1e-3}},
                                    {{{2, bytes}}, {{2, bytes}}, {}});
  const SimulationResult result = simulate(*problem, placed({0, 1, 2}));
  // Each sender's own port is free, h2's is shared: the stretch takes twice the bytes' time;
  // then h2's PCIe link is shared too.
  const double expected = 1e-3 + (kPcieLatency + bytes / kPcie) +
                          (2 * kPortLatency + 2 * bytes / kPort) +
                          (kPcieLatency + 2 * bytes / kPcie) + 1e-3;
  EXPECT_NEAR(result.latency_seconds, expected, kTolerance);
  EXPECT_DOUBLE_EQ(result.links[5].bytes, 2 * bytes);
}

TEST(SwitchSimulation, AHostInTheSwitchsPlaceStagesTheBytes) {
  const double bytes = 8e6;
  const auto problem =
      make_problem(three_hosts(true), {{1e-3, 9, 9}, {9, 9, 2e-3}}, {{{1, bytes}}, {}});
  const SimulationResult result = simulate(*problem, placed({0, 2}));
  const double pcie = kPcieLatency + bytes / kPcie, port = kPortLatency + bytes / kPort;
  EXPECT_NEAR(result.latency_seconds, 1e-3 + pcie + port + port + pcie + 2e-3, kTolerance);
}

// Data-parallel shares on a thousand alike devices: every device's time is its share's.
TEST(SwitchSimulation, DataParallelOverManyDevices) {
  Cluster cluster;
  cluster.hosts = {testing::host("h0")};
  constexpr int kDevices = 1000;
  for (int d = 0; d < kDevices; ++d) {
    DeviceSpec spec = testing::gpu("d" + std::to_string(d), "h0");
    spec.figures.launch_overhead = {};
    cluster.devices.push_back(spec);
    cluster.links.push_back(
        testing::link(spec.id, "h0", LinkKind::kPcie, kPcie, kPcie, kPcieLatency));
  }
  PlanOptions options;
  options.batch = 2 * kDevices;
  const auto problem = make_problem(
      cluster, {std::vector<double>(kDevices, 1.0), std::vector<double>(kDevices, 2.0)},
      {{{1, 1e3}}, {}}, {}, {}, options);
  Plan plan;
  plan.device_of_node = {0, 0};
  plan.batch_share.assign(kDevices, 1.0 / kDevices);
  const SimulationResult result = simulate(*problem, plan);
  EXPECT_NEAR(result.latency_seconds, 3.0 / kDevices, kTolerance);
  EXPECT_NEAR(result.throughput_samples_per_second, 2 * kDevices / (3.0 / kDevices), 1e-3);
  ASSERT_EQ(result.devices.size(), static_cast<size_t>(kDevices));
  for (const DeviceActivity& device : result.devices)
    EXPECT_NEAR(device.busy_seconds, 3.0 / kDevices, kTolerance);
  for (const std::vector<double>& row : result.device_bytes) EXPECT_TRUE(row.empty());
}

}  // namespace
}  // namespace tandem
