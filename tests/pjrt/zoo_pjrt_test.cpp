// The zoo on the PJRT CPU plugin: every static model, lowered whole to one StableHLO program,
// matches ONNX Runtime's outputs as the CPU backend does; and every model under a hybrid plan
// (each node on the PJRT device when it lowers, else on the CPU backend) matches the CPU
// backend alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "backends/cpu/cpu_device.h"
#include "backends/pjrt/lower.h"
#include "backends/registry.h"
#include "cost/cost_model.h"
#include "expect_outputs.h"
#include "ir/fuse.h"
#include "onnx/batch_split.h"
#include "onnx/importer.h"
#include "pjrt_op_util.h"
#include "plan/strategies.h"
#include "runtime/executor.h"
#include "runtime/plan_executor.h"
#include "util/npy.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

const std::string kSource = TANDEM_SOURCE_DIR;

nlohmann::json manifest() {
  std::ifstream file(kSource + "/zoo/manifest.json");
  return file ? nlohmann::json::parse(file) : nlohmann::json::array();
}

// A zoo model at its manifest's dims, fused as `tandem run` runs it.
Graph load(const nlohmann::json& entry) {
  ImportOptions options;
  for (const auto& [name, size] : entry["dims"].items()) options.dims[name] = size.get<int64_t>();
  ImportedModel model = import_onnx(kSource + "/zoo/" + entry["path"].get<std::string>(), options);
  fuse_for_inference(model.graph);
  return std::move(model.graph);
}

std::string first_refusal(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    const std::string refusal = lowering_refusal(node, graph);
    if (!refusal.empty()) return node.label() + ": " + refusal;
  }
  return "";
}

// A model served at two batch sizes: each shape compiles once, and going back to the first
// shape reuses its program instead of compiling it again.
TEST(ZooOnPjrt, EachShapeCompilesOnce) {
  auto session = std::make_shared<PjrtSession>(PjrtPlugin::load(TANDEM_PJRT_CPU_PLUGIN), "");
  PjrtDevice device("pjrt0", session, 0);
  cpu::CpuDevice reference("reference");
  std::mt19937_64 rng(5);
  for (int64_t batch : {1, 3, 1, 3}) {
    ImportOptions options;
    options.dims["batch"] = batch;
    ImportedModel model = import_onnx(kSource + "/zoo/mlp/model.onnx", options);
    fuse_for_inference(model.graph);
    const Value& input = model.graph.values[model.graph.inputs[0]];
    const std::vector<Tensor> inputs = {random_tensor(input.type.dtype, input.type.shape, rng)};
    GraphExecutor executor(model.graph, device);
    tandem::testing::expect_same_outputs(executor.run(inputs),
                                         GraphExecutor(model.graph, reference).run(inputs));
  }
  const ExecutableCache::Stats stats = session->cache.stats();
  EXPECT_EQ(stats.compiles, 2);
  EXPECT_EQ(stats.memory_hits, 2);
}

TEST(ZooOnPjrt, EveryStaticModelMatchesOnnxRuntime) {
  // The models whose every op lowers (torch_embeddingbag: its Loops fused into EmbeddingBag);
  // the others (If, a Loop that is no embedding bag, TopK, NonZero...) are
  // covered by the hybrid test below.
  const std::set<std::string> static_models = {"mlp",         "bert",
                                               "resnet",      "mobilenet",
                                               "tv_resnet18", "tv_mobilenet_v3_small",
                                               "dlrm",        "torch_embeddingbag"};
  std::set<std::string> run;
  for (const auto& entry : manifest()) {
    const std::string name = entry["name"];
    SCOPED_TRACE(name);
    const Graph graph = load(entry);
    const std::string refusal = first_refusal(graph);
    if (!static_models.count(name)) continue;
    ASSERT_EQ(refusal, "") << "a static zoo model no longer lowers whole";
    std::vector<Tensor> inputs;
    for (int id : graph.inputs) {
      for (const auto& input : entry["inputs"]) {
        if (input["name"] == graph.values[id].name) {
          inputs.push_back(read_npy(kSource + "/zoo/" + input["file"].get<std::string>()));
        }
      }
    }
    std::vector<Tensor> expected;
    for (const auto& output : entry["outputs"]) {
      expected.push_back(read_npy(kSource + "/zoo/" + output["file"].get<std::string>()));
    }
    GraphExecutor executor(graph, cpu_plugin_device());
    ASSERT_TRUE(executor.compiled());
    tandem::testing::expect_same_outputs(executor.run(inputs), expected);
    run.insert(name);
  }
  EXPECT_EQ(run, static_models) << "run scripts/setup.sh to generate the zoo";
}

