#include "ir/fuse.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

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

// A value read by two nodes cannot be fused into its producer: both readers still see it.
TEST(Fuse, LeavesValuesThatOthersReadAlone) {
  Graph graph = zoo_graph("bert");
  std::map<std::string, int> readers_before;
  for (const Node& node : graph.nodes) {
    for (int in : node.inputs) {
      if (in >= 0 && !graph.values[in].is_constant()) ++readers_before[graph.values[in].name];
    }
  }
  fuse_for_inference(graph);
  std::map<std::string, int> readers_after;
  for (const Node& node : graph.nodes) {
    for (int in : node.inputs) {
      if (in >= 0) ++readers_after[graph.values[in].name];
    }
  }
  int shared = 0;
  for (const auto& [name, readers] : readers_before) {
    if (readers < 2) continue;
    ++shared;
    EXPECT_EQ(readers_after[name], readers) << name;
  }
  EXPECT_GT(shared, 0);
}

}  // namespace
}  // namespace tandem
