#include "cost/memory_footprint.h"

#include <gtest/gtest.h>

#include <numeric>

#include "test_cluster.h"

namespace tandem {
namespace {

using testing::GraphBuilder;

constexpr double kKiB = 1024;  // every activation below is 256 floats

std::vector<int> all_nodes(const Graph& graph) {
  std::vector<int> order(graph.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

TEST(WeightsBytes, SharedWeightCountsOnce) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {4, 16});
  const int w = builder.constant("w", DType::kFloat32, {16, 16});  // 1 KiB
  const int bias = builder.constant("bias", DType::kFloat32, {16});
  const int first = builder.node("MatMul", {x, w});
  const int second = builder.node("MatMul", {first, w});
  const Graph graph = builder.infer({builder.node("Add", {second, bias})});
  EXPECT_EQ(weights_bytes(graph, std::vector<int>{0}), kKiB);
  EXPECT_EQ(weights_bytes(graph, std::vector<int>{0, 1}), kKiB);
  EXPECT_EQ(weights_bytes(graph, std::vector<int>{1, 2}), kKiB + 64);
  EXPECT_EQ(weights_bytes(graph, std::vector<int>{2}), 64);
}

TEST(PeakActivationBytes, ChainKeepsTwoTensorsAlive) {
  GraphBuilder builder;
  int last = builder.input("x", DType::kFloat32, {256});
  for (int i = 0; i < 4; ++i) last = builder.node("Relu", {last});
  const Graph graph = builder.infer({last});
  EXPECT_EQ(peak_activation_bytes(graph, all_nodes(graph)), 2 * kKiB);
}

TEST(PeakActivationBytes, FanOutKeepsTheSharedInputAlive) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {256});
  const int a = builder.node("Relu", {x});
  const int b = builder.node("Neg", {x});
  const Graph graph = builder.infer({builder.node("Add", {a, b})});
  // Step 1 holds x, a and b; step 2 holds a, b and the sum.
  EXPECT_EQ(peak_activation_bytes(graph, all_nodes(graph)), 3 * kKiB);
}

TEST(PeakActivationBytes, GraphOutputsLiveToTheEnd) {
  GraphBuilder builder;
  const int early = builder.node("Relu", {builder.input("x", DType::kFloat32, {256})});
  const int late = builder.node("Relu", {builder.node("Relu", {early})});
  const Graph graph = builder.infer({early, late});
  // The last step holds the early output beside its own input and output.
  EXPECT_EQ(peak_activation_bytes(graph, all_nodes(graph)), 3 * kKiB);
}

TEST(PeakActivationBytes, ViewsShareTheirSourceBuffer) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {256});
  const int shape = builder.constant("shape", DType::kInt64, {1});  // zeros: the same shape
  const int relu = builder.node("Relu", {x});
  const int view = builder.node("Reshape", {relu, shape});
  // x is also an output, so it lives throughout: then only the Relu's buffer comes and goes.
  const Graph graph = builder.infer({x, builder.node("Reshape", {view, shape})});
  ASSERT_EQ(graph.nodes.size(), 3u);
  EXPECT_EQ(peak_activation_bytes(graph, all_nodes(graph)), 2 * kKiB);
}

TEST(PeakActivationBytes, ReadingAViewKeepsItsSourceAlive) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {256});
  const int y = builder.input("y", DType::kFloat32, {256});
  const int shape = builder.constant("shape", DType::kInt64, {1});
  const int source = builder.node("Relu", {x});
  const int view = builder.node("Reshape", {source, shape});
  const int other = builder.node("Relu", {y});
  const int sum = builder.node("Add", {view, other});
  const Graph graph = builder.infer({sum});
  std::vector<int> order;
  for (int value : {source, view, other, sum}) order.push_back(graph.values[value].producer);
  // At the third step, Relu(x)'s buffer (read through the view at the fourth), y and Relu(y).
  EXPECT_EQ(peak_activation_bytes(graph, order), 3 * kKiB);
}

TEST(PeakActivationBytes, TensorsLeavingTheSetLiveToItsEnd) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {256});
  const int y = builder.input("y", DType::kFloat32, {256});
  const int sent = builder.node("Relu", {x});  // read by a node on another device
  const int kept = builder.node("Relu", {y});
  const Graph graph = builder.infer({kept, builder.node("Neg", {sent})});
  // Only the two Relus here: at the second, the sent tensor still waits beside y and kept.
  const std::vector<int> here{graph.values[sent].producer, graph.values[kept].producer};
  EXPECT_EQ(peak_activation_bytes(graph, here), 3 * kKiB);
  EXPECT_EQ(peak_activation_bytes(graph, std::vector<int>{}), 0);
}

}  // namespace
}  // namespace tandem
