#include "cost/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_cluster.h"

namespace tandem {
namespace {

using testing::compute_cluster;
using testing::GraphBuilder;

constexpr int kGpu = 0, kV5e = 1, kV6e = 2, kCpu = 3;

Graph matmul(DType dtype, int64_t m, int64_t k, int64_t n) {
  GraphBuilder builder;
  const int a = builder.input("a", dtype, {m, k});
  const int b = builder.input("b", dtype, {k, n});
  return builder.infer({builder.node("MatMul", {a, b})});
}

Graph conv(int64_t channels, int64_t size) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {1, channels, size, size});
  const int w = builder.input("w", DType::kFloat32, {channels, channels, 3, 3});
  return builder.infer(
      {builder.node("Conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
}

Graph add(DType dtype, int64_t elements) {
  GraphBuilder builder;
  const int a = builder.input("a", dtype, {elements});
  const int b = builder.input("b", dtype, {elements});
  return builder.infer({builder.node("Add", {a, b})});
}

OpTime time_of(const CostModel& model, const Graph& graph, int device) {
  return model.op_time(graph.nodes.at(0), graph, device);
}

double seconds_of(const CostModel& model, const Graph& graph, int device) {
  return time_of(model, graph, device).seconds;
}

// Times of the same op over growing problems never decrease, and the largest costs more.
void expect_grows(const CostModel& model, const std::vector<Graph>& graphs) {
  for (int device = 0; device < 4; ++device) {
    for (size_t i = 1; i < graphs.size(); ++i) {
      EXPECT_LE(seconds_of(model, graphs[i - 1], device), seconds_of(model, graphs[i], device))
          << "device " << device << ", problem " << i;
    }
    // An accelerator's launch hides a kernel shorter than it: such problems cost the launch.
    if (time_of(model, graphs.back(), device).bound == Bound::kOverhead) continue;
    EXPECT_LT(seconds_of(model, graphs.front(), device), seconds_of(model, graphs.back(), device))
        << "device " << device;
  }
}

TEST(CostModel, MatMulTimeGrowsWithSize) {
  const CostModel model(compute_cluster());
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    std::vector<Graph> graphs;
    for (int64_t n : {1, 8, 64, 127, 128, 129, 255, 256, 257, 1000, 1024, 4096}) {
      graphs.push_back(matmul(dtype, n, n, n));
    }
    expect_grows(model, graphs);
  }
}

TEST(CostModel, ConvTimeGrowsWithSize) {
  const CostModel model(compute_cluster());
  for (int64_t channels : {3, 16, 64, 256}) {
    std::vector<Graph> graphs;
    for (int64_t size : {7, 14, 56, 112}) graphs.push_back(conv(channels, size));
    expect_grows(model, graphs);
  }
  for (int64_t size : {7, 56}) {
    std::vector<Graph> graphs;
    for (int64_t channels : {3, 16, 64, 256}) graphs.push_back(conv(channels, size));
    expect_grows(model, graphs);
  }
}

TEST(CostModel, ElementwiseTimeGrowsWithSize) {
  const CostModel model(compute_cluster());
  std::vector<Graph> graphs;
  for (int64_t n = 1; n <= (int64_t{1} << 26); n *= 8) graphs.push_back(add(DType::kFloat32, n));
  expect_grows(model, graphs);
}

TEST(CostModel, OpADeviceCannotRunCostsInfinity) {
  const CostModel model(compute_cluster());
  const Graph fp64 = add(DType::kFloat64, 1024);  // XLA on TPU has no fp64
  const OpTime on_tpu = time_of(model, fp64, kV5e);
  EXPECT_TRUE(std::isinf(on_tpu.seconds));
  EXPECT_EQ(on_tpu.source, "cannot run on v5e");
  EXPECT_TRUE(std::isinf(model.op_seconds(fp64.nodes[0], fp64, kV6e)));
  EXPECT_TRUE(std::isfinite(model.op_seconds(fp64.nodes[0], fp64, kGpu)));
  EXPECT_TRUE(std::isfinite(model.op_seconds(fp64.nodes[0], fp64, kCpu)));
}

TEST(CostModel, MxuPaddingRoundsMatmulsUpToTiles) {
  // M = K = 4096 in bf16: compute-bound on both TPUs, which differ only in their MXU edge.
  const CostModel model(compute_cluster());
  const auto on = [&](int device, int64_t n) {
    const OpTime time = time_of(model, matmul(DType::kBFloat16, 4096, 4096, n), device);
    EXPECT_EQ(time.bound, Bound::kCompute) << "n " << n;
    return time.seconds;
  };
  // v5e pads to 128: 129 columns cost as much as 256, 128 columns less.
  EXPECT_DOUBLE_EQ(on(kV5e, 129), on(kV5e, 256));
  EXPECT_LT(on(kV5e, 128), on(kV5e, 129));
  // v6e pads to 256: 128 and 129 columns both cost as much as 256, and 257 as much as 512.
  EXPECT_DOUBLE_EQ(on(kV6e, 128), on(kV6e, 256));
  EXPECT_DOUBLE_EQ(on(kV6e, 129), on(kV6e, 256));
  EXPECT_DOUBLE_EQ(on(kV6e, 257), on(kV6e, 512));
  // At equal peaks, a 128-wide product wastes half of v6e's wider MXU but none of v5e's.
  EXPECT_LT(on(kV5e, 128), on(kV6e, 128));
  EXPECT_DOUBLE_EQ(on(kV5e, 256), on(kV6e, 256));
}

TEST(CostModel, TensorCoresPadHalfPrecisionToEightElements) {
  const CostModel model(compute_cluster());
  const auto compute = [&](DType dtype, int64_t n) {
    return time_of(model, matmul(dtype, 4096, 4096, n), kGpu).compute_seconds;
  };
  EXPECT_DOUBLE_EQ(compute(DType::kFloat16, 4097), compute(DType::kFloat16, 4104));
  EXPECT_LT(compute(DType::kFloat16, 4096), compute(DType::kFloat16, 4097));
  // fp32 runs on the CUDA cores, which need no padding.
  EXPECT_LT(compute(DType::kFloat32, 4097), compute(DType::kFloat32, 4104));
}

TEST(CostModel, Fp32MatmulUsesTf32OnlyWhenAllowed) {
  const Graph graph = matmul(DType::kFloat32, 4096, 4096, 4096);
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const double fraction = MatmulEfficiency::kPeakFraction;
  const double ramp = MatmulEfficiency::kRampSeconds;
  const CostModel strict(compute_cluster());
  EXPECT_NEAR(time_of(strict, graph, kGpu).compute_seconds, flops / (fraction * 60e12) + ramp,
              1e-12);
  const CostModel tf32(compute_cluster(), CostOptions{.tf32 = true});
  EXPECT_NEAR(time_of(tf32, graph, kGpu).compute_seconds, flops / (fraction * 500e12) + ramp,
              1e-12);
}

TEST(CostModel, TpuRunsFp32MatmulAsOneBf16Pass) {
  const CostModel model(compute_cluster());
  EXPECT_DOUBLE_EQ(
      time_of(model, matmul(DType::kFloat32, 1024, 1024, 1024), kV5e).compute_seconds,
      time_of(model, matmul(DType::kBFloat16, 1024, 1024, 1024), kV5e).compute_seconds);
}

TEST(CostModel, SmallMatmulsReachLessOfPeak) {
  const CostModel model(compute_cluster());
  double previous_rate = 0;
  for (int64_t n : {32, 128, 512, 2048, 8192}) {
    const double flops = 2.0 * n * n * n;
    const double rate =
        flops / time_of(model, matmul(DType::kBFloat16, n, n, n), kGpu).compute_seconds;
    EXPECT_GT(rate, previous_rate) << "n " << n;
    EXPECT_LT(rate, MatmulEfficiency::kPeakFraction * 1000e12) << "n " << n;
    previous_rate = rate;
  }
  EXPECT_GT(previous_rate, 0.75 * 1000e12);  // 8192^3 is near the best fraction
}

TEST(CostModel, LaunchOverheadDominatesTinyOps) {
  const CostModel model(compute_cluster());
  const Graph tiny = add(DType::kFloat32, 4);
  for (int device = 0; device < 4; ++device) {
    const OpTime time = time_of(model, tiny, device);
    const double overhead = model.figures(device).launch_overhead.value;
    EXPECT_EQ(time.bound, Bound::kOverhead) << "device " << device;
    EXPECT_NEAR(time.seconds, overhead, 0.01 * overhead) << "device " << device;
  }
}

TEST(CostModel, LargeElementwiseOpIsMemoryBound) {
  const CostModel model(compute_cluster());
  const OpTime time = time_of(model, add(DType::kFloat32, 1 << 24), kGpu);
  EXPECT_EQ(time.bound, Bound::kMemory);
  // The GPU runs the kernel while the host launches the next: its launch is hidden.
  EXPECT_NEAR(time.seconds, 3.0 * 4 * (1 << 24) / 3e12, 1e-12);
  EXPECT_EQ(time.source, "test figure");  // explicit figures name their own source
}

TEST(CostModel, OnlyAnAcceleratorHidesItsLaunchBehindItsKernels) {
  const CostModel model(compute_cluster());
  const Graph large = add(DType::kFloat32, 1 << 24);
  for (int device = 0; device < 4; ++device) {
    const OpTime time = time_of(model, large, device);
    const double work = std::max(time.compute_seconds, time.memory_seconds);
    const bool cpu = model.cluster().devices[device].kind == DeviceKind::kCpu;
    EXPECT_DOUBLE_EQ(time.seconds, cpu ? work + time.overhead_seconds : work)
        << "device " << device;
  }
}

// A device that runs programs (it has a step overhead, as PJRT's do) runs a chain of
// elementwise ops as one loop: only the chain's ends move through memory. A value another op
// also reads is written, and a device without a step overhead moves every value.
TEST(CostModel, CompiledDevicesMoveOnlyTheEndsOfElementwiseChains) {
  constexpr int64_t kElements = 1 << 24;
  constexpr double kBytes = 4.0 * kElements;
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {kElements});
  const int relu = builder.node("Relu", {a});
  const int neg = builder.node("Neg", {relu});
  const int sum = builder.node("Add", {neg, a});
  const int tanh = builder.node("Tanh", {sum});
  const Graph graph = builder.infer({tanh, builder.node("Sqrt", {sum})});
  Cluster cluster = compute_cluster();
  const CostModel eager(cluster);
  cluster.devices[kV5e].figures.step_overhead = testing::figure(40e-6);
  const CostModel compiled(cluster);
  const double bandwidth = cluster.devices[kV5e].figures.memory_bandwidth.value;
  const auto memory_bytes = [&](const CostModel& model, size_t node) {
    return model.op_time(graph.nodes.at(node), graph, kV5e).memory_seconds * bandwidth;
  };
  // Relu reads a; Neg nothing; Add reads a and writes its sum, which two ops read.
  EXPECT_NEAR(memory_bytes(compiled, 0), kBytes, 1);
  EXPECT_NEAR(memory_bytes(compiled, 1), 0, 1);
  EXPECT_NEAR(memory_bytes(compiled, 2), 2 * kBytes, 1);
  EXPECT_NEAR(memory_bytes(compiled, 3), 2 * kBytes, 1);  // the graph's outputs are written
  EXPECT_NEAR(memory_bytes(eager, 0), 2 * kBytes, 1);
  EXPECT_NEAR(memory_bytes(eager, 1), 2 * kBytes, 1);
  EXPECT_NEAR(memory_bytes(eager, 2), 3 * kBytes, 1);
}

// XLA runs an EmbeddingBag as its [bags, indices] membership matrix times the looked-up rows
// (the PJRT lowering): a TPU, planned as PJRT compiles it, pays that product's compute and the
// membership matrix written and read; a CPU pays the lookup's own work.
TEST(CostModel, CompiledDevicesPriceAnEmbeddingBagAsTheProductTheyRunItAs) {
  constexpr int64_t kBags = 128, kIndices = 800, kWidth = 64;
  GraphBuilder builder;
  const int table = builder.input("table", DType::kFloat32, {1000, kWidth});
  const int indices = builder.input("indices", DType::kInt64, {kIndices});
  const int starts = builder.input("starts", DType::kInt64, {kBags});
  const int ends = builder.input("ends", DType::kInt64, {kBags});
  const Graph bag = builder.infer({builder.node("EmbeddingBag", {table, indices, starts, ends},
                                                {{"bags", kBags}, {"mode", std::string("sum")}})});
  const CostModel model(compute_cluster());
  const Graph product = matmul(DType::kFloat32, kBags, kIndices, kWidth);
  EXPECT_DOUBLE_EQ(time_of(model, bag, kV5e).compute_seconds,
                   time_of(model, product, kV5e).compute_seconds);
  const double membership = 4.0 * kBags * kIndices;
  EXPECT_NEAR(
      time_of(model, bag, kV5e).memory_seconds,
      (bag.nodes[0].cost.bytes + 2 * membership) / model.figures(kV5e).memory_bandwidth.value,
      1e-15);
  EXPECT_LT(time_of(model, bag, kCpu).compute_seconds,
            time_of(model, product, kCpu).compute_seconds / 10);
}

TEST(CostModel, ViewsCostNothing) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {64, 64});
  const int shape = builder.constant("shape", DType::kInt64, {2});  // zeros: keep both dims
  const Graph graph = builder.infer({builder.node("Reshape", {x, shape})});
  ASSERT_EQ(graph.nodes.size(), 1u);
  const CostModel model(compute_cluster());
  EXPECT_EQ(time_of(model, graph, kGpu).seconds, 0);
  EXPECT_EQ(time_of(model, graph, kGpu).source, "view, no kernel");
}

