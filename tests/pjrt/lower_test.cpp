// The StableHLO lowering, op by op, against the CPU backend on the xla-cpu-pjrt plugin.
#include "backends/pjrt/lower.h"

#include <cmath>
#include <set>

#include "backends/cpu/cpu_device.h"
#include "ir/infer.h"
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
  Graph graph;
  graph.opset = 17;
  const auto value = [&](const std::string& name, Tensor tensor) {
    const int id = graph.add_value(name, {tensor.dtype(), tensor.shape()});
    graph.values[static_cast<size_t>(id)].constant = std::move(tensor);
    return id;
  };
  const auto node = [&](const std::string& op, std::vector<int> inputs,
                        std::map<std::string, Attribute, std::less<>> attributes = {}) {
    Node n;
    n.name = op + std::to_string(graph.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    n.outputs = {graph.add_value(n.name + "_out")};
    graph.nodes.push_back(std::move(n));
    return graph.nodes.back().outputs[0];
  };
  const auto ints = [](std::vector<int64_t> v) { return Attribute(std::move(v)); };
  const int x = graph.add_value("x", {DType::kFloat32, {2, 8, 9, 9}});
  const int other = graph.add_value("other", {DType::kFloat32, {2, 8, 9, 9}});
  graph.inputs = {x, other};
  const int conv = node("Conv",
                        {x, value("w", random(DType::kFloat32, {8, 8, 3, 3}, 3)),
                         value("b", random(DType::kFloat32, {8}, 4))},
                        {{"pads", ints({1, 1, 1, 1})}});
  const int swish = node("HardSwish", {conv});
  const int scaled = node("Mul", {swish, value("scale", random(DType::kFloat32, {8, 1, 1}, 5))});
  const int shifted = node("Add", {scaled, value("shift", random(DType::kFloat32, {}, 6))});
  const int mixed = node("Add", {shifted, other});  // `other` has no channels-last form
  const int depthwise = node(
      "Conv",
      {mixed, value("dw", random(DType::kFloat32, {8, 1, 5, 5}, 7)),
       value("db", random(DType::kFloat32, {8}, 8)), shifted},
      {{"group", int64_t{8}}, {"pads", ints({2, 2, 2, 2})}, {"activation", std::string("Relu")}});
  const int pooled = node(
      "MaxPool", {depthwise},
      {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  const int averaged =
      node("AveragePool", {pooled}, {{"kernel_shape", ints({2, 2})}, {"pads", ints({0, 1, 1, 0})}});
  const int squeezed = node("GlobalAveragePool", {averaged});
  const int gate = node("Sigmoid", {squeezed});
  const int excited = node("Mul", {averaged, gate});  // squeeze-excite: [2,8,5,5] x [2,8,1,1]
  graph.outputs = {excited, node("Flatten", {node("GlobalMaxPool", {excited})}), swish};
  graph.sort_topologically();
  infer_graph(graph);

  const std::vector<Tensor> inputs = {random(DType::kFloat32, {2, 8, 9, 9}, 1),
                                      random(DType::kFloat32, {2, 8, 9, 9}, 2)};
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
