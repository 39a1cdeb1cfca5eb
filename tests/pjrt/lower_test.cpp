// The StableHLO lowering, op by op, against the CPU backend on the xla-cpu-pjrt plugin.
#include "backends/pjrt/lower.h"

#include <cmath>
#include <set>

#include "backends/cpu/cpu_device.h"
#include "cost/test_cluster.h"
#include "pjrt_op_util.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

TEST(Lowering, AddBroadcasts) {
  expect_matches_cpu(
      {"Add", {random(DType::kFloat32, {2, 3, 4}, 1), random(DType::kFloat32, {3, 1}, 2)}});
}

TEST(Lowering, MatMulBatched) {
  expect_matches_cpu({"MatMul",
                      {random(DType::kFloat32, {2, 3, 5}, 1), random(DType::kFloat32, {5, 4}, 2)},
                      {},
                      {},
                      1,
                      1e-5,
                      1e-5});
}

TEST(Lowering, ReshapeWithConstantShape) {
  expect_matches_cpu({"Reshape",
                      {random(DType::kFloat32, {2, 6}, 1),
                       Tensor::from_vector<int64_t>(DType::kInt64, {2}, {3, -1})},
                      {},
                      {false, true}});
}

TEST(Lowering, MatMulWithFusedGelu) {
  expect_matches_cpu({"MatMul",
                      {random(DType::kFloat32, {3, 5}, 1), random(DType::kFloat32, {5, 4}, 2)},
                      {{"activation", std::string("Gelu")}},
                      {},
                      1,
                      1e-5,
                      1e-5});
}

// A convolution block as MobileNetV3 and ResNet build it, lowered whole: convolutions,
// elementwise ops and pooling pass channels-last forms between them (LowerContext), with
// per-channel and scalar constants, a second activation from outside the chain (NCHW) and a
// Flatten that reads the ONNX layout; every output as the CPU backend computes it.
TEST(Lowering, ChannelsLastChainMatchesTheCpuBackend) {
  tandem::testing::GraphBuilder g;
  const auto ints = [](std::vector<int64_t> v) { return Attribute(std::move(v)); };
  const auto weights = [&](const std::string& name, Shape shape, uint64_t seed) {
    return g.constant(name, random(DType::kFloat32, std::move(shape), seed));
  };
  const int x = g.input("x", DType::kFloat32, {2, 8, 9, 9});
  const int other = g.input("other", DType::kFloat32, {2, 8, 9, 9});
  const int wide = g.input("wide", DType::kFloat32, {3, 1, 8, 9, 9});
  const int conv = g.node("Conv", {x, weights("w", {8, 8, 3, 3}, 3), weights("b", {8}, 4)},
                          {{"pads", ints({1, 1, 1, 1})}});
  const int swish = g.node("HardSwish", {conv});
  const int scaled = g.node("Mul", {swish, weights("scale", {8, 1, 1}, 5)});
  const int shifted = g.node("Add", {scaled, weights("shift", {}, 6)});
  const int mixed = g.node("Add", {shifted, other});  // `other` has no channels-last form
  const int depthwise = g.node(
      "Conv", {mixed, weights("dw", {8, 1, 5, 5}, 7), weights("db", {8}, 8), shifted},
      {{"group", int64_t{8}}, {"pads", ints({2, 2, 2, 2})}, {"activation", std::string("Relu")}});
  const int pooled = g.node(
      "MaxPool", {depthwise},
      {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  const int averaged = g.node("AveragePool", {pooled},
                              {{"kernel_shape", ints({2, 2})}, {"pads", ints({0, 1, 1, 0})}});
  const int squeezed = g.node("GlobalAveragePool", {averaged});
  const int gate = g.node("Sigmoid", {squeezed});
  const int excited = g.node("Mul", {averaged, gate});  // squeeze-excite: [2,8,5,5] x [2,8,1,1]
  const Graph graph =
      g.infer({excited, g.node("Flatten", {g.node("GlobalMaxPool", {excited})}), swish,
               g.node("Add", {conv, wide})});  // a rank-5 output: the ONNX layout broadcasts

  const std::vector<Tensor> inputs = {random(DType::kFloat32, {2, 8, 9, 9}, 1),
                                      random(DType::kFloat32, {2, 8, 9, 9}, 2),
                                      random(DType::kFloat32, {3, 1, 8, 9, 9}, 9)};
  cpu::CpuDevice cpu;
  const std::vector<Tensor> expected = GraphExecutor(graph, cpu).run(inputs);
  const std::vector<Tensor> actual = GraphExecutor(graph, cpu_plugin_device()).run(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    const Tensor host = actual[o].to_host();
    ASSERT_EQ(host.shape(), expected[o].shape()) << "output " << o;
    const std::vector<double> a = host.to_doubles(), e = expected[o].to_doubles();
    for (size_t i = 0; i < e.size(); ++i) {
      ASSERT_NEAR(a[i], e[i], 1e-4 + 1e-4 * std::abs(e[i])) << "output " << o << "[" << i << "]";
    }
  }
}

TEST(Lowering, UnknownOpIsRefusedByName) {
  EXPECT_EQ(refusal({"NonZero", {random(DType::kFloat32, {4}, 1)}}),
            "no StableHLO lowering for NonZero");
}

}  // namespace
}  // namespace tandem::pjrt::testing