TEST(CostModel, PresetFiguresNameThePreset) {
  Cluster cluster = compute_cluster();
  cluster.devices[kCpu].preset = "generic-x86";
  const CostModel model(cluster);
  EXPECT_EQ(time_of(model, add(DType::kFloat32, 1 << 20), kCpu).source, "preset generic-x86");
}

TEST(CostModel, MeasuredOpTimeTakesPrecedence) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {1000});
  const int b = builder.input("b", DType::kFloat32, {1000});
  const int sum = builder.node("Add", {a, b});
  const int c = builder.input("c", DType::kFloat32, {10, 1000});
  const Graph graph = builder.infer({sum, builder.node("Add", {c, sum})});
  Cluster cluster = compute_cluster();
  cluster.devices[kCpu].profile = "cpu.json";
  CalibrationProfile profile;
  profile.op_seconds[op_signature(graph.nodes[0], graph)] = 0.25;
  const CostModel model(cluster, {{kCpu, profile}});

  const OpTime measured = model.op_time(graph.nodes[0], graph, kCpu);
  EXPECT_EQ(measured.seconds, 0.25);
  EXPECT_EQ(measured.source, "measured op in cpu.json");
  EXPECT_GT(measured.memory_seconds, 0);  // the roofline's parts stay, for comparison
  // Another shape is not the measured op; another device has no measurement.
  EXPECT_LT(model.op_seconds(graph.nodes[1], graph, kCpu), 0.01);
  EXPECT_LT(model.op_seconds(graph.nodes[0], graph, kGpu), 0.01);
}

