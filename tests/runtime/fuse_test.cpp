#include "ir/fuse.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "onnx/importer.h"

namespace tandem {
namespace {

Graph zoo_graph(const std::string& name) {
  const char* dir = std::getenv("TANDEM_ZOO");
  ImportOptions options;
  options.dims["batch"] = 2;
  return import_onnx(std::string(dir ? dir : TANDEM_DEFAULT_ZOO) + "/" + name + "/model.onnx",
                     options)
      .graph;
}

int count(const Graph& graph, const std::string& op) {
  int n = 0;
  for (const Node& node : graph.nodes) n += node.op_type == op;
  return n;
}

TEST(Fuse, ResNetFoldsEveryBatchNormAndFusesResidualsAndRelus) {
  Graph graph = zoo_graph("resnet");
  const int batch_norms = count(graph, "BatchNormalization");
  const int adds = count(graph, "Add");
  ASSERT_GT(batch_norms, 0);
  ASSERT_GT(adds, 0);
  double flops_before = 0;
  for (const Node& node : graph.nodes) flops_before += node.cost.flops;
  const FusionStats stats = fuse_for_inference(graph);
  EXPECT_EQ(stats.batch_norms_folded, batch_norms);
  EXPECT_EQ(count(graph, "BatchNormalization"), 0);
  EXPECT_EQ(stats.residuals_fused, adds);
  EXPECT_EQ(count(graph, "Relu"), 0);
  double flops_after = 0;
  for (const Node& node : graph.nodes) flops_after += node.cost.flops;
  EXPECT_DOUBLE_EQ(flops_after, flops_before);  // work is moved into Conv, not lost
}

TEST(Fuse, LeavesValuesThatOthersReadAlone) {
  // In BERT, a MatMul output feeding two consumers must not absorb either of them.
  Graph graph = zoo_graph("bert");
  const size_t nodes = graph.nodes.size();
  fuse_for_inference(graph);
  for (const Node& node : graph.nodes) {
    if (node.has("activation"))
      EXPECT_TRUE(node.op_type == "MatMul" || node.op_type == "Gemm" || node.op_type == "Conv");
  }
  EXPECT_LE(graph.nodes.size(), nodes);
}

}  // namespace
}  // namespace tandem