// cpu-pjrt.yaml: cpu0 on the CPU backend, pjrt0 on the plugin.
struct HybridCluster {
  HybridCluster() { setenv("TANDEM_PJRT_PLUGIN", TANDEM_PJRT_CPU_PLUGIN, 1); }
  Cluster cluster = load_cluster(kSource + "/examples/clusters/cpu-pjrt.yaml");
  CostModel cost{cluster};
  cpu::CpuDevice cpu{"cpu0"};
  std::vector<Device*> devices() { return {&cpu, &cpu_plugin_device()}; }
};

TEST(ZooOnPjrt, HybridPlanMatchesTheCpuBackendAlone) {
  HybridCluster hybrid;
  ASSERT_EQ(hybrid.cluster.devices[1].backend, BackendKind::kPjrt);
  cpu::CpuDevice reference("reference");
  int hybrid_plans = 0;
  for (const auto& entry : manifest()) {
    const std::string name = entry["name"];
    SCOPED_TRACE(name);
    const Graph graph = load(entry);
    std::mt19937_64 rng(7);
    std::vector<Tensor> inputs;
    for (int id : graph.inputs) {
      inputs.push_back(
          random_tensor(graph.values[id].type.dtype, graph.values[id].type.shape, rng));
    }
    const std::vector<Tensor> expected = GraphExecutor(graph, reference).run(inputs);
    PlanOptions options;
    const PlanningProblem problem(graph, hybrid.cluster, hybrid.cost, options);
    // Every node on pjrt0 when it lowers there, else on cpu0.
    const std::optional<Plan> plan = make_greedy_strategy({1, 0})->plan(problem);
    ASSERT_TRUE(plan.has_value());
    bool on_pjrt = false, on_cpu = false;
    for (const Segment& segment : plan->segments) {
      (segment.device == 1 ? on_pjrt : on_cpu) = true;
    }
    EXPECT_TRUE(on_pjrt) << "no segment on the PJRT device";
    hybrid_plans += on_pjrt && on_cpu;
    PlanExecutor executor(graph, *plan, hybrid.devices());
    tandem::testing::expect_same_outputs(executor.run(inputs), expected);
  }
  EXPECT_GE(hybrid_plans, 3) << "models with ops PJRT cannot run should be split across both";
}

// Two devices of one plugin (pjrt0, pjrt1: its addressable devices 0 and 1) as the two stages
// of a pipeline over micro-batches: one portable compilation per segment runs on either device.
TEST(ZooOnPjrt, PipelineAcrossTwoDevicesOfOnePlugin) {
  const std::string path = ::testing::TempDir() + "two-pjrt.yaml";
  std::ofstream(path) << "hosts: [local]\n"
                         "devices:\n"
                         "  - {id: pjrt, count: 2, preset: cpu-generic-avx2, host: local, "
                         "backend: pjrt, plugin: "
                      << TANDEM_PJRT_CPU_PLUGIN << "}\n";
  const Cluster cluster = load_cluster(path);
  const CostModel cost(cluster);
  auto session = std::make_shared<PjrtSession>(PjrtPlugin::load(TANDEM_PJRT_CPU_PLUGIN), "");
  PjrtDevice first("pjrt0", session, 0), second("pjrt1", session, 1);
  ImportOptions options;
  options.dims["batch"] = 4;
  ImportedModel model = import_onnx(kSource + "/zoo/tv_resnet18/model.onnx", options);
  fuse_for_inference(model.graph);
  const BatchSplit split =
      find_batch_split(model, options, [](Graph& piece) { fuse_for_inference(piece); });
  ASSERT_TRUE(split.splittable()) << split.refusal;
  PlanOptions plan_options;
  plan_options.objective = Objective::kThroughput;
  plan_options.microbatches = 2;
  plan_options.batch = 4;
  const PlanningProblem problem(model.graph, cluster, cost, plan_options);
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(problem);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->microbatches, 2);
  std::mt19937_64 rng(3);
  const Value& input = model.graph.values[model.graph.inputs[0]];
  const std::vector<Tensor> inputs = {random_tensor(input.type.dtype, input.type.shape, rng)};
  cpu::CpuDevice reference("reference");
  const std::vector<Tensor> expected = GraphExecutor(model.graph, reference).run(inputs);
  PlanExecutor executor(model.graph, *plan, {&first, &second}, split);
  tandem::testing::expect_same_outputs(executor.run(inputs), expected);
  EXPECT_GT(executor.stats().busy_seconds[0], 0);
  EXPECT_GT(executor.stats().busy_seconds[1], 0);
  // What stage 1 hands to stage 2 goes device to device, and stage 2 uploads none of it.
  const TransferCounts& counts = session->transfers;
  EXPECT_EQ(counts.device_to_device, executor.stats().transfers);
  EXPECT_EQ(counts.found_on_device(), executor.stats().transfers);
  EXPECT_EQ(counts.uploaded, plan->microbatches);  // the model's input, per micro-batch
}

}  // namespace
}  // namespace tandem::pjrt::testing