TEST(CostModel, ProfileFiguresReplacePresetFigures) {
  Cluster cluster = compute_cluster();
  cluster.devices[kCpu].preset = "generic-x86";
  cluster.devices[kCpu].profile = "cpu.json";
  CalibrationProfile profile;
  profile.figures.memory_bandwidth =
      testing::figure(40e9, "calibration cpu.json: fp32 Add beyond the caches");
  profile.figures.launch_overhead = testing::figure(3e-6, "chain of Relu");
  const Graph big = add(DType::kFloat32, 1 << 22);
  const CostModel preset(cluster, std::map<int, CalibrationProfile>{});
  const CostModel calibrated(cluster, {{kCpu, profile}});

  EXPECT_EQ(calibrated.figures(kCpu).memory_bandwidth.value, 40e9);
  EXPECT_EQ(calibrated.figures(kCpu).launch_overhead.source, "calibration cpu.json: chain of Relu");
  EXPECT_EQ(calibrated.figures(kCpu).vector_flops[testing::at(Precision::kFp32)].value, 100e9);
  const OpTime before = time_of(preset, big, kCpu);
  const OpTime after = time_of(calibrated, big, kCpu);
  EXPECT_EQ(before.source, "preset generic-x86");
  EXPECT_EQ(after.source, "calibration cpu.json");
  EXPECT_DOUBLE_EQ(after.memory_seconds, before.memory_seconds / 2);
  EXPECT_DOUBLE_EQ(after.overhead_seconds, 3e-6);
}

