#include "calibrate/calibrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/kernel_registry.h"
#include "calibrate/host.h"
#include "calibrate/microbench.h"
#include "calibrate/op_history.h"
#include "ir/infer.h"
#include "util/statistics.h"

namespace tandem::calibrate {
namespace {

constexpr size_t kFp32 = static_cast<size_t>(Precision::kFp32);
// Speed floors are for optimized builds; under a sanitizer (-O1, every memory access checked)
// the benchmarks run several times slower, so a tenth of each floor is checked.
#ifdef TANDEM_SANITIZED
constexpr double kFloor = 0.1;
#else
constexpr double kFloor = 1;
#endif

TEST(Calibrate, QuietSamplesGiveTheirMedian) {
  const ContentionLog before = contention_log();
  int extra = 0;
  const double typical_time = typical(
      {1.00, 1.02, 0.99, 1.01, 1.03},
      [&] {
        ++extra;
        return 1.0;
      },
      Repetition{5, 50, 0.01});
  EXPECT_DOUBLE_EQ(typical_time, 1.01);
  EXPECT_EQ(extra, 0);
  EXPECT_EQ(contention_log().measurements, before.measurements + 1);
  EXPECT_EQ(contention_log().contended, before.contended);
}

// Another process stalls some runs (3x): the figure is what the undisturbed runs took, not the
// median, however many runs stalled; more runs are taken to find them.
TEST(Calibrate, ContendedSamplesGiveTheRunsLeftAlone) {
  const ContentionLog before = contention_log();
  int calls = 0;
  const auto stalled_half = [&] { return ++calls % 2 ? 1.0 : 3.0; };
  const double typical_time =
      typical({3.0, 1.0, 3.0, 3.0, 1.0, 3.0, 3.0}, stalled_half, Repetition{7, 50, 0.01});
  EXPECT_DOUBLE_EQ(typical_time, 1.0);
  EXPECT_GT(calls, 0);
  EXPECT_EQ(contention_log().contended, before.contended + 1);
  EXPECT_EQ(contention_log().unsettled, before.unsettled + 1);  // half stay stalled: still spread
  EXPECT_GE(contention_log().worst_spread, 3.0);
}

// Beside a spinning process every run of a stretch stalled (the scheduler kept a team's threads
// on one core for seconds): the runs past the budget are waited for, and the figure is the
// median of those at full speed, not the 10th percentile of a budget's worth of stalls.
TEST(Calibrate, AStallThatOutlastsTheBudgetIsWaitedOut) {
  const ContentionLog before = contention_log();
  int calls = 0;
  const auto long_stall = [&] { return ++calls <= 100 ? 3.0 : 1.1; };
  const double typical_time =
      typical({1.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0}, long_stall, Repetition{7, 50, 0.01});
  EXPECT_GT(calls, 100);  // waited past the budget's 50 runs
  // Five runs at full speed (1.0, 1.0, 1.1, 1.1, 1.1) end the wait; their median.
  EXPECT_NEAR(typical_time, 1.1, 1e-12);
  EXPECT_EQ(contention_log().contended, before.contended + 1);
}

TEST(Calibrate, OtherProcessesCpuIsWhatTheMachineUsedBeyondOurs) {
  const CpuTimes before = cpu_times();
  ASSERT_TRUE(before.known);  // Linux's /proc
  const auto start = std::chrono::steady_clock::now();
  volatile double sink = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200)) sink = sink + 1;
  const CpuTimes after = cpu_times();
  EXPECT_GE(after.own_seconds - before.own_seconds, 0.1);  // the loop above was ours
  const double others = others_cores(before, after, 0.2);
  EXPECT_GE(others, 0.0);
  EXPECT_LT(others, 64.0);
  CpuTimes unknown;
  EXPECT_EQ(others_cores(unknown, after, 0.2), 0.0);
}

