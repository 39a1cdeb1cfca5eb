#include "runtime/constant_folding.h"

#include <gtest/gtest.h>

#include "ir/infer.h"

namespace tandem {
namespace {

constexpr int64_t kRows = 26, kIn = 30, kOut = 40;  // tensors above kMaxFoldedElements

template <typename T>
Tensor counting(DType dtype, Shape shape) {
  std::vector<T> values(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(i);
  return Tensor::from_vector<T>(dtype, std::move(shape), values);
}

// y = x @ Transpose(w) + Cast(b): the Transpose and the Cast read only constants, too large
// for shape inference's folding of integer arithmetic.
Graph weight_transpose_graph() {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {kRows, kIn}});
  graph.inputs.push_back(x);
  const int w = graph.add_value("w", {DType::kFloat32, {kOut, kIn}});
  graph.values[w].constant = counting<float>(DType::kFloat32, {kOut, kIn});
  const int b = graph.add_value("b", {DType::kFloat64, {kRows, kOut}});
  graph.values[b].constant = counting<double>(DType::kFloat64, {kRows, kOut});
  const int wt = graph.add_value("wt");
  const int bf = graph.add_value("bf");
  const int xw = graph.add_value("xw");
  const int y = graph.add_value("y");
  Node transpose{.name = "t", .op_type = "Transpose", .inputs = {w}, .outputs = {wt}};
  Node cast{.name = "c", .op_type = "Cast", .inputs = {b}, .outputs = {bf}};
  cast.attributes["to"] = int64_t{1};
  graph.nodes.push_back(transpose);
  graph.nodes.push_back(cast);
  graph.nodes.push_back({.name = "m", .op_type = "MatMul", .inputs = {x, wt}, .outputs = {xw}});
  graph.nodes.push_back({.name = "a", .op_type = "Add", .inputs = {xw, bf}, .outputs = {y}});
  graph.outputs.push_back(y);
  graph.sort_topologically();
  infer_graph(graph);
  return graph;
}

TEST(ConstantFolding, RunsNodesOfConstantInputsOnceAndDropsWhatOnlyTheyRead) {
  Graph graph = weight_transpose_graph();
  ASSERT_EQ(graph.nodes.size(), 4u);
  const ConstantFolding folded = fold_constants(graph);
  EXPECT_EQ(folded.nodes, 2);
  EXPECT_EQ(folded.bytes, (kIn * kOut + kRows * kOut) * 4);
  EXPECT_EQ(folded.over_cap, 0);
  ASSERT_EQ(graph.nodes.size(), 2u);
  EXPECT_EQ(graph.nodes[0].op_type, "MatMul");
  const Value& wt = graph.values[graph.find_value("wt")];
  ASSERT_TRUE(wt.is_constant());
  EXPECT_EQ(wt.constant.shape(), (Shape{kIn, kOut}));
  const std::vector<double> transposed = wt.constant.to_doubles();
  for (int64_t i = 0; i < kIn; ++i) {
    for (int64_t o = 0; o < kOut; ++o) ASSERT_EQ(transposed[i * kOut + o], o * kIn + i);
  }
  const Tensor& cast = graph.values[graph.find_value("bf")].constant;
  EXPECT_EQ(cast.dtype(), DType::kFloat32);
  EXPECT_EQ(cast.to_doubles().back(), kRows * kOut - 1);
  EXPECT_FALSE(graph.values[graph.find_value("w")].is_constant());  // no node reads it now
  EXPECT_EQ(graph.values[graph.find_value("wt")].producer, -1);
}

TEST(ConstantFolding, LeavesOutputsAboveTheCapToRun) {
  Graph graph = weight_transpose_graph();
  // The Cast's output (kRows x kOut floats) fits, the Transpose's (kIn x kOut) does not.
  const ConstantFolding folded = fold_constants(graph, kRows * kOut * 4);
  EXPECT_EQ(folded.nodes, 1);
  EXPECT_EQ(folded.over_cap, 1);
  ASSERT_EQ(graph.nodes.size(), 3u);
  EXPECT_TRUE(graph.values[graph.find_value("w")].is_constant());
}

TEST(ConstantFolding, CountsWhatTheCpuKernelsRefuseAndLeavesItToRun) {
  // y = x + Cast(c * c), c float16: the CPU computes float16 only through Cast.
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {4}});
  graph.inputs.push_back(x);
  const int c = graph.add_value("c", {DType::kFloat16, {4}});
  graph.values[c].constant = Tensor::zeros(DType::kFloat16, {4});
  const int square = graph.add_value("square");
  const int wide = graph.add_value("wide");
  const int y = graph.add_value("y");
  graph.nodes.push_back({.name = "m", .op_type = "Mul", .inputs = {c, c}, .outputs = {square}});
  Node cast{.name = "c", .op_type = "Cast", .inputs = {square}, .outputs = {wide}};
  cast.attributes["to"] = int64_t{1};
  graph.nodes.push_back(cast);
  graph.nodes.push_back({.name = "a", .op_type = "Add", .inputs = {x, wide}, .outputs = {y}});
  graph.outputs.push_back(y);
  graph.sort_topologically();
  infer_graph(graph);
  ASSERT_EQ(graph.nodes.size(), 3u);
  const ConstantFolding folded = fold_constants(graph);
  EXPECT_EQ(folded.nodes, 0);
  EXPECT_EQ(folded.refused, 1);
  EXPECT_EQ(graph.nodes.size(), 3u);
  EXPECT_TRUE(graph.values[c].is_constant());
}