TEST(CostModel, GemmCurveFromProfileGivesMeasuredTimes) {
  Cluster cluster = compute_cluster();
  cluster.devices[kCpu].profile = "cpu.json";
  CalibrationProfile profile;
  // Each time includes the CPU's 1 us launch overhead; compute is 100 us, 3 ms and 24 ms.
  profile.gemm_curve = {
      {512, 512, 512, 3.001e-3}, {128, 128, 128, 101e-6}, {1024, 1024, 1024, 24.001e-3}};
  const CostModel model(cluster, {{kCpu, profile}});
  const OpTime on_curve = time_of(model, matmul(DType::kFloat32, 512, 512, 512), kCpu);
  EXPECT_NEAR(on_curve.seconds, 3.001e-3, 1e-12);
  EXPECT_EQ(on_curve.source, "calibration cpu.json");
  // Between two points, time is linear in log-log: 256^3 is the geometric mean of the work.
  EXPECT_NEAR(time_of(model, matmul(DType::kFloat32, 256, 256, 256), kCpu).compute_seconds,
              std::sqrt(100e-6 * 3e-3), 1e-12);
  // Beyond the curve, the rate of its largest point.
  EXPECT_NEAR(time_of(model, matmul(DType::kFloat32, 2048, 1024, 1024), kCpu).compute_seconds,
              48e-3, 1e-12);
}

