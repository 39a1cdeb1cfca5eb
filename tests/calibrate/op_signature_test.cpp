#include <gtest/gtest.h>

#include "devices/profile.h"
#include "ir/infer.h"

namespace tandem {
namespace {

// A graph of one Conv on an input of `shape`, with `attributes`.
Graph conv_graph(Shape shape, std::map<std::string, Attribute, std::less<>> attributes,
                 DType dtype = DType::kFloat32) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {dtype, shape});
  const int w = graph.add_value("w", {dtype, {8, shape[1], 3, 3}});
  graph.values[w].constant = Tensor::zeros(dtype, {8, shape[1], 3, 3});
  graph.inputs = {x};
  Node node;
  node.name = "conv";
  node.op_type = "Conv";
  node.inputs = {x, w};
  node.outputs = {graph.add_value("y")};
  node.attributes = std::move(attributes);
  graph.outputs = node.outputs;
  graph.nodes.push_back(std::move(node));
  infer_graph(graph);
  return graph;
}

std::string signature_of(const Graph& graph) { return op_signature(graph.nodes[0], graph); }

const std::map<std::string, Attribute, std::less<>> kPadded = {
    {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"kernel_shape", std::vector<int64_t>{3, 3}}};

TEST(OpSignature, DeterministicForEqualOps) {
  const std::string first = signature_of(conv_graph({1, 4, 16, 16}, kPadded));
  EXPECT_EQ(first, signature_of(conv_graph({1, 4, 16, 16}, kPadded)));
  EXPECT_EQ(first,
            "Conv(float32[1x4x16x16],float32[8x4x3x3])->(float32[1x8x16x16])"
            "{kernel_shape=[3,3],pads=[1,1,1,1]}");
}

TEST(OpSignature, SensitiveToShapes) {
  EXPECT_NE(signature_of(conv_graph({1, 4, 16, 16}, kPadded)),
            signature_of(conv_graph({2, 4, 16, 16}, kPadded)));
  EXPECT_NE(signature_of(conv_graph({1, 4, 16, 16}, kPadded)),
            signature_of(conv_graph({1, 4, 16, 32}, kPadded)));
}

TEST(OpSignature, SensitiveToAttributes) {
  auto strided = kPadded;
  strided["strides"] = std::vector<int64_t>{2, 2};
  EXPECT_NE(signature_of(conv_graph({1, 4, 16, 16}, kPadded)),
            signature_of(conv_graph({1, 4, 16, 16}, strided)));
  auto dilated = kPadded;
  dilated["dilations"] = std::vector<int64_t>{1, 1};  // the default, but written out
  EXPECT_NE(signature_of(conv_graph({1, 4, 16, 16}, kPadded)),
            signature_of(conv_graph({1, 4, 16, 16}, dilated)));
}

TEST(OpSignature, SensitiveToDtypes) {
  EXPECT_NE(signature_of(conv_graph({1, 4, 16, 16}, kPadded, DType::kFloat32)),
            signature_of(conv_graph({1, 4, 16, 16}, kPadded, DType::kFloat64)));
}

TEST(OpSignature, TensorAttributesByContent) {
  const auto with_value = [](float fill) {
    Graph graph;
    graph.opset = 17;
    const int shape = graph.add_value("shape", {DType::kInt64, {2}});
    graph.inputs = {shape};
    Node node;
    node.name = "fill";
    node.op_type = "ConstantOfShape";
    node.inputs = {shape};
    node.outputs = {graph.add_value("y")};
    node.attributes["value"] = Tensor::from_vector<float>(DType::kFloat32, {1}, {fill});
    graph.outputs = node.outputs;
    graph.nodes.push_back(std::move(node));
    return op_signature(graph.nodes[0], graph);
  };
  EXPECT_EQ(with_value(1.0f), with_value(1.0f));
  EXPECT_NE(with_value(1.0f), with_value(2.0f));
}

}  // namespace
}  // namespace tandem
