// On every zoo model and every example cluster, `auto` is never worse than the best single
// device that can hold the model, respects support and memory, and never beats the bound.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "ir/fuse.h"
#include "onnx/importer.h"
#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> zoo_models() {
  std::ifstream file(std::string(TANDEM_SOURCE_DIR) + "/zoo/manifest.json");
  std::vector<std::string> names;
  if (!file) return names;
  for (const auto& entry : nlohmann::json::parse(file)) names.push_back(entry["name"]);
  return names;
}

TEST(ZooPlans, AutoIsNeverWorseThanTheBestSingleDevice) {
  const std::vector<std::string> models = zoo_models();
  ASSERT_GE(models.size(), 10u) << "run scripts/setup.sh to generate the zoo";
  int checked = 0;
  for (const auto& cluster_file :
       fs::directory_iterator(std::string(TANDEM_SOURCE_DIR) + "/examples/clusters")) {
    const Cluster cluster = load_cluster(cluster_file.path().string());
    const CostModel cost(cluster);
    for (const std::string& name : models) {
      SCOPED_TRACE(name + " on " + cluster_file.path().filename().string());
      ImportOptions options;
      options.dims["batch"] = 2;
      ImportedModel model =
          import_onnx(std::string(TANDEM_SOURCE_DIR) + "/zoo/" + name + "/model.onnx", options);
      fuse_for_inference(model.graph);
      PlanOptions plan_options;
      plan_options.batch = 2;
      const PlanningProblem problem(model.graph, cluster, cost, plan_options);
      const std::optional<Plan> best = make_auto_strategy()->plan(problem);
      ASSERT_TRUE(best.has_value());
      const MemoryCheck memory = check_memory(problem, *best);
      EXPECT_TRUE(memory.fits);
      for (int n = 0; n < problem.node_count(); ++n) {
        EXPECT_TRUE(problem.runnable(n, best->device_of_node[n])) << model.graph.nodes[n].label();
      }
      EXPECT_GE(best->predicted.latency_seconds * (1 + 1e-9), best->lower_bound);
      for (int d = 0; d < problem.device_count(); ++d) {
        const std::optional<Plan> single = make_single_strategy(d)->plan(problem);
        if (!single) continue;
        EXPECT_LE(best->predicted.latency_seconds, single->predicted.latency_seconds * (1 + 1e-9))
            << "single:" << cluster.devices[d].id;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace tandem