TEST(MatmulEfficiency, MeasuredTimesArePooledIntoAMonotoneCurve) {
  // 64^3 took longer than 128^3 (noise, or a cache effect): the two pool to one time.
  const MatmulEfficiency curve({{32, 32, 32, 10e-6}, {64, 64, 64, 30e-6}, {128, 128, 128, 20e-6}},
                               0, 1e12);
  const double pooled = std::sqrt(30e-6 * 20e-6);
  EXPECT_NEAR(curve.seconds(2.0 * 64 * 64 * 64, 1e12), pooled, 1e-15);
  EXPECT_NEAR(curve.seconds(2.0 * 128 * 128 * 128, 1e12), pooled, 1e-15);
  EXPECT_NEAR(curve.seconds(2.0 * 32 * 32 * 32, 1e12), 10e-6, 1e-15);
  // Another precision of twice the peak takes half the time.
  EXPECT_NEAR(curve.seconds(2.0 * 32 * 32 * 32, 2e12), 5e-6, 1e-15);
}

TEST(MatmulEfficiency, ABatchIsPricedAsAllItsFlopsOffTheCurveAsFarAsTheBatchesNearIt) {
  // Squares at 1 TFLOP/s; 8 products of 32^3 in one call took what their FLOPs' square (64^3)
  // takes, 8 of 64^3 twice what theirs (128^3) takes.
  const double s32 = 2.0 * 32 * 32 * 32 / 1e12, s64 = 8 * s32, s128 = 8 * s64;
  const MatmulEfficiency curve({{32, 32, 32, s32},
                                {64, 64, 64, s64},
                                {128, 128, 128, s128},
                                {32, 32, 32, s64, 8},
                                {64, 64, 64, 2 * s128, 8}},
                               0, 1e12);
  // A measured batch is its own figure, not 8 times its one product's.
  EXPECT_NEAR(curve.seconds(GemmShape{8, 32, 32, 32}, 1e12), s64, 1e-15);
  EXPECT_NEAR(curve.seconds(GemmShape{8, 64, 64, 64}, 1e12), 2 * s128, 1e-15);
  // One product is the squares' (a batch of 8 is three doublings away).
  EXPECT_NEAR(curve.seconds(GemmShape{1, 64, 64, 64}, 1e12), s64, 1e-15);
  // 16 of 32^3: all its FLOPs (two 64^3's) on the curve, off it by the batches within a doubling
  // in each of batch, m, n and k: 8 of 32^3 one doubling away (on the curve), 8 of 64^3 two
  // (2x).
  EXPECT_NEAR(curve.seconds(GemmShape{16, 32, 32, 32}, 1e12),
              2 * s64 * std::exp((std::log(2.0) / 4) / (1 + 0.25)), 1e-15);
  // 4 of 1024^3, nothing measured near: all its FLOPs at the curve's last rate.
  EXPECT_NEAR(curve.seconds(GemmShape{4, 1024, 1024, 1024}, 1e12),
              4 * 2.0 * 1024 * 1024 * 1024 / 1e12, 1e-15);
}

