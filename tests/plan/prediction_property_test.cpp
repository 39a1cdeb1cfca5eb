// The planner's promises on real graphs: over strategies x micro-batch counts x zoo models x
// example clusters x batch sizes, no prediction beats its lower bound (latency above it,
// throughput below it, efficiency at most 1), the simulator neither, and the simulator agrees
// with the evaluator within a stated tolerance.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "ir/fuse.h"
#include "onnx/importer.h"
#include "plan/evaluate.h"
#include "plan/strategies.h"
#include "sim/simulator.h"

namespace tandem {
namespace {

constexpr double kRounding = 1e-9;  // relative: sums taken in another order
// The simulator against the evaluator, relative to the evaluator's latency, as measured over
// this sweep (at most 3.6% apart for plans without stages). Plans without stages: the
// simulator routes transfers hop by hop, sharing each link's bandwidth fairly, where the
// evaluator charges a device pair's whole path and queues a pair's transfers.
constexpr double kListTolerance = 0.05;
// Pipelines: the evaluator's closed form (every stage and transfer once, then M - 1 intervals
// of the busiest device or pair) cannot overlap what a device holding several stages, or
// parallel branches of transfers, overlap in the simulator, which may be faster by this much
// (31% at most in this sweep: torch_embeddingbag, batch 1, on h100-4xv5e, since its bags are
// one EmbeddingBag node instead of a Loop; 27% for gpt, batch 8, 4 micro-batches), never slower
// by more than kListTolerance.
constexpr double kPipelineFaster = 0.35;

struct ZooModel {
  std::string name;
  Graph graph;
  int64_t batch = 1;
};

// The zoo's first tier at batch `batch` (models without a batch dimension at their own size),
// fused as `tandem plan` plans it.
std::vector<ZooModel> zoo_models(int64_t batch) {
  const std::string dir = std::string(TANDEM_SOURCE_DIR) + "/zoo/";
  std::ifstream file(dir + "manifest.json");
  std::vector<ZooModel> models;
  if (!file) return models;
  for (const auto& entry : nlohmann::json::parse(file)) {
    ImportOptions options;
    for (const auto& [dim, size] : entry["dims"].items()) options.dims[dim] = size.get<int64_t>();
    const bool batched = options.dims.count("batch") > 0;
    if (batched) options.dims["batch"] = batch;
    ImportedModel model = import_onnx(dir + entry["path"].get<std::string>(), options);
    fuse_for_inference(model.graph);
    models.push_back({entry["name"], std::move(model.graph), batched ? batch : 1});
  }
  return models;
}

struct Worst {
  double faster = 0, slower = 0;  // simulator vs evaluator, relative
  std::string faster_case, slower_case;
};

void check_plan(const PlanningProblem& problem, const Plan& plan, const std::string& label,
                Worst& worst) {
  SCOPED_TRACE(label);
  const LowerBounds& bounds = problem.bounds();
  const Prediction& predicted = plan.predicted;
  EXPECT_GE(predicted.latency_seconds, bounds.latency_seconds * (1 - kRounding));
  EXPECT_LE(predicted.throughput_samples_per_second,
            bounds.throughput_samples_per_second * (1 + kRounding));
  EXPECT_LE(plan.efficiency, 1 + kRounding);
  EXPECT_GT(plan.efficiency, 0);

  const SimulationResult simulated = simulate(problem, plan);
  EXPECT_GE(simulated.latency_seconds, bounds.latency_seconds * (1 - kRounding));
  EXPECT_LE(simulated.throughput_samples_per_second,
            bounds.throughput_samples_per_second * (1 + kRounding));
  const double difference =
      (simulated.latency_seconds - predicted.latency_seconds) / predicted.latency_seconds;
  EXPECT_LE(difference, kListTolerance) << "simulator slower than the evaluator";
  EXPECT_GE(difference, plan.stages.empty() ? -kListTolerance : -kPipelineFaster)
      << "simulator faster than the evaluator";
  if (difference > worst.slower) worst.slower = difference, worst.slower_case = label;
  if (-difference > worst.faster) worst.faster = -difference, worst.faster_case = label;
}

TEST(PredictionProperties, NoPredictionBeatsTheBoundAndTheSimulatorAgrees) {
  const std::string clusters[] = {"gpu-cpu.yaml", "h100-4xv5e.yaml", "cpu-split.yaml"};
  Worst worst;
  int plans = 0;
  for (int64_t batch : {1, 8}) {
    const std::vector<ZooModel> models = zoo_models(batch);
    ASSERT_GE(models.size(), 10u) << "run scripts/setup.sh to generate the zoo";
    for (const std::string& cluster_name : clusters) {
      const Cluster cluster =
          load_cluster(std::string(TANDEM_SOURCE_DIR) + "/examples/clusters/" + cluster_name);
      const CostModel cost(cluster);
      for (const ZooModel& model : models) {
        for (Objective objective : {Objective::kLatency, Objective::kThroughput}) {
          for (int microbatches : {1, 2, 4, 8}) {
            PlanOptions options;
            options.objective = objective;
            options.batch = model.batch;
            options.microbatches = microbatches;
            const PlanningProblem problem(model.graph, cost.cluster(), cost, options);
            std::vector<std::unique_ptr<Strategy>> strategies = baseline_strategies(cluster);
            // Micro-batches change only pipelines (auto's among them): the others once.
            if (microbatches > 1) {
              std::erase_if(strategies, [](const auto& s) { return s->name() != "pipeline"; });
            }
            strategies.push_back(make_auto_strategy());
            for (const auto& strategy : strategies) {
              const std::optional<Plan> plan = strategy->plan(problem);
              if (!plan) continue;
              check_plan(problem, *plan,
                         model.name + " batch " + std::to_string(model.batch) + " on " +
                             cluster_name + ", " + strategy->name() + ", " +
                             std::string(objective_name(objective)) + ", " +
                             std::to_string(microbatches) + " micro-batches",
                         worst);
              ++plans;
            }
          }
        }
      }
    }
  }
  std::printf("%d plans; simulator vs evaluator: at most %.1f%% slower (%s), %.1f%% faster (%s)\n",
              plans, 100 * worst.slower, worst.slower_case.c_str(), 100 * worst.faster,
              worst.faster_case.c_str());
  EXPECT_GE(plans, 500);
}

}  // namespace
}  // namespace tandem
