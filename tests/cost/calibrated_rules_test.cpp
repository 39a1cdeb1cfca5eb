// The rules a calibration profile adds to the roofline: bandwidth by working set, weights by
// the run's weights, control flow by its bodies, views' executor steps, transcendental rates,
// each kind's fixed cost, depthwise convolutions by the layouts their kernel sees.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "cost/bandwidth_curve.h"
#include "cost/cost_model.h"
#include "test_cluster.h"

namespace tandem {
namespace {

using testing::compute_cluster;
using testing::GraphBuilder;

constexpr int kCpu = 3;
constexpr double kOverhead = 1e-6;  // the test CPU's launch overhead

Cluster profiled_cluster() {
  Cluster cluster = compute_cluster();
  cluster.devices[kCpu].profile = "cpu.json";
  return cluster;
}

// Each point's time includes one launch overhead, as `tandem calibrate` measures it.
CalibrationProfile::BandwidthPoint point(double bytes, double rate) {
  return {bytes, bytes / rate + kOverhead};
}

// In L2 up to 1 MiB at 200 GB/s, main memory from 256 MiB at 10 GB/s.
CalibrationProfile cache_profile() {
  CalibrationProfile profile;
  profile.bandwidth_curve = {point(1 << 20, 200e9), point(256 << 20, 10e9)};
  return profile;
}

Graph add(int64_t elements) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {elements});
  const int b = builder.input("b", DType::kFloat32, {elements});
  return builder.infer({builder.node("Add", {a, b})});
}

OpTime time_of(const CostModel& model, const Graph& graph) {
  return model.op_time(graph.nodes.at(0), graph, kCpu);
}

TEST(BandwidthCurve, InterpolatesRateInLogLogAndKeepsTheEndRates) {
  const BandwidthCurve curve({point(1e6, 100e9), point(100e6, 10e9)}, kOverhead);
  EXPECT_NEAR(curve.rate(1e6), 100e9, 1e3);
  EXPECT_NEAR(curve.rate(1e3), 100e9, 1e3);          // below the curve: the first point's rate
  EXPECT_NEAR(curve.rate(1e9), 10e9, 1e3);           // beyond it: the last point's
  EXPECT_NEAR(curve.rate(10e6), 31.6227766e9, 1e3);  // halfway in log bytes: the geometric mean
  EXPECT_FALSE(BandwidthCurve().measured());
}

TEST(BandwidthCurve, MoreBytesNeverTakeLessTime) {
  // 2 MB measured faster per byte than 4 times 0.5 MB: it takes 0.5 MB's time, no less.
  const BandwidthCurve curve({point(0.5e6, 10e9), point(2e6, 100e9)}, kOverhead);
  EXPECT_NEAR(2e6 / curve.rate(2e6), 0.5e6 / 10e9, 1e-15);
  double previous = 0;
  for (double bytes = 1e5; bytes < 1e8; bytes *= 1.5) {
    const double seconds = bytes / curve.rate(bytes);
    EXPECT_GE(seconds, previous) << bytes;
    previous = seconds;
  }
}

TEST(CalibratedCost, InCacheTensorMovesAtTheInCacheBandwidth) {
  const CostModel model(profiled_cluster(), {{kCpu, cache_profile()}});
  // 3 x 256 KiB = 768 KiB in all: within the 1 MiB point, at its 200 GB/s.
  const Graph small = add(64 << 10);
  const OpTime in_cache = time_of(model, small);
  EXPECT_NEAR(in_cache.memory_seconds, small.nodes[0].cost.bytes / 200e9, 1e-15);
  EXPECT_EQ(in_cache.source, "calibration cpu.json");
  // 3 x 256 MiB: past the curve, at main memory's 10 GB/s.
  const Graph large = add(64 << 20);
  EXPECT_NEAR(time_of(model, large).memory_seconds, large.nodes[0].cost.bytes / 10e9, 1e-9);
  // Without a curve, the one memory bandwidth figure (20 GB/s) for both.
  const CostModel plain(compute_cluster());
  EXPECT_NEAR(time_of(plain, small).memory_seconds, small.nodes[0].cost.bytes / 20e9, 1e-15);
}

TEST(CalibratedCost, AnInputTouchedFarBackMovesAtTheRateOfTheCacheThatDistanceFitsIn) {
  const CostModel model(profiled_cluster(), {{kCpu, cache_profile()}});
  // An Add of two 256 KiB tensors, each written by a Neg: just before, or one before 128 MiB
  // of other traffic (a Neg of 64 MiB between).
  const auto graph = [](bool far) {
    GraphBuilder builder;
    const int x = builder.input("x", DType::kFloat32, {64 << 10});
    const int x2 = builder.input("x2", DType::kFloat32, {64 << 10});
    const int a = builder.node("Neg", {x});
    std::vector<int> outputs;
    if (far)
      outputs.push_back(builder.node("Neg", {builder.input("y", DType::kFloat32, {16 << 20})}));
    const int f = builder.node("Neg", {x2});
    outputs.push_back(builder.node("Add", {a, f}));
    return builder.infer(outputs);
  };
  const Graph near = graph(false), far = graph(true);
  const auto add_time = [&](const Graph& g) { return model.op_time(g.nodes.back(), g, kCpu); };
  ASSERT_EQ(far.nodes.size(), 4u);
  // Near: the op's own 768 KiB and 1 MiB since `a` was written, in cache at 200 GB/s.
  EXPECT_NEAR(add_time(near).memory_seconds, near.nodes.back().cost.bytes / 200e9, 1e-15);
  // Far: 129 MiB since `a` was written (x, a, y, its Neg's output, x2, f): `a` moves at the
  // curve's rate there, as a lone Add of that many bytes moves them; `f` and the sum, touched
  // just before and now, at the op's own in-cache rate.
  const double distance = 4.0 * (4 * (64 << 10) + 2 * (16 << 20));
  const Graph lone = add(static_cast<int64_t>(distance / 12));
  const double far_rate = lone.nodes[0].cost.bytes / time_of(model, lone).memory_seconds;
  const double tensor = 4.0 * (64 << 10);
  EXPECT_NEAR(add_time(far).memory_seconds, tensor / far_rate + 2 * tensor / 200e9, 1e-12);
  EXPECT_GT(add_time(far).memory_seconds, 4 * add_time(near).memory_seconds);
  // The Neg between reads a graph input: nothing touched it before, its own bytes price it, as
  // they do a Neg alone.
  GraphBuilder builder;
  const Graph alone =
      builder.infer({builder.node("Neg", {builder.input("y", DType::kFloat32, {16 << 20})})});
  EXPECT_EQ(model.op_time(far.nodes[1], far, kCpu).memory_seconds,
            time_of(model, alone).memory_seconds);
}