TEST(ConstantFolding, ShapesThatBecomeStaticFoldTheirShapeOpsToo) {
  // y = r + ConstantOfShape(Shape(r)), r = Resize(x, scales = a * b): the scales are float
  // arithmetic, known only once folded; then r's shape is static, and the Shape (whose input r is
  // computed at run time) folds from r's type, so that y's shape becomes known as well.
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {1, 2, 4, 4}});
  graph.inputs.push_back(x);
  const int a = graph.add_value("a", {DType::kFloat32, {4}});
  graph.values[a].constant =
      Tensor::from_vector<float>(DType::kFloat32, {4}, std::vector<float>{1, 1, 2, 2});
  const int b = graph.add_value("b", {DType::kFloat32, {4}});
  graph.values[b].constant =
      Tensor::from_vector<float>(DType::kFloat32, {4}, std::vector<float>{1, 1, 1, 1});
  const int scales = graph.add_value("scales"), r = graph.add_value("r");
  const int shape = graph.add_value("shape"), zeros = graph.add_value("zeros");
  const int y = graph.add_value("y");
  graph.nodes.push_back({.name = "m", .op_type = "Mul", .inputs = {a, b}, .outputs = {scales}});
  graph.nodes.push_back(
      {.name = "r", .op_type = "Resize", .inputs = {x, -1, scales}, .outputs = {r}});
  graph.nodes.push_back({.name = "s", .op_type = "Shape", .inputs = {r}, .outputs = {shape}});
  graph.nodes.push_back(
      {.name = "z", .op_type = "ConstantOfShape", .inputs = {shape}, .outputs = {zeros}});
  graph.nodes.push_back({.name = "a", .op_type = "Add", .inputs = {r, zeros}, .outputs = {y}});
  graph.outputs.push_back(y);
  graph.sort_topologically();
  infer_graph(graph, {"m"});  // as an importer leaves float arithmetic: computed by folding
  ASSERT_FALSE(is_static(graph.values[y].type.shape));
  const ConstantFolding folded = fold_constants(graph);
  EXPECT_EQ(folded.refused, 0);
  EXPECT_EQ(graph.values[y].type.shape, (Shape{1, 2, 8, 8}));
  std::vector<std::string> left;
  for (const Node& node : graph.nodes) left.push_back(node.op_type);
  EXPECT_EQ(left, (std::vector<std::string>{"Resize", "Add"}));
}

}  // namespace
}  // namespace tandem