TEST(Calibrate, CurvePointsOutOfOrderAreMeasuredAgainAndKeepTheFasterTiming) {
  const int before = contention_log().remeasured;
  // Sizes out of order on purpose; by size: 1 (1 us), 2 (stalled: 90 us), 4 (4 us), 8 (8 us).
  const std::vector<double> sizes{4, 1, 8, 2};
  std::vector<double> seconds{4e-6, 1e-6, 8e-6, 90e-6};
  std::vector<int> calls(sizes.size(), 0);
  // Measured again, the stalled point takes 2 us; the one after it is no faster the second
  // time (5 us), so it keeps its first timing.
  const std::vector<double> again{5e-6, 0, 0, 2e-6};
  const int count = settle_curve(sizes, seconds, [&](size_t i) {
    ++calls[i];
    return again[i];
  });
  EXPECT_EQ(count, 2);
  EXPECT_EQ(calls, (std::vector<int>{1, 0, 0, 1}));
  EXPECT_EQ(seconds, (std::vector<double>{4e-6, 1e-6, 8e-6, 2e-6}));
  EXPECT_EQ(contention_log().remeasured, before + 2);
  // A point that stays out of order is measured at most `rounds` times, and left so.
  std::vector<double> stuck{1e-6, 5e-6};
  int stuck_calls = 0;
  EXPECT_EQ(settle_curve({2, 1}, stuck,
                         [&](size_t) {
                           ++stuck_calls;
                           return 9e-6;
                         }),
            4);
  EXPECT_EQ(stuck_calls, 4);
  EXPECT_EQ(stuck, (std::vector<double>{1e-6, 5e-6}));
  // In order, or equal sizes: nothing is measured again.
  std::vector<double> fine{1e-6, 3e-6, 2e-6};
  EXPECT_EQ(settle_curve({1, 2, 2}, fine, [](size_t) -> double { throw std::logic_error("no"); }),
            0);
}

TEST(Calibrate, LongProductsAreTimedInBlocksOfUnderAMillisecond) {
  const double rate = 450e9;
  const auto blocks = [&](int64_t m, int64_t n, int64_t k, double at) {
    const GemmBlocks b = gemm_blocks(m, n, k, at);
    return std::vector<int64_t>{b.rows, b.columns, b.depth};
  };
  using Blocks = std::vector<int64_t>;
  // 1024^3 takes 4.8 ms: 8 blocks of 128 rows, 0.6 ms each.
  EXPECT_EQ(blocks(1024, 1024, 1024, rate), (Blocks{8, 1, 1}));
  EXPECT_EQ(blocks(768, 768, 768, rate), (Blocks{4, 1, 1}));  // 2 ms: blocks of 192 rows
  EXPECT_EQ(blocks(512, 512, 512, rate), (Blocks{1, 1, 1}));  // 0.6 ms
  // Not below 128 rows a block: a transformer's 128-token product (2.4 ms at 250 GFLOP/s) is
  // split across its weights' columns, or where they are too few, across its depth.
  EXPECT_EQ(blocks(128, 3072, 768, 250e9), (Blocks{1, 4, 1}));
  EXPECT_EQ(blocks(128, 768, 3072, 250e9), (Blocks{1, 1, 4}));
  // A compiled device's (XLA's blocks run slower than its whole product): rows only.
  EXPECT_EQ(gemm_blocks(128, 3072, 768, 250e9, false).count(), 1);
  EXPECT_EQ(gemm_blocks(1024, 1024, 1024, rate, false).rows, 8);
  // A slower machine's 1024^3 keeps blocks of 128 rows, then 512 columns, then 512 deep.
  EXPECT_EQ(blocks(1024, 1024, 1024, rate / 4), (Blocks{8, 2, 2}));
  // Sizes that do not halve, or no rate measured yet: timed whole.
  EXPECT_EQ(blocks(1, 1023, 1023, 1e6), (Blocks{1, 1, 1}));
  EXPECT_EQ(blocks(1024, 1024, 1024, 0), (Blocks{1, 1, 1}));
}

