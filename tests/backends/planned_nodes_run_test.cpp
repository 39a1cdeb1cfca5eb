// For every zoo model and every backend of this build that can start a device here, a plan
// that puts every node the backend accepts on its device (the rest on the CPU) runs, and its
// outputs match ONNX Runtime's: what the registry lets the planner place, the backend runs.
// A backend that cannot start here (cuda without a GPU) is reported, not counted as run.
#include <gtest/gtest.h>

#include <fstream>

#include "backends/registry.h"
#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "ir/error.h"
#include "plan/strategies.h"
#include "runtime/plan_executor.h"
#include "util/compare.h"
#include "zoo_cases.h"

namespace tandem {
namespace {

// `backend`'s device first, then the host CPU for what it refuses.
Cluster cluster_with(const Backend& backend) {
  const std::string path = ::testing::TempDir() + "/planned-" + backend.name + ".yaml";
  const bool gpu = backend.kind == BackendKind::kCuda;
  std::ofstream(path) << "hosts: [local]\ndevices:\n"
                      << "  - {id: dev0, preset: " << (gpu ? "nvidia-h200" : "cpu-generic-avx2")
                      << ", host: local, backend: " << backend.name << (gpu ? "" : ", cores: 1")
                      << "}\n"
                      << "  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu, "
                         "cores: 1}\n";
  return load_cluster(path);
}

TEST(PlannedNodesRun, OnEveryBackendOfTheBuild) {
  const std::vector<std::string> models = testing::zoo_model_names();
  ASSERT_FALSE(models.empty()) << "run scripts/setup.sh to generate the zoo";
  int backends_run = 0;
  for (const Backend& backend : backends()) {
    if (!backend.make || !backend.missing().empty()) continue;
    SCOPED_TRACE(backend.name);
    const Cluster cluster = cluster_with(backend);
    std::vector<std::unique_ptr<Device>> devices;
    try {
      devices = make_devices(cluster);
    } catch (const InputError& error) {
      std::cout << "[ NOTE     ] backend " << backend.name << " cannot start here: " << error.what()
                << "\n";
      continue;
    }
    const CostModel cost(cluster);
    int nodes_on_backend = 0;
    for (const std::string& name : models) {
      if (name.starts_with("real/")) continue;  // the real tier runs in tests/real
      SCOPED_TRACE(name);
      const testing::ZooCase c = testing::load_zoo_case(name);
      const PlanningProblem problem(c.graph, cluster, cost, PlanOptions{});
      const std::optional<Plan> plan = make_greedy_strategy({0, 1})->plan(problem);
      ASSERT_TRUE(plan.has_value());
      for (const Segment& segment : plan->segments) {
        if (segment.device == 0) nodes_on_backend += static_cast<int>(segment.nodes.size());
      }
      PlanExecutor executor(c.graph, *plan, {devices[0].get(), devices[1].get()});
      const std::vector<Tensor> outputs = executor.run(c.inputs);
      ASSERT_EQ(outputs.size(), c.expected.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        const Comparison comparison = compare_tensors(outputs[i], c.expected[i]);
        EXPECT_TRUE(comparison.matches) << "output " << i << ": " << comparison.problem;
      }
    }
    EXPECT_GT(nodes_on_backend, 0) << "no node was planned on the backend";
    ++backends_run;
  }
  EXPECT_GE(backends_run, 1);  // the CPU at least
}

}  // namespace
}  // namespace tandem