TEST(CalibratedCost, WeightsMoveAtTheRateOfAllTheRunsWeights) {
  // A 2-row MatMul by 1 MiB of weights, in a graph with 1 MiB or 64 MiB of weights in all.
  const auto graph = [](int64_t extra_weights) {
    GraphBuilder builder;
    const int x = builder.input("x", DType::kFloat32, {2, 512});
    const int w = builder.constant("w", DType::kFloat32, {512, 512});
    const int y = builder.node("MatMul", {x, w});
    if (extra_weights == 0) return builder.infer({y});
    const int other = builder.constant("other", DType::kFloat32, {extra_weights});
    return builder.infer({y, builder.node("Add", {y, builder.node("ReduceSum", {other})})});
  };
  CalibrationProfile profile;  // in cache at 200 GB/s up to 4 MiB
  profile.bandwidth_curve = {point(4 << 20, 200e9), point(256 << 20, 10e9)};
  profile.weight_curve = {{1 << 20, (1 << 20) / 100e9}, {64 << 20, (64 << 20) / 5e9}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const Graph small = graph(0);
  const Graph large = graph(63 << 18);  // 63 MiB more
  const double weight_bytes = 512.0 * 512 * 4;
  const double activation_bytes = small.nodes[0].cost.bytes - weight_bytes;
  const double activations = activation_bytes / 200e9;
  EXPECT_NEAR(time_of(model, small).memory_seconds, weight_bytes / 100e9 + activations, 1e-12);
  EXPECT_NEAR(time_of(model, large).memory_seconds, weight_bytes / 5e9 + activations, 1e-12);
}

TEST(WeightCurve, SpatialConvolutionsTakeTheirOwnCurveAndOneByOneConvolutionsTheMatMuls) {
  const auto conv = [](int64_t kernel) {
    GraphBuilder builder;
    const int x = builder.input("x", DType::kFloat32, {2, 512, 2, 2});
    const int w = builder.constant("w", DType::kFloat32, {512, 512, kernel, kernel});
    const int64_t pad = kernel / 2;
    return builder.infer({builder.node("Conv", {x, w},
                                       {{"kernel_shape", std::vector<int64_t>{kernel, kernel}},
                                        {"pads", std::vector<int64_t>{pad, pad, pad, pad}}})});
  };
  CalibrationProfile profile;
  profile.bandwidth_curve = {point(4 << 20, 200e9), point(256 << 20, 10e9)};
  profile.weight_curve = {{1 << 20, (1 << 20) / 100e9}, {64 << 20, (64 << 20) / 50e9}};
  profile.conv_weight_curve = {{1 << 20, (1 << 20) / 40e9}, {64 << 20, (64 << 20) / 10e9}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const auto weight_seconds = [&](const Graph& graph, double rate) {
    const double weights =
        static_cast<double>(graph.values[graph.find_value("w")].constant.nbytes());
    const double activations = graph.nodes[0].cost.bytes - weights;
    return weights / rate + activations / 200e9;
  };
  // 9 MiB of 3x3 weights in a run of 9 MiB: between the conv curve's points, in log-log.
  const Graph spatial = conv(3);
  const double conv_rate = 40e9 * std::pow(10e9 / 40e9, std::log(9.0) / std::log(64.0));
  EXPECT_NEAR(time_of(model, spatial).memory_seconds, weight_seconds(spatial, conv_rate),
              1e-3 * weight_seconds(spatial, conv_rate));
  // A 1x1 convolution is a GEMM: its 1 MiB of weights at the MatMuls' rate.
  const Graph pointwise = conv(1);
  EXPECT_NEAR(time_of(model, pointwise).memory_seconds, weight_seconds(pointwise, 100e9),
              1e-3 * weight_seconds(pointwise, 100e9));
}

TEST(WeightCurve, AStreamedConvolutionHidesWhatCalibrationMeasuredOfItsWeightsBehindItsCompute) {
  // ResNet's last 3x3 convolution: 1x512x7x7, 9 MiB of weights, the run's weights.
  GraphBuilder builder;
  const Graph conv = builder.infer({builder.node(
      "Conv",
      {builder.input("x", DType::kFloat32, {1, 512, 7, 7}),
       builder.constant("w", DType::kFloat32, {512, 512, 3, 3})},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  CalibrationProfile profile;
  profile.bandwidth_curve = {point(4 << 20, 200e9), point(256 << 20, 10e9)};
  profile.weight_curve = {{1 << 20, (1 << 20) / 100e9}, {64 << 20, (64 << 20) / 50e9}};
  profile.conv_weight_curve = {{1 << 20, (1 << 20) / 40e9}, {64 << 20, (64 << 20) / 10e9}};
  const OpTime alone = time_of(CostModel(profiled_cluster(), {{kCpu, profile}}), conv);
  const double compute = alone.compute_seconds, weights = alone.weight_seconds;
  const double fixed = alone.overhead_seconds;
  ASSERT_GT(weights, 0.1 * compute);  // both count
  // Without the point, the longer of compute and memory.
  EXPECT_DOUBLE_EQ(alone.seconds, std::max(compute, alone.memory_seconds) + alone.overhead_seconds);
  const double weight_bytes = 4.0 * 512 * 512 * 9;
  const auto with_point = [&](double kernel) {
    CalibrationProfile measured = profile;
    measured.streamed_conv_points = {
        {2.0 * 49 * 512 * 512 * 9, weight_bytes, weight_bytes, kernel + fixed}};
    return time_of(CostModel(profiled_cluster(), {{kCpu, measured}}), conv).seconds;
  };
  // A kernel that took compute and weights end to end hides nothing: the weights' time adds.
  const double longer = std::max(compute, alone.memory_seconds);
  EXPECT_NEAR(with_point(compute + weights), longer + std::min(compute, weights) + fixed, 1e-12);
  // One that hid half of the shorter of the two: the other half adds.
  const double half = std::min(compute, weights) / 2;
  EXPECT_NEAR(with_point(compute + weights - half), longer + half + fixed, 1e-12);
  // One no slower than its compute hides all: the longer, as without the point.
  EXPECT_DOUBLE_EQ(with_point(std::max(compute, weights)), alone.seconds);
}

TEST(WeightCurve, AProductPaysWhatCalibrationMeasuredOfItsWeightsStreamBeyondItsCache) {
  // A transformer's 32-row product by 512x512 weights: the run's weights 16 MiB (16 such), or
  // its own 1 MiB only.
  const auto product = [](int64_t more_weights) {
    GraphBuilder builder;
    std::vector<int> outputs = {
        builder.node("MatMul", {builder.input("x", DType::kFloat32, {32, 512}),
                                builder.constant("w", DType::kFloat32, {512, 512})})};
    if (more_weights > 0) {
      outputs.push_back(builder.node(
          "MatMul", {builder.input("y", DType::kFloat32, {1, 1024}),
                     builder.constant("v", DType::kFloat32, {1024, more_weights / 4096})}));
    }
    return builder.infer(outputs);
  };
  const Graph streamed = product(15 << 20), alone = product(0);
  CalibrationProfile profile;
  profile.bandwidth_curve = {point(1 << 20, 200e9), point(256 << 20, 10e9)};
  // Weights in L2 at 100 GB/s, past it at 20.
  profile.weight_curve = {{1 << 20, (1 << 20) / 100e9}, {16 << 20, (16 << 20) / 20e9}};
  profile.gemm_curve = {{256, 256, 256, 200e-6}, {512, 512, 512, 1.6e-3}};
  const auto seconds_of = [&](const CalibrationProfile& measured, const Graph& graph) {
    return time_of(CostModel(profiled_cluster(), {{kCpu, measured}}), graph);
  };
  const OpTime before = seconds_of(profile, streamed);
  const double compute = before.compute_seconds;
  // Without the point, the longer of compute and memory, as before.
  EXPECT_DOUBLE_EQ(before.seconds,
                   std::max(compute, before.memory_seconds) + before.overhead_seconds);
  // What the weights take past L2 beyond reading them from it: 1 MiB at 20 GB/s less at 100.
  const double beyond = (1 << 20) / 20e9 - (1 << 20) / 100e9;
  ASSERT_LT(beyond, compute);
  const double fixed = before.overhead_seconds;
  const auto with_point = [&](double kernel, const Graph& graph) {
    CalibrationProfile measured = profile;
    measured.streamed_product_points = {{32, 512, 512, 16 << 20, kernel + fixed}};
    return seconds_of(measured, graph).seconds;
  };
  // A point that took compute and the stream end to end hides nothing: all of it adds.
  EXPECT_NEAR(with_point(compute + beyond, streamed), before.seconds + beyond, 1e-12);
  // One that hid half of it: half adds.
  EXPECT_NEAR(with_point(compute + beyond / 2, streamed), before.seconds + beyond / 2, 1e-12);
  // One no slower than its compute hides it all.
  EXPECT_DOUBLE_EQ(with_point(compute, streamed), before.seconds);
  // A run whose weights fit where the point's compute read them pays nothing more.
  EXPECT_DOUBLE_EQ(with_point(compute + beyond, alone), seconds_of(profile, alone).seconds);
}

TEST(WeightCurve, WeightsSharedByProductsCountOncePerProductWhereEachKeepsItsOwnCopy) {
  // 12 products of 32x256 by 256x256 (256 KiB each): one shared weight, or one each.
  const auto chain = [](bool shared) {
    GraphBuilder builder;
    int x = builder.input("x", DType::kFloat32, {32, 256});
    const int weight = shared ? builder.constant("w", DType::kFloat32, {256, 256}) : -1;
    for (int i = 0; i < 12; ++i) {
      x = builder.node("MatMul", {x, shared ? weight
                                            : builder.constant("w" + std::to_string(i),
                                                               DType::kFloat32, {256, 256})});
    }
    return builder.infer({x});
  };
  const Graph shared = chain(true), distinct = chain(false);
  CalibrationProfile profile;
  profile.bandwidth_curve = {point(1 << 20, 200e9), point(256 << 20, 10e9)};
  profile.weight_curve = {{1 << 20, (1 << 20) / 100e9}, {16 << 20, (16 << 20) / 20e9}};
  const auto weight_seconds = [&](BackendKind backend, const Graph& graph) {
    Cluster cluster = profiled_cluster();
    cluster.devices[kCpu].backend = backend;
    return time_of(CostModel(cluster, {{kCpu, profile}}), graph).weight_seconds;
  };
  // The CPU backend packs a copy per product: 3 MiB either way, past the 1 MiB point.
  EXPECT_DOUBLE_EQ(weight_seconds(BackendKind::kCpu, shared),
                   weight_seconds(BackendKind::kCpu, distinct));
  // PJRT keeps the one constant: the shared weight's run is 256 KiB, read at the cache's rate.
  EXPECT_LT(weight_seconds(BackendKind::kPjrt, shared),
            0.8 * weight_seconds(BackendKind::kPjrt, distinct));
  EXPECT_DOUBLE_EQ(weight_seconds(BackendKind::kPjrt, distinct),
                   weight_seconds(BackendKind::kCpu, distinct));
}

// A Loop carrying a 4x16 tensor through `Add(x, bias)` and `Tanh`, with its trip count a
// constant (or a graph input when `trips` < 0).
Graph loop(int64_t trips) {
  GraphBuilder body;
  body.input("i", DType::kInt64, {});
  const int condition = body.input("cond", DType::kBool, {});
  const int x = body.input("x", DType::kFloat32, {4, 16});
  const int bias = body.constant("bias", DType::kFloat32, {4, 16});
  const int next = body.node("Tanh", {body.node("Add", {x, bias})});
  auto body_graph = std::make_shared<Graph>(body.infer({body.node("Identity", {condition}), next}));

  GraphBuilder builder;
  int trip_count = -1;
  if (trips >= 0) {
    trip_count = builder.constant("trips", DType::kInt64, {});
  } else {
    trip_count = builder.input("trips", DType::kInt64, {});
  }
  const int keep_going = builder.constant("go", DType::kBool, {});
  const int x0 = builder.input("x0", DType::kFloat32, {4, 16});
  Graph graph =
      builder.infer({builder.node("Loop", {trip_count, keep_going, x0}, {{"body", body_graph}})});
  if (trips >= 0) {
    graph.values[graph.find_value("trips")].constant =
        Tensor::from_vector<int64_t>(DType::kInt64, {}, {trips});
  }
  graph.values[graph.find_value("go")].constant =
      Tensor::from_vector<uint8_t>(DType::kBool, {}, {1});
  return graph;
}

double body_seconds(const CostModel& model, const Graph& graph) {
  const Graph& body = *graph.nodes.at(0).attr_graph("body");
  double seconds = 0;
  for (const Node& node : body.nodes) seconds += model.op_seconds(node, body, kCpu);
  return seconds;
}

TEST(CalibratedCost, LoopCostsItsBodyTimesItsTripCount) {
  CalibrationProfile profile = cache_profile();
  profile.subgraph_run_overhead = testing::figure(2e-6, "calibration cpu.json: loop");
  profile.view_overhead = testing::figure(0.25e-6, "calibration cpu.json: views");
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const Graph five = loop(5);
  const double body = body_seconds(model, five);
  EXPECT_GT(body, 2 * kOverhead + 0.25e-6);  // Add, Tanh and the Identity's view step
  const OpTime time = time_of(model, five);
  EXPECT_NEAR(time.seconds, kOverhead + 5 * (2e-6 + body), 1e-15);
  EXPECT_EQ(time.source, "Loop: body x 5 (constant trip count)");
  // No iteration, and an unknown trip count taken as one.
  EXPECT_NEAR(time_of(model, loop(0)).seconds, kOverhead, 1e-15);
  const OpTime unknown = time_of(model, loop(-1));
  EXPECT_NEAR(unknown.seconds, kOverhead + 2e-6 + body, 1e-15);
  EXPECT_EQ(unknown.source, "Loop: body x 1 (trip count unknown, one iteration assumed)");
  // A profile that timed a Loop's iteration prices a Loop's by it.
  profile.loop_iteration_overhead = testing::figure(5e-6, "calibration cpu.json: iteration");
  const CostModel iterated(profiled_cluster(), {{kCpu, profile}});
  EXPECT_NEAR(time_of(iterated, five).seconds, kOverhead + 5 * (5e-6 + body), 1e-15);
}

TEST(CalibratedCost, IfCostsTheBranchItTakes) {
  const auto branch = [](const std::string& op, int64_t elements) {
    GraphBuilder builder;
    const int x = builder.constant("c" + op, DType::kFloat32, {elements});
    return std::make_shared<Graph>(builder.infer({builder.node(op, {x})}));
  };
  GraphBuilder builder;
  const int condition = builder.input("cond", DType::kBool, {});
  const Graph graph = builder.infer({builder.node(
      "If", {condition},
      {{"then_branch", branch("Relu", 1 << 20)}, {"else_branch", branch("Neg", 16)}})});
  const CostModel model(profiled_cluster(), {{kCpu, cache_profile()}});
  const Graph& then_branch = *graph.nodes[0].attr_graph("then_branch");
  const double then_seconds = model.op_seconds(then_branch.nodes[0], then_branch, kCpu);
  // Unknown condition: the costlier branch.
  const OpTime time = time_of(model, graph);
  EXPECT_NEAR(time.seconds, kOverhead + then_seconds, 1e-15);
  EXPECT_EQ(time.source, "If: the costlier branch (then)");
}

TEST(CalibratedCost, ViewsCostTheirMeasuredExecutorStep) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {64, 64});
  const Graph graph = builder.infer({builder.node("Identity", {x})});
  CalibrationProfile profile = cache_profile();
  profile.view_overhead = testing::figure(0.3e-6, "calibration cpu.json: views");
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const OpTime time = time_of(model, graph);
  EXPECT_DOUBLE_EQ(time.seconds, 0.3e-6);
  EXPECT_EQ(time.bound, Bound::kOverhead);
  EXPECT_EQ(time.source, "calibration cpu.json: view step");
  // A profile that did not measure it: no kernel, no time.
  const CostModel old(profiled_cluster(), {{kCpu, cache_profile()}});
  EXPECT_EQ(time_of(old, graph).seconds, 0);
}

TEST(CalibratedCost, TranscendentalOpsRunAtTheirMeasuredRate) {
  const auto unary = [](const std::string& op) {
    GraphBuilder builder;
    const int x = builder.input("x", DType::kFloat32, {1 << 16});
    return builder.infer({builder.node(op, {x})});
  };
  CalibrationProfile profile = cache_profile();
  profile.vector_op_rates = {{"Tanh", 1e9}, {"Erf", 4e9}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const Graph tanh = unary("Tanh");
  EXPECT_NEAR(time_of(model, tanh).compute_seconds, tanh.nodes[0].cost.flops / 1e9, 1e-15);
  EXPECT_EQ(time_of(model, tanh).bound, Bound::kCompute);
  // Sigmoid was not measured: the slowest measured transcendental's rate.
  const Graph sigmoid = unary("Sigmoid");
  EXPECT_NEAR(time_of(model, sigmoid).compute_seconds, sigmoid.nodes[0].cost.flops / 1e9, 1e-15);
  // Relu is not transcendental: the vector peak (100 GFLOP/s).
  const Graph relu = unary("Relu");
  EXPECT_NEAR(time_of(model, relu).compute_seconds, relu.nodes[0].cost.flops / 100e9, 1e-15);
}

TEST(CalibratedCost, AGeluOfTheTanhApproximationRunsAtItsOwnRate) {
  const auto gelu = [](const std::string& approximate) {
    GraphBuilder builder;
    const int x = builder.input("x", DType::kFloat32, {1 << 16});
    return builder.infer({builder.node("Gelu", {x}, {{"approximate", approximate}})});
  };
  CalibrationProfile profile = cache_profile();
  profile.vector_op_rates = {{"Gelu", 4e9}, {"Gelu:tanh", 1.6e9}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const Graph exact = gelu("none"), tanh = gelu("tanh");
  EXPECT_NEAR(time_of(model, exact).compute_seconds, exact.nodes[0].cost.flops / 4e9, 1e-15);
  EXPECT_NEAR(time_of(model, tanh).compute_seconds, tanh.nodes[0].cost.flops / 1.6e9, 1e-15);
  // An older profile without it: the slowest measured transcendental's rate, not the erf one's.
  profile.vector_op_rates = {{"Gelu", 4e9}, {"Tanh", 2e9}};
  const CostModel older(profiled_cluster(), {{kCpu, profile}});
  EXPECT_NEAR(time_of(older, tanh).compute_seconds, tanh.nodes[0].cost.flops / 2e9, 1e-15);
}

TEST(CalibratedCost, AKindTimedByElementsTakesItsCurveArithmeticIncluded) {
  // A LayerNorm of 65,536 elements: 8 FLOPs each at the vector peak (100 GFLOP/s) take 5.2 us,
  // its bytes 2.6; its kind's curve, arithmetic included, 4 us.
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"LayerNormalization", 1e-6}};
  profile.op_element_curves = {{"LayerNormalization", {{65536, 1e-6 + 4e-6}}}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {256, 256});
  const int scale = builder.input("scale", DType::kFloat32, {256});
  const Graph graph = builder.infer({builder.node("LayerNormalization", {x, scale})});
  ASSERT_GT(graph.nodes[0].cost.flops / 100e9, 4e-6);
  EXPECT_EQ(time_of(model, graph).compute_seconds, 0);
  EXPECT_NEAR(time_of(model, graph).memory_seconds, 4e-6, 1e-12);
  // Without the curve, its FLOPs at the vector peak.
  const CostModel plain(profiled_cluster(), {{kCpu, cache_profile()}});
  EXPECT_NEAR(time_of(plain, graph).compute_seconds, graph.nodes[0].cost.flops / 100e9, 1e-15);
}

TEST(CalibratedCost, AKindAlongRowsPaysPerRowAsTheTwoLengthsTimedSay) {
  // A Softmax of 32,768 elements took 20 us in rows of 256 and 50 in rows of 16 (its fixed cost,
  // 1 us, besides): 30 us more for 1,920 more rows.
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"Softmax", 1e-6}};
  profile.op_element_curves = {
      {"Softmax", {{32768, 1e-6 + 20e-6, 256}, {32768, 1e-6 + 50e-6, 16}}}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const auto softmax = [](const Shape& shape, int64_t axis) {
    GraphBuilder builder;
    const int x = builder.input("x", DType::kFloat32, shape);
    return builder.infer({builder.node("Softmax", {x}, {{"axis", axis}})});
  };
  const auto priced = [&](const Graph& graph) { return time_of(model, graph).memory_seconds; };
  const double per_row = 30e-6 / (2048 - 128);
  // Rows of 32 (attention's over 32 tokens): 1,024 rows, 896 more than in rows of 256.
  const Graph rows_of_32 = softmax({2, 16, 32, 32}, -1);
  EXPECT_EQ(row_length(rows_of_32.nodes[0], rows_of_32), 32);
  EXPECT_NEAR(priced(rows_of_32), 20e-6 + 896 * per_row, 1e-12);
  // The lengths timed are their own points; longer rows, fewer of them, a little less.
  EXPECT_NEAR(priced(softmax({128, 256}, 1)), 20e-6, 1e-12);
  EXPECT_NEAR(priced(softmax({2048, 16}, -1)), 50e-6, 1e-12);
  EXPECT_NEAR(priced(softmax({32, 1024}, -1)), 20e-6 - 96 * per_row, 1e-12);
  // Along an inner axis the kernel runs down columns: no row length, its elements' time.
  const Graph columns = softmax({2, 16, 32, 32}, 2);
  EXPECT_EQ(row_length(columns.nodes[0], columns), 0);
  EXPECT_NEAR(priced(columns), 20e-6, 1e-12);
  // A LayerNormalization's rows are every dim from its axis on.
  GraphBuilder normalizing;
  const int x = normalizing.input("x", DType::kFloat32, {4, 8, 16});
  const int scale = normalizing.input("scale", DType::kFloat32, {8, 16});
  const Graph norm = normalizing.infer(
      {normalizing.node("LayerNormalization", {x, scale}, {{"axis", int64_t{1}}})});
  EXPECT_EQ(row_length(norm.nodes[0], norm), 128);
  // A GlobalAveragePool's rows are its planes, its elements those it reads.
  GraphBuilder pooling;
  const int image = pooling.input("image", DType::kFloat32, {2, 576, 2, 2});
  const Graph pool = pooling.infer({pooling.node("GlobalAveragePool", {image})});
  EXPECT_EQ(row_length(pool.nodes[0], pool), 4);
  EXPECT_EQ(rated_elements(pool.nodes[0], pool), 2 * 576 * 4);
  // Timed in rows of one length only (an older profile): its elements' time, whatever its rows.
  CalibrationProfile older = cache_profile();
  older.op_overheads = {{"Softmax", 1e-6}};
  older.op_element_curves = {{"Softmax", {{32768, 1e-6 + 20e-6}}}};
  const CostModel old_model(profiled_cluster(), {{kCpu, older}});
  EXPECT_NEAR(time_of(old_model, rows_of_32).memory_seconds, 20e-6, 1e-12);
}

TEST(CalibratedCost, KindsTimedByElementsTakeNoLessThanTheirCurve) {
  CalibrationProfile profile = cache_profile();
  // Points include the kind's fixed cost, which the curve leaves to the overhead.
  profile.op_overheads = {{"Transpose", 1e-6}};
  profile.op_element_curves = {{"Transpose", {{4096, 1e-6 + 40e-6}, {65536, 1e-6 + 640e-6}}},
                               {"NonZero", {{1024, kOverhead + 1e-6}}}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const CostModel plain(profiled_cluster(), {{kCpu, cache_profile()}});
  GraphBuilder transposing;
  const int x = transposing.input("x", DType::kFloat32, {1, 64, 32, 16});
  const Graph transpose = transposing.infer(
      {transposing.node("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})});
  // 32,768 elements: between the points, linear in log-log (here 40 µs for every 4,096).
  EXPECT_NEAR(time_of(model, transpose).memory_seconds, 320e-6, 1e-9);
  EXPECT_NEAR(time_of(model, transpose).seconds, 320e-6 + 1e-6, 1e-9);
  EXPECT_LT(time_of(plain, transpose).memory_seconds, 320e-6);
  EXPECT_NE(time_of(model, transpose).source.find("Transpose by elements"), std::string::npos)
      << time_of(model, transpose).source;
  // A NonZero's output size depends on the data: its input's elements are what it scans (past
  // the last point, at that point's rate).
  GraphBuilder masking;
  const int mask = masking.input("mask", DType::kBool, {3072});
  const Graph non_zero = masking.infer({masking.node("NonZero", {mask})});
  EXPECT_EQ(rated_elements(non_zero.nodes[0], non_zero), 3072);
  EXPECT_NEAR(time_of(model, non_zero).memory_seconds, 3e-6, 1e-12);
  // An EmbeddingBag's work is the rows it reads, however many bags they fill: 40 rows of 64.
  GraphBuilder bagging;
  const int table = bagging.constant("table", DType::kFloat32, {1000, 64});
  const int indices = bagging.input("indices", DType::kInt64, {40});
  const int starts = bagging.input("starts", DType::kInt64, {4});
  const int ends = bagging.input("ends", DType::kInt64, {4});
  const Graph bags =
      bagging.infer({bagging.node("EmbeddingBag", {table, indices, starts, ends},
                                  {{"mode", std::string("sum")}, {"bags", int64_t{4}}})});
  EXPECT_EQ(rated_elements(bags.nodes[0], bags), 40 * 64);
  // A TopK scans its rows for the few it writes: the elements it reads.
  GraphBuilder ranking;
  const int scores = ranking.input("scores", DType::kFloat32, {2, 200});
  const int k = ranking.constant("k", DType::kInt64, {1});
  Graph top = ranking.infer({ranking.node("TopK", {scores, k})});
  EXPECT_EQ(rated_elements(top.nodes[0], top), 400);
  // A NonMaxSuppression, its box pairs per batch and class: 100 boxes make 4950, and kept boxes
  // capped at 10 compare 45 pairs among themselves and 90 x 10 with those after them.
  GraphBuilder suppressing;
  const int boxes = suppressing.input("boxes", DType::kFloat32, {1, 100, 4});
  const int box_scores = suppressing.input("box_scores", DType::kFloat32, {1, 3, 100});
  const int cap = suppressing.input("cap", DType::kInt64, {1});
  const Graph uncapped =
      suppressing.infer({suppressing.node("NonMaxSuppression", {boxes, box_scores})});
  EXPECT_EQ(rated_elements(uncapped.nodes[0], uncapped), 3 * 4950);
  Graph capped = uncapped;
  capped.nodes[0].inputs.push_back(cap);
  capped.values[cap].constant = Tensor::from_vector<int64_t>(DType::kInt64, {1}, {10});
  EXPECT_EQ(rated_elements(capped.nodes[0], capped), 3 * (45 + 90 * 10));
  // A kind without a curve keeps the memory curve's time; a curve faster than it changes nothing.
  EXPECT_EQ(time_of(model, add(16)).memory_seconds, time_of(plain, add(16)).memory_seconds);
  profile.op_element_curves = {{"Transpose", {{65536, 1e-6 + 1e-9}}}};
  const CostModel fast(profiled_cluster(), {{kCpu, profile}});
  EXPECT_EQ(time_of(fast, transpose).memory_seconds, time_of(plain, transpose).memory_seconds);
}

TEST(CalibratedCost, CopiesInShortRunsTakeNoLessThanTheirKindsTimeForTheirRuns) {
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"Gather", 1e-6}, {"Concat", 1e-6}};
  // Points include the kind's fixed cost, which the curve leaves to the overhead: 3 ns a run.
  profile.op_run_curves = {{"Gather", {{1024, 1e-6 + 3.072e-6}, {65536, 1e-6 + 196.608e-6}}},
                           {"Concat", {{1024, 1e-6 + 3.072e-6}, {65536, 1e-6 + 196.608e-6}}}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const CostModel plain(profiled_cluster(), {{kCpu, cache_profile()}});
  // One class's scores of a detector's 3234 boxes: 3234 runs of one float.
  GraphBuilder column;
  const int scores = column.input("scores", DType::kFloat32, {3234, 91});
  const int which = column.constant("which", DType::kInt64, {1});
  const Graph gather_column =
      column.infer({column.node("Gather", {scores, which}, {{"axis", int64_t{1}}})});
  EXPECT_EQ(copy_runs(gather_column.nodes[0], gather_column), 3234);
  EXPECT_NEAR(time_of(model, gather_column).memory_seconds, 3234 * 3e-9, 1e-12);
  EXPECT_NE(time_of(model, gather_column).source.find("Gather by runs"), std::string::npos)
      << time_of(model, gather_column).source;
  EXPECT_LT(time_of(plain, gather_column).memory_seconds, 3234 * 3e-9);
  // Three rows of 91: three runs, no more than the memory curve's time.
  GraphBuilder rows;
  const int table = rows.input("table", DType::kFloat32, {3234, 91});
  const int picked = rows.constant("picked", DType::kInt64, {3});
  const Graph gather_rows = rows.infer({rows.node("Gather", {table, picked})});
  EXPECT_EQ(copy_runs(gather_rows.nodes[0], gather_rows), 3);
  EXPECT_EQ(time_of(model, gather_rows).memory_seconds, time_of(plain, gather_rows).memory_seconds);
  // A Concat of boxes' coordinates in pairs: a run per input and row.
  GraphBuilder pairs;
  const int a = pairs.input("a", DType::kFloat32, {3234, 1, 2});
  const int b = pairs.input("b", DType::kFloat32, {3234, 1, 2});
  const Graph concat = pairs.infer({pairs.node("Concat", {a, b}, {{"axis", int64_t{2}}})});
  EXPECT_EQ(copy_runs(concat.nodes[0], concat), 2 * 3234);
  EXPECT_NEAR(time_of(model, concat).memory_seconds, 2 * 3234 * 3e-9, 1e-12);
  // Other ops copy no runs.
  EXPECT_EQ(copy_runs(add(16).nodes[0], add(16)), 0);
}

TEST(CalibratedCost, AnOpOfAMeasuredKindCostsItsOwnOverhead) {
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"Gemm", 3e-6}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {2, 4});
  const int w = builder.constant("w", DType::kFloat32, {4, 4});
  const Graph gemm = builder.infer({builder.node("Gemm", {x, w})});
  EXPECT_EQ(time_of(model, gemm).overhead_seconds, 3e-6);
  EXPECT_EQ(time_of(model, gemm).bound, Bound::kOverhead);
  EXPECT_NE(time_of(model, gemm).source.find("Gemm overhead"), std::string::npos)
      << time_of(model, gemm).source;
  // A kind the profile did not time: the dispatch figure.
  EXPECT_EQ(time_of(model, add(16)).overhead_seconds, kOverhead);
}

// x [1, 32, 64, 64] through a 3x3 depthwise Conv, after and before a 1x1 Conv when `chained`.
Graph depthwise(bool chained) {
  GraphBuilder builder;
  const auto pointwise = [&](int in, const char* name) {
    return builder.node("Conv", {in, builder.constant(name, DType::kFloat32, {32, 32, 1, 1})});
  };
  int x = builder.input("x", DType::kFloat32, {1, 32, 64, 64});
  if (chained) x = pointwise(x, "before");
  x = builder.node("Conv", {x, builder.constant("dw", DType::kFloat32, {32, 1, 3, 3})},
                   {{"kernel_shape", std::vector<int64_t>{3, 3}},
                    {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"group", int64_t{32}}});
  if (chained) x = pointwise(x, "after");
  return builder.infer({x});
}

TEST(CalibratedCost, DepthwiseConvolutionsTakeTheCurveOfTheLayoutsTheirKernelSees) {
  Cluster cluster = profiled_cluster();
  cluster.devices[kCpu].backend = BackendKind::kCpu;  // which keeps conv chains channels-last
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"Conv", 2e-6}};
  // Kernel times: a Conv's fixed cost included, as calibrate measures them.
  profile.depthwise_curves = {{"nhwc-nhwc", {{1e6, 10e-6}}}, {"nchw-nchw", {{1e6, 40e-6}}}};
  const CostModel model(cluster, {{kCpu, profile}});
  const Graph chained = depthwise(true), alone = depthwise(false);
  const Node& in_chain = chained.nodes.at(1);
  const double flops = alone.nodes.at(0).cost.flops;
  ASSERT_EQ(in_chain.cost.flops, flops);
  const OpTime chain_time = model.op_time(in_chain, chained, kCpu);
  EXPECT_NEAR(chain_time.compute_seconds, 8e-6 * flops / 1e6, 1e-15);
  EXPECT_NE(chain_time.source.find("depthwise convolutions nhwc-nhwc"), std::string::npos)
      << chain_time.source;
  const OpTime alone_time = time_of(model, alone);
  EXPECT_NEAR(alone_time.compute_seconds, 38e-6 * flops / 1e6, 1e-15);
  EXPECT_EQ(alone_time.overhead_seconds, 2e-6);
  // A layout the profile has no curve for: the vector rate, as before.
  CalibrationProfile chain_only = profile;
  chain_only.depthwise_curves.erase("nchw-nchw");
  const CostModel partial(cluster, {{kCpu, chain_only}});
  EXPECT_NEAR(time_of(partial, alone).compute_seconds, flops / 100e9, 1e-15);
}

TEST(CalibratedCost, ConvolutionsTakeTheirOwnCurveWhereTheProfileHasOne) {
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"Conv", 2e-6}};
  profile.gemm_curve = {{64, 64, 64, 1e-6}, {512, 512, 512, 1e-3}};
  // 100 GFLOP/s once a Conv's fixed cost is taken off, at both ends.
  profile.conv_curve = {{1e6, 12e-6}, {1e7, 102e-6}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {1, 16, 32, 32});
  const Graph conv = builder.infer({builder.node(
      "Conv", {x, builder.constant("w", DType::kFloat32, {16, 16, 3, 3})},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  const double gemm_flops = 2.0 * 32 * 32 * 16 * 16 * 9;
  const OpTime time = time_of(model, conv);
  EXPECT_NEAR(time.compute_seconds, gemm_flops / 100e9, 1e-15);
  EXPECT_NE(time.source.find("convolutions"), std::string::npos) << time.source;
  // A depthwise convolution is not on it, nor a 1x1 one (a GEMM: XLA makes it a dot).
  EXPECT_EQ(time_of(model, depthwise(false)).source.find("convolutions"), std::string::npos);
  GraphBuilder pointwise;
  const int y = pointwise.input("y", DType::kFloat32, {1, 16, 32, 32});
  const Graph one_by_one = pointwise.infer(
      {pointwise.node("Conv", {y, pointwise.constant("w", DType::kFloat32, {16, 16, 1, 1})})});
  EXPECT_EQ(time_of(model, one_by_one).source.find("convolutions"), std::string::npos);
  // Without the curve, the convolution is a GEMM of the GEMM curve.
  CalibrationProfile gemm_only = profile;
  gemm_only.conv_curve.clear();
  const CostModel on_gemms(profiled_cluster(), {{kCpu, gemm_only}});
  const OpTime as_gemm = time_of(on_gemms, conv);
  EXPECT_EQ(as_gemm.source.find("convolutions"), std::string::npos) << as_gemm.source;
  EXPECT_NE(as_gemm.compute_seconds, time.compute_seconds);
}

TEST(CalibratedCost, ADeviceWithoutAProfileIsPricedByItsPresetsCalibration) {
  // The PJRT CPU plugin's preset carries a calibration of the plugin, curves included.
  Cluster cluster = compute_cluster();
  cluster.devices[kCpu].preset = "xla-cpu-plugin";
  cluster.devices[kCpu].backend = BackendKind::kPjrt;
  const CostModel model(cluster);
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {1, 64, 56, 56});
  const Graph conv = builder.infer({builder.node(
      "Conv", {x, builder.constant("w", DType::kFloat32, {64, 64, 3, 3})},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  const OpTime time = time_of(model, conv);
  EXPECT_NE(time.source.find("profiles/xla-cpu-plugin.json: convolutions"), std::string::npos)
      << time.source;
  // A device's own profile wins.
  cluster.devices[kCpu].profile = "own.json";
  const CostModel own(cluster, {{kCpu, cache_profile()}});
  EXPECT_EQ(time_of(own, conv).source.find("profiles/xla-cpu-plugin.json"), std::string::npos);
}

TEST(CalibratedCost, TheClusterFilesOwnFiguresWinOverTheProfilesAndThePresetsCalibrations) {
  CalibrationProfile profile = cache_profile();
  profile.figures.launch_overhead = {2e-6, "chain of Adds"};
  profile.figures.memory_bandwidth = {30e9, "Add of 64 MiB tensors"};
  Cluster cluster = profiled_cluster();
  cluster.devices[kCpu].figures.launch_overhead = {9e-6, "cluster file c.yaml line 7"};
  const CostModel model(cluster, {{kCpu, profile}});
  // The file's launch overhead stays; the bandwidth, not in the file, is the profile's.
  EXPECT_EQ(model.figures(kCpu).launch_overhead.value, 9e-6);
  EXPECT_EQ(model.figures(kCpu).launch_overhead.source, "cluster file c.yaml line 7");
  EXPECT_EQ(model.figures(kCpu).memory_bandwidth.value, 30e9);
  EXPECT_EQ(time_of(model, add(16)).overhead_seconds, 9e-6);
  // Over a preset's calibration too: a PJRT device of the plugin's preset, its step set by hand.
  Cluster plugin = compute_cluster();
  plugin.devices[kCpu].preset = "xla-cpu-plugin";
  plugin.devices[kCpu].backend = BackendKind::kPjrt;
  plugin.devices[kCpu].figures.step_overhead = {1e-3, "cluster file c.yaml line 9"};
  EXPECT_EQ(CostModel(plugin).figures(kCpu).step_overhead.value, 1e-3);
}

TEST(CalibratedCost, AConvolutionPaysTheReordersOfItsNchwSides) {
  Cluster cluster = profiled_cluster();
  cluster.devices[kCpu].backend = BackendKind::kCpu;
  CalibrationProfile profile = cache_profile();
  profile.op_overheads = {{"Conv", 2e-6}};
  profile.reorder_in_curve = {{1 << 20, (1 << 20) / 20e9}};
  profile.reorder_out_curve = {{1 << 20, (1 << 20) / 10e9}};
  const CostModel model(cluster, {{kCpu, profile}});
  // 1x1 Convs of 32 channels on 64x64 (512 KiB activations) in a chain of two: the first
  // reorders its NCHW input in, the second its NCHW output out.
  GraphBuilder builder;
  int x = builder.input("x", DType::kFloat32, {1, 32, 64, 64});
  for (const char* name : {"w0", "w1"})
    x = builder.node("Conv", {x, builder.constant(name, DType::kFloat32, {32, 32, 1, 1})});
  const Graph chain = builder.infer({x});
  const double bytes = 4.0 * 32 * 64 * 64;
  EXPECT_NEAR(model.op_time(chain.nodes[0], chain, kCpu).overhead_seconds, 2e-6 + bytes / 20e9,
              1e-15);
  EXPECT_NEAR(model.op_time(chain.nodes[1], chain, kCpu).overhead_seconds, 2e-6 + bytes / 10e9,
              1e-15);
  // A depthwise convolution's curves include its reorders: nothing added.
  const Graph alone = depthwise(false);
  EXPECT_EQ(time_of(model, alone).overhead_seconds, 2e-6);
}

TEST(CalibratedCost, TheFirstReaderOfAProductsOutputPaysItsMeasuredExtra) {
  CalibrationProfile profile = cache_profile();
  // 25 GB/s of extra time up to 1 MiB, none from 8 MiB (past the caches either way).
  profile.product_output_read_curve = {{1 << 20, (1 << 20) / 25e9}, {8 << 20, 0}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  // A MatMul's 512 KiB output, reshaped (a view), then read by a Neg, which a second Neg reads;
  // a second MatMul reads the first Neg's output, and an Add reads both products' outputs.
  GraphBuilder builder;
  const auto shape = [&](const std::string& name, std::vector<int64_t> dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    return builder.constant(name, Tensor::from_vector<int64_t>(DType::kInt64, {rank}, dims));
  };
  const int x = builder.input("x", DType::kFloat32, {128, 256});
  const int product =
      builder.node("MatMul", {x, builder.constant("w", DType::kFloat32, {256, 1024})});
  const int flat = builder.node("Reshape", {product, shape("flat", {128 * 1024})});
  const int first = builder.node("Neg", {flat});
  const int second = builder.node("Neg", {first});
  const int rows = builder.node("Reshape", {first, shape("rows", {128, 1024})});
  const int again =
      builder.node("MatMul", {rows, builder.constant("v", DType::kFloat32, {1024, 1024})});
  const int sum = builder.node("Add", {again, product});
  const Graph graph = builder.infer({second, sum});
  const auto node_of = [&](int value) -> const Node& {
    for (const Node& node : graph.nodes)
      if (node.outputs[0] == value) return node;
    throw std::logic_error("no producer");
  };
  const CostModel warm(profiled_cluster(), {{kCpu, cache_profile()}});
  const auto extra = [&](int value) {
    const Node& node = node_of(value);
    return model.op_time(node, graph, kCpu).memory_seconds -
           warm.op_time(node, graph, kCpu).memory_seconds;
  };
  const double bytes = 4.0 * 128 * 1024;
  // Through the view, the first Neg reads what the product wrote; the second reads it warm.
  EXPECT_NEAR(extra(first), bytes / 25e9, 1e-15);
  EXPECT_EQ(extra(second), 0);
  // The Add reads the second product's output first; the first product's was read already.
  EXPECT_NEAR(extra(sum), bytes / 25e9, 1e-15);
  // A product reading a product's output is priced by its own curve: nothing added.
  EXPECT_EQ(extra(again), 0);
  // Between the points, the extra time falls linearly in log bytes; past the last, none.
  // (The cost model's caches know a graph by its address: both graphs live side by side.)
  const auto product_then_neg = [](int64_t rows) {
    GraphBuilder large;
    const int input = large.input("x", DType::kFloat32, {rows, 256});
    const int out =
        large.node("MatMul", {input, large.constant("w", DType::kFloat32, {256, 1024})});
    return large.infer({large.node("Neg", {out})});
  };
  const Graph two_mib = product_then_neg(512), sixteen_mib = product_then_neg(4096);
  const auto first_read_of = [&](const Graph& chain) {
    return model.op_time(chain.nodes[1], chain, kCpu).memory_seconds -
           warm.op_time(chain.nodes[1], chain, kCpu).memory_seconds;
  };
  EXPECT_NEAR(first_read_of(two_mib), (1 << 20) / 25e9 * 2.0 / 3.0, 1e-12);
  EXPECT_EQ(first_read_of(sixteen_mib), 0);
}

// The memory time `model` gives the node that writes `value` beyond what `plain` gives it.
double memory_extra(const CostModel& model, const CostModel& plain, const Graph& graph, int value) {
  for (const Node& node : graph.nodes)
    if (node.outputs[0] == value)
      return model.op_time(node, graph, kCpu).memory_seconds -
             plain.op_time(node, graph, kCpu).memory_seconds;
  throw std::logic_error("no producer");
}

TEST(CalibratedCost, TheWriterOfAProductsInputPaysItsMeasuredExtra) {
  CalibrationProfile profile = cache_profile();
  // 20 GB/s of extra time up to 1 MiB, none from 8 MiB.
  profile.product_input_write_curve = {{1 << 20, (1 << 20) / 20e9}, {8 << 20, 0}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const CostModel plain(profiled_cluster(), {{kCpu, cache_profile()}});
  // A Neg whose output a MatMul reads through a view (a Reshape), a Neg whose output only a Neg
  // reads, a MatMul whose output a MatMul reads, and a Relu whose output two MatMuls read.
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {128, 1024});
  const int read_by_product = builder.node("Neg", {x});
  const int flat = builder.node(
      "Reshape", {read_by_product, builder.constant("rows", Tensor::from_vector<int64_t>(
                                                                DType::kInt64, {2}, {128, 1024}))});
  const int product =
      builder.node("MatMul", {flat, builder.constant("w", DType::kFloat32, {1024, 256})});
  const int read_by_neg = builder.node("Neg", {x});
  const int last = builder.node("Neg", {read_by_neg});
  const int again =
      builder.node("MatMul", {product, builder.constant("v", DType::kFloat32, {256, 256})});
  const int shared = builder.node("Relu", {x});
  const int left =
      builder.node("MatMul", {shared, builder.constant("l", DType::kFloat32, {1024, 16})});
  const int right =
      builder.node("MatMul", {shared, builder.constant("r", DType::kFloat32, {1024, 16})});
  const Graph graph = builder.infer({last, again, left, right});
  const auto extra = [&](int value) { return memory_extra(model, plain, graph, value); };
  const double bytes = 4.0 * 128 * 1024;
  EXPECT_NEAR(extra(read_by_product), bytes / 20e9, 1e-15);
  EXPECT_EQ(extra(flat), 0);  // a view writes nothing
  EXPECT_EQ(extra(read_by_neg), 0);
  EXPECT_EQ(extra(last), 0);                        // the graph's output
  EXPECT_EQ(extra(product), 0);                     // a product's output is priced by its own curve
  EXPECT_NEAR(extra(shared), bytes / 20e9, 1e-15);  // once, however many products read it
}

TEST(CalibratedCost, ATensorPassedBetweenOneThreadAndAllPaysItsMeasuredHandOff) {
  CalibrationProfile profile = cache_profile();
  // 4 us at 64 KiB from one thread to all, 2 us back; each linear in the bytes below.
  profile.cross_core_spread_curve = {{1 << 16, 4e-6}, {1 << 18, 16e-6}};
  profile.cross_core_gather_curve = {{1 << 16, 2e-6}, {1 << 18, 8e-6}};
  const CostModel model(profiled_cluster(), {{kCpu, profile}});
  const CostModel plain(profiled_cluster(), {{kCpu, cache_profile()}});
  // 16,384 floats: a Relu runs on one thread, an Erf splits (the CPU backend's declarations).
  // Relu -> Reshape -> Erf (spread, through a view), Erf -> Relu (gather), Relu -> Relu and
  // Erf -> Erf (no hand-off), a MatMul's output read by an Erf (undeclared: its own curve), and
  // an Add of the Relu's output and a broadcast row (only the same-sized input counts).
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {16, 1024});
  const int one_thread = builder.node("Relu", {x});
  const int flat = builder.node(
      "Reshape", {one_thread, builder.constant("flat", Tensor::from_vector<int64_t>(
                                                           DType::kInt64, {1}, {16384}))});
  const int spread = builder.node("Erf", {flat});
  const int split_again = builder.node("Erf", {spread});
  const int gathered = builder.node("Relu", {split_again});
  const int one_again = builder.node("Relu", {gathered});
  const int product =
      builder.node("MatMul", {x, builder.constant("w", DType::kFloat32, {1024, 1024})});
  const int after_product = builder.node("Erf", {product});
  const int sum =
      builder.node("Add", {one_thread, builder.constant("row", DType::kFloat32, {1024})});
  const int squared = builder.node("Mul", {split_again, split_again});  // one tensor, read twice
  const Graph graph = builder.infer({one_again, after_product, sum, squared});
  const auto extra = [&](int value) { return memory_extra(model, plain, graph, value); };
  EXPECT_NEAR(extra(spread), 4e-6, 1e-15);    // 64 KiB, one thread to all
  EXPECT_NEAR(extra(gathered), 2e-6, 1e-15);  // and back
  EXPECT_EQ(extra(flat), 0);                  // a view runs no kernel
  EXPECT_EQ(extra(split_again), 0);
  EXPECT_EQ(extra(one_again), 0);
  EXPECT_EQ(extra(after_product), 0);
  EXPECT_EQ(extra(sum), 0);
  EXPECT_NEAR(extra(squared), 2e-6, 1e-15);  // moved back once, however often it is read
}

TEST(CalibrationProfile, NewFiguresRoundTripAndOldProfilesStillRead) {
  CalibrationProfile profile;
  profile.device_name = "cpu: test";
  profile.weight_curve = {{1 << 20, 1e-5}};
  profile.conv_weight_curve = {{9 << 20, 1e-3}};
  profile.streamed_conv_points = {{2.3e8, 9.4e6, 6.6e7, 6.8e-4}};
  profile.streamed_product_points = {{32, 512, 256, 1.6e7, 1.5e-4}};
  profile.view_overhead = testing::figure(0.2e-6, "calibration p.json: views");
  profile.subgraph_run_overhead = testing::figure(1e-6, "calibration p.json: loop");
  profile.loop_iteration_overhead = testing::figure(1.2e-6, "calibration p.json: iteration");
  profile.speed_drift = testing::figure(0.27, "calibration p.json: speed references");
  profile.speed_reference = testing::figure(1.9e-4, "calibration p.json: speed references");
  profile.host_link_latency = testing::figure(1.9e-6, "calibration p.json: copies");
  profile.vector_op_rates = {{"Tanh", 2e9}};
  profile.op_element_curves = {{"Resize", {{4096, 2e-5}, {262144, 1e-3}}}};
  profile.op_overheads = {{"Conv", 3e-6}, {"Relu", 0.2e-6}};
  profile.depthwise_curves = {{"nhwc-nchw", {{1e5, 2e-6}, {1e7, 90e-6}}}};
  profile.conv_curve = {{1e6, 20e-6}, {2e8, 1e-3}};
  profile.reorder_in_curve = {{1 << 18, 1e-5}};
  profile.reorder_out_curve = {{1 << 18, 2e-5}, {1 << 20, 5e-5}};
  profile.product_output_read_curve = {{1 << 16, 4e-6}, {1 << 22, 1.7e-4}};
  profile.product_input_write_curve = {{1 << 16, 3e-6}, {1 << 19, 0}};
  profile.cross_core_spread_curve = {{1 << 15, 8e-6}, {1 << 17, 0}};
  profile.cross_core_gather_curve = {{1 << 15, 4e-6}};
  const std::string path = ::testing::TempDir() + "/costfix_profile.json";
  write_profile(path, profile);
  const CalibrationProfile read = read_profile(path);
  ASSERT_EQ(read.weight_curve.size(), 1u);
  EXPECT_EQ(read.weight_curve[0].bytes, 1 << 20);
  ASSERT_EQ(read.conv_weight_curve.size(), 1u);
  EXPECT_EQ(read.conv_weight_curve[0].seconds, 1e-3);
  ASSERT_EQ(read.streamed_conv_points.size(), 1u);
  EXPECT_EQ(read.streamed_conv_points[0].flops, 2.3e8);
  EXPECT_EQ(read.streamed_conv_points[0].weight_bytes, 9.4e6);
  EXPECT_EQ(read.streamed_conv_points[0].run_weight_bytes, 6.6e7);
  EXPECT_EQ(read.streamed_conv_points[0].seconds, 6.8e-4);
  ASSERT_EQ(read.streamed_product_points.size(), 1u);
  EXPECT_EQ(read.streamed_product_points[0].m, 32);
  EXPECT_EQ(read.streamed_product_points[0].k, 512);
  EXPECT_EQ(read.streamed_product_points[0].n, 256);
  EXPECT_EQ(read.streamed_product_points[0].run_weight_bytes, 1.6e7);
  EXPECT_EQ(read.streamed_product_points[0].seconds, 1.5e-4);
  EXPECT_EQ(read.view_overhead.value, 0.2e-6);
  EXPECT_EQ(read.subgraph_run_overhead.value, 1e-6);
  EXPECT_EQ(read.loop_iteration_overhead.value, 1.2e-6);
  EXPECT_EQ(read.speed_drift.value, 0.27);
  EXPECT_EQ(read.speed_reference.value, 1.9e-4);
  EXPECT_EQ(read.host_link_latency.value, 1.9e-6);
  EXPECT_EQ(read.vector_op_rates.at("Tanh"), 2e9);
  ASSERT_EQ(read.op_element_curves.at("Resize").size(), 2u);
  EXPECT_EQ(read.op_element_curves.at("Resize")[1].elements, 262144);
  EXPECT_EQ(read.op_element_curves.at("Resize")[1].seconds, 1e-3);
  EXPECT_EQ(read.op_overheads, profile.op_overheads);
  ASSERT_EQ(read.depthwise_curves.at("nhwc-nchw").size(), 2u);
  EXPECT_EQ(read.depthwise_curves.at("nhwc-nchw")[1].flops, 1e7);
  EXPECT_EQ(read.depthwise_curves.at("nhwc-nchw")[1].seconds, 90e-6);
  ASSERT_EQ(read.conv_curve.size(), 2u);
  EXPECT_EQ(read.conv_curve[1].flops, 2e8);
  EXPECT_EQ(read.conv_curve[1].seconds, 1e-3);
  ASSERT_EQ(read.reorder_in_curve.size(), 1u);
  EXPECT_EQ(read.reorder_in_curve[0].seconds, 1e-5);
  ASSERT_EQ(read.reorder_out_curve.size(), 2u);
  EXPECT_EQ(read.reorder_out_curve[1].bytes, 1 << 20);
  ASSERT_EQ(read.product_output_read_curve.size(), 2u);
  EXPECT_EQ(read.product_output_read_curve[1].bytes, 1 << 22);
  EXPECT_EQ(read.product_output_read_curve[1].seconds, 1.7e-4);
  ASSERT_EQ(read.product_input_write_curve.size(), 2u);
  EXPECT_EQ(read.product_input_write_curve[0].seconds, 3e-6);
  EXPECT_EQ(read.product_input_write_curve[1].seconds, 0);
  ASSERT_EQ(read.cross_core_spread_curve.size(), 2u);
  EXPECT_EQ(read.cross_core_spread_curve[0].seconds, 8e-6);
  EXPECT_EQ(read.cross_core_spread_curve[1].seconds, 0);
  ASSERT_EQ(read.cross_core_gather_curve.size(), 1u);
  EXPECT_EQ(read.cross_core_gather_curve[0].bytes, 1 << 15);
  // A profile written before these fields existed has none of them.
  CalibrationProfile older;
  older.device_name = "cpu: old";
  write_profile(path, older);
  const CalibrationProfile old = read_profile(path);
  EXPECT_TRUE(old.weight_curve.empty());
  EXPECT_TRUE(old.conv_weight_curve.empty());
  EXPECT_FALSE(old.view_overhead.known());
  EXPECT_FALSE(old.loop_iteration_overhead.known());
  EXPECT_FALSE(old.speed_drift.known());
  EXPECT_FALSE(old.host_link_latency.known());
  EXPECT_TRUE(old.vector_op_rates.empty());
  EXPECT_TRUE(old.op_element_curves.empty());
  EXPECT_TRUE(old.op_overheads.empty());
  EXPECT_TRUE(old.depthwise_curves.empty());
  EXPECT_TRUE(old.conv_curve.empty());
  EXPECT_TRUE(old.reorder_in_curve.empty());
  EXPECT_TRUE(old.product_output_read_curve.empty());
  EXPECT_TRUE(old.product_input_write_curve.empty());
  EXPECT_TRUE(old.cross_core_spread_curve.empty());
  EXPECT_TRUE(old.cross_core_gather_curve.empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tandem
