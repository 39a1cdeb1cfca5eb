#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "plan/plan_test_util.h"

namespace tandem {
namespace {

using testing::flat_cluster;
using testing::make_problem;

constexpr double kTolerance = 1e-12;

Plan placed(std::vector<int> device_of_node) {
  Plan plan;
  plan.device_of_node = std::move(device_of_node);
  return plan;
}

// Two devices joined only by one direct link (no host between them).
Cluster direct_pair(double bandwidth, double latency) {
  Cluster cluster;
  cluster.hosts = {testing::host("h0")};
  for (const char* id : {"d0", "d1"}) {
    DeviceSpec spec = testing::gpu(id, "h0");
    spec.figures.launch_overhead = {};
    cluster.devices.push_back(spec);
  }
  cluster.links = {testing::link("d0", "d1", LinkKind::kNvlink, bandwidth, bandwidth, latency)};
  return cluster;
}

const TimelineSpan* span_named(const Timeline& timeline, const std::string& name, int nth = 0) {
  for (const TimelineSpan& span : timeline.spans) {
    if (span.name == name && nth-- == 0) return &span;
  }
  return nullptr;
}

TEST(Simulator, ChainOnOneDeviceTakesTheSumOfItsOps) {
  const auto problem =
      make_problem(flat_cluster(1), {{1e-3}, {2e-3}, {3e-3}}, {{{1, 100}}, {{2, 100}}, {}});
  const SimulationResult result = simulate(*problem, placed({0, 0, 0}));
  EXPECT_NEAR(result.latency_seconds, 6e-3, kTolerance);
  EXPECT_NEAR(result.throughput_samples_per_second, 1 / 6e-3, 1e-6);
  ASSERT_EQ(result.devices.size(), 1u);
  EXPECT_NEAR(result.devices[0].busy_seconds, 6e-3, kTolerance);
  EXPECT_NEAR(result.devices[0].idle_seconds, 0, kTolerance);
  EXPECT_EQ(result.events, 3u);
}

TEST(Simulator, OneTransferTakesLatencyPlusBytesOverBandwidth) {
  const double bandwidth = 1e9, latency = 5e-6, bytes = 4e6;
  const auto problem =
      make_problem(direct_pair(bandwidth, latency), {{1e-3, 9}, {9, 2e-3}}, {{{1, bytes}}, {}});
  SimulationOptions options;
  options.record_timeline = true;
  const SimulationResult result = simulate(*problem, placed({0, 1}), options);
  EXPECT_NEAR(result.latency_seconds, 1e-3 + latency + bytes / bandwidth + 2e-3, kTolerance);
  ASSERT_EQ(result.links.size(), 1u);
  EXPECT_DOUBLE_EQ(result.links[0].bytes, bytes);
  EXPECT_NEAR(result.links[0].busy_seconds, bytes / bandwidth, kTolerance);
  EXPECT_DOUBLE_EQ(result.device_bytes[0][1], bytes);
  EXPECT_NEAR(result.devices[1].idle_seconds, 1e-3 + latency + bytes / bandwidth, kTolerance);
  const TimelineSpan* transfer = span_named(result.timeline, "n0 -> d1");
  ASSERT_NE(transfer, nullptr);
  EXPECT_NEAR(transfer->duration_seconds, latency + bytes / bandwidth, kTolerance);
  EXPECT_EQ(result.timeline.tracks[transfer->track].name, "d0-d1");
}

TEST(Simulator, EqualStagesWithMicrobatchesFillAndDrain) {
  constexpr int kStages = 4, kMicrobatches = 8;
  constexpr double kStageSeconds = 1e-3;  // per micro-batch
  std::vector<std::vector<double>> seconds(kStages, std::vector<double>(kStages, kInfinity));
  std::vector<std::vector<std::pair<int, double>>> successors(kStages);
  Plan plan;
  plan.microbatches = kMicrobatches;
  for (int s = 0; s < kStages; ++s) {
    seconds[s][s] = kStageSeconds * kMicrobatches;  // the whole batch; no launch overhead
    if (s + 1 < kStages) successors[s] = {{s + 1, 0}};
    plan.device_of_node.push_back(s);
    plan.stages.push_back({s, s, s, kStageSeconds});
  }
  const auto problem = make_problem(flat_cluster(kStages), seconds, successors);
  const SimulationResult result = simulate(*problem, plan);
  EXPECT_NEAR(result.latency_seconds, (kStages + kMicrobatches - 1) * kStageSeconds, 1e-12);
  EXPECT_NEAR(result.throughput_samples_per_second, 1.0 / kMicrobatches / kStageSeconds, 1e-6);
  for (const DeviceActivity& device : result.devices)
    EXPECT_NEAR(device.busy_seconds, kMicrobatches * kStageSeconds, 1e-12);
}

// d0 and d1 both send to d2 through the host: the last hop (h0 -> d2) carries both at once.
TEST(Simulator, ConcurrentTransfersShareALinkFairly) {
  const double bandwidth = 1e9, bytes = 1e6;
  const auto problem =
      make_problem(flat_cluster(3, bandwidth), {{1e-3, 9, 9}, {9, 1e-3, 9}, {9, 9, 1e-3}},
                   {{{2, bytes}}, {{2, bytes}}, {}});
  SimulationOptions options;
  options.record_timeline = true;
  const SimulationResult result = simulate(*problem, placed({0, 1, 2}), options);
  const double hop = bytes / bandwidth;
  EXPECT_NEAR(result.latency_seconds, 1e-3 + hop + 2 * hop + 1e-3, kTolerance);
  const TimelineSpan* first = span_named(result.timeline, "n0 -> d2", 1);  // second hop
  const TimelineSpan* second = span_named(result.timeline, "n1 -> d2", 1);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NEAR(first->duration_seconds, 2 * hop, kTolerance);  // half the bandwidth each
  EXPECT_NEAR(second->duration_seconds, 2 * hop, kTolerance);
  EXPECT_NE(first->track, second->track);  // concurrent spans never share a track
  EXPECT_NEAR(result.links[2].busy_seconds, 2 * hop, kTolerance);
  EXPECT_DOUBLE_EQ(result.links[2].bytes, 2 * bytes);
}

// d0 sends 1 MB and d1 3 MB to d2; their own links (1 and 3 GB/s) bring both to the host at
// 1 ms, then h0 -> d2 (1 GB/s) carries both: at half rate until the small one ends (2 ms), then
// the big one alone at full rate for its last 2 MB (4 ms in all).
TEST(Simulator, FairShareIsRecomputedWhenATransferLeaves) {
  const double bytes = 1e6;
  Cluster cluster = flat_cluster(3, 1e9);
  cluster.links[1].bandwidth_forward = testing::figure(3e9);
  const auto problem = make_problem(cluster, {{1e-3, 9, 9}, {9, 1e-3, 9}, {9, 9, 1e-3}},
                                    {{{2, bytes}}, {{2, 3 * bytes}}, {}});
  SimulationOptions options;
  options.record_timeline = true;
  const SimulationResult result = simulate(*problem, placed({0, 1, 2}), options);
  const TimelineSpan* small = span_named(result.timeline, "n0 -> d2", 1);
  const TimelineSpan* big = span_named(result.timeline, "n1 -> d2", 1);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(big, nullptr);
  EXPECT_NEAR(small->start_seconds, 2e-3, kTolerance);
  EXPECT_NEAR(big->start_seconds, 2e-3, kTolerance);
  EXPECT_NEAR(small->duration_seconds, 2e-3, kTolerance);
  EXPECT_NEAR(big->duration_seconds, 4e-3, kTolerance);
  EXPECT_NEAR(result.latency_seconds, 1e-3 + 1e-3 + 4e-3 + 1e-3, kTolerance);
}

// A training step's two-stage pipeline: F0 on d0, F1 and B1 on d1, B0 on d0 (each 1 ms for the
// whole batch, every activation 4000 bytes), over 4 micro-batches. GPipe and 1F1B take the same
// time (the same bubble), but 1F1B frees each micro-batch's activations on d0 sooner.
TEST(Simulator, TrainingSchedulesTakeTheSameTimeAndOneForwardOneBackwardHoldsLess) {
  PlanOptions options;
  options.batch = 8;
  options.microbatches = 4;
  options.node_phase = {0, 0, 1, 1};
  const auto problem =
      make_problem(direct_pair(1e12, 0), {{1e-3, 9}, {9, 1e-3}, {9, 1e-3}, {1e-3, 9}},
                   {{{1, 4000}, {3, 4000}}, {{2, 4000}}, {{3, 4000}}, {}}, {}, {}, options);
  const auto run = [&](PieceOrder order) {
    Plan plan = placed({0, 1, 1, 0});
    plan.microbatches = 4;
    plan.piece_order = order;
    return simulate(*problem, plan);
  };
  const SimulationResult gpipe = run(PieceOrder::kGPipe);
  const SimulationResult one_f_one_b = run(PieceOrder::kOneForwardOneBackward);
  // d0 runs 4 forwards and 4 backwards of 0.25 ms, d1 its 8 after the first forward: 2.25 ms
  // of d1's work bounds both, plus the last backward on d0.
  // (Transfers of 4000 bytes at 1 TB/s add nanoseconds.)
  EXPECT_NEAR(gpipe.latency_seconds, 0.25e-3 + 2e-3 + 0.25e-3, 1e-7);
  EXPECT_NEAR(one_f_one_b.latency_seconds, gpipe.latency_seconds, 1e-7);
  EXPECT_LT(one_f_one_b.devices[0].peak_memory_bytes, gpipe.devices[0].peak_memory_bytes);
  // The order itself: d0 (one stage after it) warms up with one forward, then alternates.
  EXPECT_EQ(order_pieces(PieceOrder::kOneForwardOneBackward, {false, true}, 3, 1),
            (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {2, 0}, {1, 1}, {2, 1}}));
  EXPECT_EQ(order_pieces(PieceOrder::kGPipe, {false, true}, 2, 1),
            (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
}

TEST(Simulator, MemoryOverflowNamesDeviceTimeAndBytes) {
  // d0 holds 1000 bytes: 100 of weights, then n0's 600-byte output, then n1's 600 while n0's
  // is still read: 1300 at t = 1 ms, when n1 starts.
  const auto problem = make_problem(flat_cluster(1, 1e9, 0, 1000), {{1e-3}, {1e-3}},
                                    {{{1, 600}}, {}}, {100, 0}, {600, 600});
  const SimulationResult result = simulate(*problem, placed({0, 0}));
  ASSERT_TRUE(result.overflow.has_value());
  EXPECT_EQ(result.overflow->device, "d0");
  EXPECT_NEAR(result.overflow->time_seconds, 1e-3, kTolerance);
  EXPECT_DOUBLE_EQ(result.overflow->bytes, 1300);
  EXPECT_DOUBLE_EQ(result.overflow->capacity_bytes, 1000);

  const auto roomy = make_problem(flat_cluster(1, 1e9, 0, 2000), {{1e-3}, {1e-3}}, {{{1, 600}}, {}},
                                  {100, 0}, {600, 600});
  const SimulationResult fits = simulate(*roomy, placed({0, 0}));
  EXPECT_FALSE(fits.overflow.has_value());
  EXPECT_DOUBLE_EQ(fits.devices[0].peak_memory_bytes, 1300);
}

TEST(Simulator, MemoryIsFreedAfterTheLastReader) {
  SimulationOptions options;
  options.record_timeline = true;
  // n0 -> n1 -> n2: n0's output goes when n1 ends; n2's output (the graph's) stays.
  const auto problem = make_problem(flat_cluster(1), {{1e-3}, {1e-3}, {1e-3}},
                                    {{{1, 10}}, {{2, 20}}, {}}, {0, 0, 0}, {10, 20, 40});
  const SimulationResult result = simulate(*problem, placed({0, 0, 0}), options);
  EXPECT_DOUBLE_EQ(result.devices[0].peak_memory_bytes, 60);  // n1's input and n2's output
  ASSERT_FALSE(result.timeline.memory.empty());
  EXPECT_DOUBLE_EQ(result.timeline.memory.back().bytes, 40);
}

TEST(Simulator, CpuDeviceCopiesWithItsOwnCores) {
  // cpu0 sends n0's output to the GPU, then runs n2: it waits for the copy's first hop.
  Cluster cluster;
  cluster.hosts = {testing::host("h0")};
  DeviceSpec cpu = testing::cpu("cpu0", "h0");
  DeviceSpec gpu = testing::gpu("gpu0", "h0");
  cpu.figures.launch_overhead = gpu.figures.launch_overhead = {};
  cluster.devices = {cpu, gpu};
  cluster.links = {testing::link("cpu0", "h0", LinkKind::kHostMemory, 1e9, 1e9, 0),
                   testing::link("gpu0", "h0", LinkKind::kPcie, 1e9, 1e9, 0)};
  const auto problem =
      make_problem(cluster, {{1e-3, 9}, {9, 1e-3}, {1e-3, 9}}, {{{1, 1e6}}, {}, {}});
  const SimulationResult result = simulate(*problem, placed({0, 1, 0}));
  EXPECT_NEAR(result.devices[0].busy_seconds, 1e-3 + 1e-3 + 1e-3, kTolerance);
  // The same with a GPU sender: its copy engine overlaps the next op.
  Cluster gpus = flat_cluster(2);
  const auto overlapped =
      make_problem(gpus, {{1e-3, 9}, {9, 1e-3}, {1e-3, 9}}, {{{1, 1e6}}, {}, {}});
  const SimulationResult dma = simulate(*overlapped, placed({0, 1, 0}));
  EXPECT_NEAR(dma.devices[0].busy_seconds, 2e-3, kTolerance);
}

TEST(Simulator, DataParallelSharesRunTheWholeGraph) {
  const auto problem = make_problem(flat_cluster(2), {{2e-3, 4e-3}, {2e-3, 4e-3}}, {{{1, 8}}, {}});
  Plan plan = placed({0, 0});
  plan.batch_share = {0.75, 0.25};
  const SimulationResult result = simulate(*problem, plan);
  EXPECT_NEAR(result.devices[0].busy_seconds, 0.75 * 4e-3, kTolerance);
  EXPECT_NEAR(result.devices[1].busy_seconds, 0.25 * 8e-3, kTolerance);
  EXPECT_NEAR(result.latency_seconds, 3e-3, kTolerance);
  EXPECT_TRUE(result.links.size() == 2 && result.links[0].bytes == 0);
}

TEST(Simulator, ReplicasShareTheNetworkOnly) {
  // Two hosts with one device each, joined by a network link; each replica sends once across.
  Cluster cluster;
  cluster.hosts = {testing::host("h0"), testing::host("h1")};
  for (int h = 0; h < 2; ++h) {
    DeviceSpec spec = testing::gpu("d" + std::to_string(h), "h" + std::to_string(h));
    spec.figures.launch_overhead = {};
    cluster.devices.push_back(spec);
    cluster.links.push_back(testing::link(spec.id, spec.host, LinkKind::kPcie, 1e12, 1e12, 0));
  }
  cluster.links.push_back(testing::link("h0", "h1", LinkKind::kNetwork, 1e9, 1e9, 0));
  const auto problem = make_problem(cluster, {{1e-3, 9}, {9, 1e-3}}, {{{1, 1e6}}, {}});
  const SimulationResult one = simulate(*problem, placed({0, 1}));
  SimulationOptions options;
  options.replicas = 4;
  const SimulationResult four = simulate(*problem, placed({0, 1}), options);
  ASSERT_EQ(four.devices.size(), 8u);
  EXPECT_EQ(four.devices[2].id, "r1/d0");
  EXPECT_EQ(four.links.size(), 2u * 4 + 1);  // host links per replica, one network
  const double network = 1e6 / 1e9;
  EXPECT_NEAR(one.latency_seconds, 2e-3 + network + 2e-6, 1e-9);
  // Four copies at once over the shared network: a quarter of its bandwidth each.
  EXPECT_NEAR(four.latency_seconds, 2e-3 + 4 * network + 2e-6, 1e-9);
  EXPECT_NEAR(four.throughput_samples_per_second, 4 / four.latency_seconds, 1e-6);
}

TEST(Simulator, RefusesAnOrderThatRunsANodeBeforeItsInput) {
  const auto problem = make_problem(flat_cluster(1), {{1e-3}, {1e-3}}, {{{1, 8}}, {}});
  Plan plan = placed({0, 0});
  plan.order = {1, 0};
  EXPECT_THROW(simulate(*problem, plan), InputError);
}

}  // namespace
}  // namespace tandem
