#include "cost/gemm_shape.h"

#include <gtest/gtest.h>

#include "test_cluster.h"

namespace tandem {
namespace {

using testing::GraphBuilder;

// The GEMM an op is costed as, checked against the IR's own FLOP count for it.
GemmShape shape_of(const Graph& graph) {
  const auto shape = gemm_shape(graph.nodes.at(0), graph);
  EXPECT_TRUE(shape.has_value());
  if (!shape) return {};
  EXPECT_DOUBLE_EQ(shape->flops(), graph.nodes[0].cost.flops);
  return *shape;
}

void expect_shape(const GemmShape& shape, double batch, int64_t m, int64_t n, int64_t k) {
  EXPECT_EQ(shape.batch, batch);
  EXPECT_EQ(shape.m, m);
  EXPECT_EQ(shape.n, n);
  EXPECT_EQ(shape.k, k);
}

TEST(GemmShape, BatchedMatMulBroadcastsBatchDims) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {2, 3, 64, 32});
  const int b = builder.input("b", DType::kFloat32, {1, 3, 32, 16});
  expect_shape(shape_of(builder.infer({builder.node("MatMul", {a, b})})), 6, 64, 16, 32);
}

TEST(GemmShape, ABatchTimesOneMatrixIsOneProductOfAllTheRows) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {2, 3, 64, 32});
  const int b = builder.input("b", DType::kFloat32, {32, 16});
  const int unit_batch = builder.input("unit_batch", DType::kFloat32, {1, 32, 16});
  expect_shape(shape_of(builder.infer({builder.node("MatMul", {a, b})})), 1, 384, 16, 32);
  expect_shape(shape_of(builder.infer({builder.node("MatMul", {a, unit_batch})})), 1, 384, 16, 32);
}

TEST(GemmShape, MatMulWithVectorOperand) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {32});
  const int b = builder.input("b", DType::kFloat32, {4, 32, 16});
  expect_shape(shape_of(builder.infer({builder.node("MatMul", {a, b})})), 4, 1, 16, 32);
}

TEST(GemmShape, GemmHonoursTranspose) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {40, 10});  // K x M
  const int b = builder.input("b", DType::kFloat32, {30, 40});  // N x K
  const Graph graph = builder.infer(
      {builder.node("Gemm", {a, b}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}})});
  expect_shape(shape_of(graph), 1, 10, 30, 40);
}

TEST(GemmShape, GroupedConvIsOneGemmPerGroup) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {2, 8, 10, 10});
  const int w = builder.input("w", DType::kFloat32, {16, 4, 3, 3});
  const Graph graph = builder.infer({builder.node(
      "Conv", {x, w}, {{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  // M = batch x output pixels, N = output channels per group, K = input channels x taps.
  expect_shape(shape_of(graph), 2, 200, 8, 36);
}

TEST(GemmShape, ConvTransposeScattersEveryTap) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {1, 4, 5, 5});
  const int w = builder.input("w", DType::kFloat32, {4, 6, 3, 3});
  expect_shape(shape_of(builder.infer({builder.node("ConvTranspose", {x, w})})), 1, 25, 54, 4);
}

TEST(GemmShape, DepthwiseConvIsNoGemm) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {1, 32, 10, 10});
  const int w = builder.input("w", DType::kFloat32, {32, 1, 3, 3});
  const Graph graph = builder.infer({builder.node("Conv", {x, w}, {{"group", int64_t{32}}})});
  EXPECT_FALSE(gemm_shape(graph.nodes[0], graph).has_value());
}

TEST(GemmShape, ElementwiseOpIsNoGemm) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {8, 8});
  const Graph graph = builder.infer({builder.node("Add", {a, a})});
  EXPECT_FALSE(gemm_shape(graph.nodes[0], graph).has_value());
}

TEST(GemmShape, PaddingRoundsEveryDimUp) {
  const GemmShape shape{.batch = 3, .m = 1, .n = 128, .k = 129};
  expect_shape(padded(shape, 128), 3, 128, 128, 256);
  expect_shape(padded(shape, 1), 3, 1, 128, 129);
}

}  // namespace
}  // namespace tandem