TEST(Calibrate, QuickGivesPlausibleFiguresInSeconds) {
  CalibrationOptions options;
  options.quick = true;
  options.profile_path = "quick.json";
  int progress_lines = 0;
  options.progress = [&](const CalibrationProfile::Measurement&) { ++progress_lines; };
  const auto start = std::chrono::steady_clock::now();
  const CalibrationProfile profile = calibrate_cpu(options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0 / kFloor);
  // The same product timed first and last; their ratio is the speed change the CLI reports.
  const auto measured = [&](const std::string& name) {
    for (const auto& row : profile.measurements)
      if (row.name == name) return row.value;
    ADD_FAILURE() << "no measurement " << name;
    return 0.0;
  };
  EXPECT_EQ(profile.measurements.front().name, "speed reference at the start");
  const double start_seconds = measured("speed reference at the start");
  ASSERT_GT(start_seconds, 0);
  const double change = measured("speed reference at the end") / start_seconds;
  EXPECT_DOUBLE_EQ(contention_log().speed_change, change);
  if (profile.speed_drift.known())
    EXPECT_NE(profile.speed_drift.source.find("slowest over the fastest"), std::string::npos)
        << profile.speed_drift.source;
  // And the reference's time itself, for a run to set the machine's speed beside it: the
  // median of its timings, start and end among them.
  std::vector<double> timings;
  for (const auto& row : profile.measurements)
    if (row.name.starts_with("speed reference ")) timings.push_back(row.value);
  EXPECT_EQ(timings.size(), 5u);  // the start, three between benchmarks, the end
  EXPECT_NEAR(profile.speed_reference.value, median(timings), 1e-15);
  // The profile keeps how far the speed moved through the calibration, for the planner's margin
  // (and the CLI's warning): the slowest timing over the fastest, less 1, which holds the start
  // and end's ratio.
  const double spread = *std::max_element(timings.begin(), timings.end()) /
                        *std::min_element(timings.begin(), timings.end());
  EXPECT_DOUBLE_EQ(profile.speed_drift.value, spread - 1);
  EXPECT_GE(spread, std::max(change, 1 / change) * (1 - 1e-12));

  EXPECT_GT(profile.figures.matrix_flops[kFp32].value, 1e9 * kFloor);  // > 1 GFLOP/s
  EXPECT_GT(profile.figures.memory_bandwidth.value, 1e9 * kFloor);     // > 1 GB/s
  EXPECT_GT(profile.figures.vector_flops[kFp32].value, 1e7 * kFloor);
  EXPECT_GT(profile.figures.launch_overhead.value, 1e-9);
  EXPECT_LT(profile.figures.launch_overhead.value, 1e-3 / kFloor);
  EXPECT_GT(profile.host_link_bandwidth.value, 1e9 * kFloor);
  EXPECT_GT(profile.figures.memory_bytes.value, 1e8);
  EXPECT_EQ(profile.figures.matrix_flops[kFp32].source.rfind("calibration quick.json: ", 0), 0u)
      << profile.figures.matrix_flops[kFp32].source;
  EXPECT_GT(profile.threads, 0);
  EXPECT_NE(profile.device_name.find("cpu: "), std::string::npos);

  ASSERT_GE(profile.gemm_curve.size(), 4u);
  // The peak is the best point of the curve, a batch's rate by all its products' FLOPs.
  double best = 0;
  int batches = 0;
  for (const auto& point : profile.gemm_curve) {
    EXPECT_GT(point.seconds, 0) << point.m;
    best = std::max(best, 2.0 * point.batch * point.m * point.n * point.k / point.seconds);
    batches += point.batch > 1;
  }
  EXPECT_DOUBLE_EQ(profile.figures.matrix_flops[kFp32].value, best);
  EXPECT_EQ(batches, 1);
  // Memory bandwidth is the rate of the largest elementwise point.
  ASSERT_GE(profile.bandwidth_curve.size(), 2u);
  const auto& largest = profile.bandwidth_curve.back();
  EXPECT_DOUBLE_EQ(profile.figures.memory_bandwidth.value, largest.bytes / largest.seconds);
  EXPECT_GT(largest.bytes, profile.bandwidth_curve.front().bytes);
  // Each kind's fixed cost: an elementwise loop's is below a oneDNN convolution's entry.
  for (const char* kind : {"Add", "Relu", "MatMul", "Gemm", "Conv", "MaxPool", "GlobalAveragePool"})
    EXPECT_GT(profile.op_overheads.count(kind), 0u) << kind;
  EXPECT_LT(profile.op_overheads.at("Relu"), profile.op_overheads.at("Conv"));
  // Each kind that runs in loops of its own, timed at three sizes. (No comparison of kinds here:
  // this quick calibration runs beside other tests, and one stall of a 1 MiB Concat made it
  // 30 ns an element, as slow as a Resize.)
  // The kinds that work along rows, in rows of 256 and again in rows of 16.
  for (const char* kind :
       {"Transpose", "Concat", "Slice", "Gather", "EmbeddingBag", "Pad", "Resize", "NonZero",
        "TopK", "NonMaxSuppression", "Add", "Softmax", "LayerNormalization", "GlobalAveragePool"}) {
    ASSERT_EQ(profile.op_element_curves.count(kind), 1u) << kind;
    const auto& points = profile.op_element_curves.at(kind);
    const bool rows = std::string(kind) == "Softmax" || std::string(kind) == "LayerNormalization" ||
                      std::string(kind) == "GlobalAveragePool";
    ASSERT_EQ(points.size(), rows ? 6u : 3u) << kind;
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(points[i].row, rows ? (i < 3 ? 256 : 16) : 0) << kind;
      if (i % 3 > 0) EXPECT_LT(points[i - 1].elements, points[i].elements) << kind;
      EXPECT_GT(points[i].seconds, 0) << kind;
    }
  }
  // A Loop's iteration beyond its body's ops, recorded; in the profile with its method where
  // it came out above nothing (a stall in the chain can leave the difference at 0, and a
  // profile without the figure prices iterations as subgraph runs).
  EXPECT_GE(measured("loop iteration"), 0);
  EXPECT_EQ(profile.loop_iteration_overhead.value, measured("loop iteration"));
  if (profile.loop_iteration_overhead.known()) {
    EXPECT_NE(profile.loop_iteration_overhead.source.find("RNN cell"), std::string::npos)
        << profile.loop_iteration_overhead.source;
  }
  // The copies in short runs, at three counts of runs.
  for (const char* kind : {"Gather", "Concat"}) {
    ASSERT_EQ(profile.op_run_curves.count(kind), 1u) << kind;
    const auto& points = profile.op_run_curves.at(kind);
    ASSERT_EQ(points.size(), 3u) << kind;
    EXPECT_EQ(points[0].runs, 1024) << kind;
    EXPECT_LT(points[0].runs, points[1].runs) << kind;
    EXPECT_LT(points[1].runs, points[2].runs) << kind;
    for (const auto& point : points) EXPECT_GT(point.seconds, 0) << kind;
  }
  // The first read of a product's output, at one size (its extra time is clamped at 0 where
  // the first read was no slower, so only the point's presence and size are checked).
  ASSERT_EQ(profile.product_output_read_curve.size(), 1u);
  EXPECT_EQ(profile.product_output_read_curve[0].bytes, 4.0 * 128 * 1024);
  // And the write of a product's input, the same Neg's output, at the same size.
  ASSERT_EQ(profile.product_input_write_curve.size(), 1u);
  EXPECT_EQ(profile.product_input_write_curve[0].bytes, 4.0 * 128 * 1024);
  // A tensor handed between one thread and all, both ways, at one size where a Relu runs on one
  // thread and an Erf splits, as the CPU backend declares them; none on one thread.
  if (profile.threads >= 2) {
    ASSERT_EQ(profile.cross_core_spread_curve.size(), 1u);
    ASSERT_EQ(profile.cross_core_gather_curve.size(), 1u);
    EXPECT_EQ(profile.cross_core_spread_curve[0].bytes, profile.cross_core_gather_curve[0].bytes);
    const auto elements = static_cast<int64_t>(profile.cross_core_spread_curve[0].bytes / 4);
    const TensorType type{DType::kFloat32, {elements}};
    Node relu, erf;
    relu.op_type = "Relu";
    erf.op_type = "Erf";
    Graph graph;
    relu.outputs = erf.outputs = {graph.add_value("y", type)};
    const cpu::KernelRegistry& kernels = cpu::KernelRegistry::instance();
    EXPECT_EQ(kernels.thread_split(relu, graph), ThreadSplit::kOneThread);
    EXPECT_EQ(kernels.thread_split(erf, graph), ThreadSplit::kOutputRanges);
  } else {
    EXPECT_TRUE(profile.cross_core_spread_curve.empty());
    EXPECT_TRUE(profile.cross_core_gather_curve.empty());
  }
  // Depthwise convolutions in all four layouts, each shape once.
  ASSERT_EQ(profile.depthwise_curves.size(), 4u);
  for (const auto& [layouts, points] : profile.depthwise_curves) {
    ASSERT_EQ(points.size(), 2u) << layouts;
    EXPECT_LT(points[0].flops, points[1].flops) << layouts;
    EXPECT_GT(points[0].seconds, 0) << layouts;
  }
  // oneDNN's convolutions are priced on the GEMM curve: no curve of their own.
  EXPECT_TRUE(profile.conv_curve.empty());
  EXPECT_EQ(progress_lines, static_cast<int>(profile.measurements.size()));
}

TEST(OpHistory, RecordsEveryTopLevelSignature) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {64}});
  graph.inputs = {x};
  int last = x;
  for (const char* op : {"Relu", "Tanh", "Relu"}) {
    Node node;
    node.name = std::string(op) + std::to_string(graph.nodes.size());
    node.op_type = op;
    node.inputs = {last};
    last = graph.add_value(node.name + "_out");
    node.outputs = {last};
    graph.nodes.push_back(std::move(node));
  }
  graph.outputs = {last};
  infer_graph(graph);

  cpu::CpuDevice device;
  OpHistory history;
  const std::vector<Tensor> inputs = {Tensor::zeros(DType::kFloat32, {64})};
  history.record(graph, device, inputs, 3);
  const auto medians = history.median_seconds();
  ASSERT_EQ(medians.size(), 2u);  // the two Relu share a signature
  EXPECT_EQ(medians.count(op_signature(graph.nodes[0], graph)), 1u);
  EXPECT_EQ(medians.count(op_signature(graph.nodes[1], graph)), 1u);
  for (const auto& [signature, seconds] : medians) EXPECT_GT(seconds, 0) << signature;
}

TEST(Median, OddAndEvenCounts) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
}

}  // namespace
}  // namespace tandem::calibrate