TEST(MatmulEfficiency, AShapeIsPricedAsFarOffTheSquaresAsTheMeasuredShapesNearIt) {
  // Squares at 1 TFLOP/s, and a product of 128 rows with 512^3's FLOPs that took 1.5x as long.
  const double square = 2.0 * 512 * 512 * 512 / 1e12, rows = 1.5 * square;
  const MatmulEfficiency curve({{128, 128, 128, 2.0 * 128 * 128 * 128 / 1e12},
                                {256, 256, 256, 2.0 * 256 * 256 * 256 / 1e12},
                                {512, 512, 512, square},
                                {128, 1024, 1024, rows}},
                               0, 1e12);
  // By FLOPs alone, the squares' times.
  EXPECT_NEAR(curve.seconds(2.0 * 512 * 512 * 512, 1e12), square, 1e-15);
  EXPECT_NEAR(curve.seconds(2.0 * 1024 * 512 * 512, 1e12), 2 * square, 1e-15);
  // A measured shape is its own figure.
  EXPECT_NEAR(curve.seconds(GemmShape{1, 512, 512, 512}, 1e12), square, 1e-15);
  EXPECT_NEAR(curve.seconds(GemmShape{1, 128, 1024, 1024}, 1e12), rows, 1e-15);
  // Twice the columns, within a doubling of the 128-row shape only: 1.5x the squares' time for
  // its FLOPs (beyond the last square, at its rate).
  EXPECT_NEAR(curve.seconds(GemmShape{1, 128, 2048, 1024}, 1e12), 2 * square * 1.5, 1e-15);
  // Nothing measured near a 4096x64x64 product: the squares' time for its FLOPs.
  EXPECT_NEAR(curve.seconds(GemmShape{1, 4096, 64, 64}, 1e12), 2.0 * 256 * 256 * 256 / 1e12, 1e-15);
  // Between shapes, the nearer weighs more: 256x512x512 is one doubling from 512^3 and two from
  // 256^3 (both on the squares' curve), three from the 128-row shape (1.5x).
  const double off = (std::log(1.5) / 3) / (1 + 0.5 + 1.0 / 3);
  const double flops = 2.0 * 256 * 512 * 512;
  EXPECT_NEAR(curve.seconds(GemmShape{1, 256, 512, 512}, 1e12),
              curve.seconds(flops, 1e12) * std::exp(off), 1e-15);
}

TEST(WorkCurve, PointsOfTheSameWorkAreOnePointAtTheirMeanLogTime) {
  // Four shapes of 2 MFLOP at 1, 8, 2 and 4 ms: one point at their geometric mean, whatever
  // their order (a lookup must not land on whichever of them sorted last).
  const double mean = std::pow(1e-3 * 8e-3 * 2e-3 * 4e-3, 0.25);
  for (const auto& times :
       {std::vector<double>{1e-3, 8e-3, 2e-3, 4e-3}, std::vector<double>{8e-3, 4e-3, 2e-3, 1e-3}}) {
    std::vector<WorkCurve::Point> points = {{1e6, 0.5e-3}};
    for (double seconds : times) points.push_back({2e6, seconds});
    const WorkCurve curve(points);
    EXPECT_NEAR(curve.seconds(2e6), mean, 1e-15);
    EXPECT_NEAR(curve.seconds(4e6), 2 * mean, 1e-15);  // beyond: the point's rate
    EXPECT_NEAR(curve.seconds(1e6), 0.5e-3, 1e-15);
  }
}

TEST(MatmulEfficiency, APointBoundByReadingItsWeightsIsLeftOut) {
  // One row by a 1024x1024 matrix: 4 MiB read in 30 us, at a weight rate of 150 GB/s 28 us of
  // it. Kept, it would price one row by a 1024x1024 or 512x1024 matrix as slow as reading them.
  const std::vector<CalibrationProfile::GemmPoint> points = {
      {1, 1024, 1024, 30e-6}, {128, 128, 128, 10e-6}, {256, 256, 256, 60e-6}};
  const BandwidthCurve weights({{4 << 20, (4 << 20) / 150e9}}, 0);
  const MatmulEfficiency without(points, 0, 1e12, weights);
  const GemmShape row{1, 1, 1024, 1024};
  const double flops = row.flops();  // below 128^3: 128^3's rate
  EXPECT_NEAR(without.seconds(row, 1e12), 10e-6 * flops / (2.0 * 128 * 128 * 128), 1e-15);
  const MatmulEfficiency with(points, 0, 1e12);
  EXPECT_NEAR(with.seconds(row, 1e12), 30e-6, 1e-15);
}

TEST(MatmulEfficiency, SaturatingCurveWithoutMeasurements) {
  const MatmulEfficiency curve;
  EXPECT_FALSE(curve.measured());
  EXPECT_DOUBLE_EQ(curve.seconds(8e9, 1e15),
                   8e9 / (MatmulEfficiency::kPeakFraction * 1e15) + MatmulEfficiency::kRampSeconds);
  EXPECT_EQ(curve.seconds(0, 1e15), 0);
}

}  // namespace
}  // namespace tandem
