// Following the batch through hand-built graphs: what splits, and the nodes that mix samples.
#include "ir/batch_flow.h"

#include <gtest/gtest.h>

#include <functional>

#include "ir/infer.h"

namespace tandem {
namespace {

// A graph built for one batch size by `body`, which adds nodes reading `x` and returns the
// output value.
using Body = std::function<int(Graph&, int x, int64_t batch)>;

int add(Graph& graph, const std::string& op, std::vector<int> inputs,
        std::map<std::string, Attribute, std::less<>> attributes = {}) {
  Node node;
  node.name = op + std::to_string(graph.nodes.size());
  node.op_type = op;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  node.outputs = {graph.add_value(node.name + "_out")};
  graph.nodes.push_back(node);
  return node.outputs[0];
}

int constant(Graph& graph, const std::string& name, Tensor value) {
  const int id = graph.add_value(name, {value.dtype(), value.shape()});
  graph.values[id].constant = std::move(value);
  return id;
}

int shape_constant(Graph& graph, std::vector<int64_t> dims) {
  const auto size = static_cast<int64_t>(dims.size());
  return constant(graph, "shape" + std::to_string(graph.values.size()),
                  Tensor::from_vector(DType::kInt64, {size}, dims));
}

Graph build(const Shape& input, int batch_axis, int64_t batch, const Body& body) {
  Graph graph;
  graph.opset = 17;
  Shape shape = input;
  shape[batch_axis] = batch;
  const int x = graph.add_value("x", {DType::kFloat32, shape});
  graph.inputs = {x};
  graph.outputs = {body(graph, x, batch)};
  infer_graph(graph);
  return graph;
}

BatchFlow flow(const Shape& input, int batch_axis, const Body& body) {
  const Graph whole = build(input, batch_axis, 3, body);
  const Graph piece = build(input, batch_axis, 1, body);
  return follow_batch(whole, piece, 3, {batch_axis});
}

TEST(BatchFlow, FollowsTheBatchThroughTransposesAndMergedReshapes) {
  // [sequence, batch, 8] as torch's nn.TransformerEncoder takes it: batch first by a Transpose,
  // merged with the sequence for a MatMul, then split back.
  const BatchFlow split = flow({4, 0, 8}, 1, [](Graph& g, int x, int64_t batch) {
    const int t = add(g, "Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
    const int flat = add(g, "Reshape", {t, shape_constant(g, {batch * 4, 8})});
    const Tensor w = Tensor::from_vector(DType::kFloat32, {8, 8}, std::vector<float>(64, 0.5f));
    const int y = add(g, "MatMul", {flat, constant(g, "w", w)});
    const int s = add(g, "Softmax", {y}, {{"axis", int64_t{-1}}});
    return add(g, "Reshape", {s, shape_constant(g, {batch, 32})});
  });
  EXPECT_EQ(split.refusal, "");
  EXPECT_EQ(split.output_axis, std::vector<int>{0});
}

TEST(BatchFlow, KeepsTheBatchAxisWhereTheModelHasIt) {
  const BatchFlow split =
      flow({4, 0, 8}, 1, [](Graph& g, int x, int64_t) { return add(g, "Relu", {x}); });
  EXPECT_EQ(split.refusal, "");
  EXPECT_EQ(split.output_axis, std::vector<int>{1});
}

TEST(BatchFlow, NamesTheNodeThatMixesSamples) {
  const auto refusal = [](const Body& body) { return flow({4, 0, 8}, 1, body).refusal; };
  const std::string mean = refusal([](Graph& g, int x, int64_t) {
    return add(g, "ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  });
  EXPECT_NE(mean.find("ReduceMean"), std::string::npos) << mean;
  EXPECT_NE(mean.find("does not follow the batch"), std::string::npos) << mean;

  const std::string softmax = refusal([](Graph& g, int x, int64_t) {
    return add(g, "Softmax", {x}, {{"axis", int64_t{1}}});
  });
  EXPECT_NE(softmax.find("normalizes along the batch"), std::string::npos) << softmax;

  // [4, batch, 8] read as [batch, 4, 8]: each sample's data lands in other samples' rows.
  const std::string reinterpreted = refusal([](Graph& g, int x, int64_t batch) {
    return add(g, "Reshape", {x, shape_constant(g, {batch, 4, 8})});
  });
  EXPECT_NE(reinterpreted.find("splits samples apart"), std::string::npos) << reinterpreted;

  const std::string concat = refusal([](Graph& g, int x, int64_t) {
    return add(g, "Concat", {x, x}, {{"axis", int64_t{1}}});
  });
  EXPECT_NE(concat.find("along the batch axis"), std::string::npos) << concat;

  // The batch on axis 1 is not what a convolution takes as its batch.
  const std::string conv =
      flow({0, 2, 5, 5}, 0, [](Graph& g, int x, int64_t) {
        const int t = add(g, "Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2, 3}}});
        return add(g, "MaxPool", {t}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
      }).refusal;
  EXPECT_NE(conv.find("needs the batch first"), std::string::npos) << conv;
}

}  // namespace
}  // namespace tandem
