#include <cstdio>

#include "cli/commands.h"
#include "ir/error.h"
#include "ir/fuse.h"
#include "plan/plan_json.h"
#include "report/html_report.h"
#include "report/table.h"
#include "report/timeline.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace tandem::cli {
namespace {

// The planning problem the plan was made for: its objective and micro-batches from the file,
// the batch as `tandem plan` finds it.
PlanOptions options_of(const nlohmann::json& plan, const BatchSplit& split,
                       const std::string& file) {
  // Fields of the wrong type are named here; plan_from_json checks the rest.
  for (const char* key : {"objective", "batch", "microbatches"}) {
    if (!plan.is_object() || !plan.contains(key)) continue;
    const bool text = std::string_view(key) == "objective";
    if (text ? !plan[key].is_string() : !plan[key].is_number_integer())
      throw InputError(
          file, std::string("field '") + key + "': expected " + (text ? "a string" : "an integer"));
  }
  PlanOptions options;
  const std::string objective = plan.value("objective", "latency");
  for (Objective candidate : {Objective::kLatency, Objective::kThroughput, Objective::kCost}) {
    if (objective_name(candidate) == objective) options.objective = candidate;
  }
  options.batch = split.batch;
  options.batch_unsplittable = split.refusal;
  const int64_t planned = plan.value("batch", options.batch);
  if (planned != options.batch)
    throw InputError(file, "the plan is for batch " + std::to_string(planned) +
                               ", the model as bound has batch " + std::to_string(options.batch) +
                               " (bind it with --dim as for `tandem plan`)");
  options.microbatches = plan.value("microbatches", 1);
  return options;
}

}  // namespace

int simulate_command(const SimulateOptions& options) {
  const nlohmann::json document = read_plan_document(options.plan);
  ModelOptions model_options;
  model_options.model = options.model;
  if (model_options.model.empty()) {
    if (!document.is_object() || !document.contains("model") || !document["model"].is_string())
      throw InputError(options.plan, "the plan file does not name its model: give --model");
    model_options.model = document["model"].get<std::string>();
  }
  model_options.dims = options.dims;
  model_options.shapes = options.shapes;
  model_options.json = options.json;
  // Without --dim or --shape, the model is bound to the shapes the plan was made for.
  const bool shapes_from_plan = options.dims.empty() && options.shapes.empty() &&
                                document.is_object() && document.contains("inputs") &&
                                document["inputs"].is_object();
  if (shapes_from_plan) {
    for (const auto& [name, dims] : document["inputs"].items()) {
      std::string text;
      if (!dims.is_array()) continue;
      for (const nlohmann::json& dim : dims)
        text += (text.empty() ? "" : "x") + (dim.is_number_integer() ? dim.dump() : "?");
      if (!text.empty()) model_options.shapes.push_back(name + "=" + text);
    }
  }
  ImportedModel model;
  try {
    model = load_model(model_options);
  } catch (const InputError& error) {
    if (!shapes_from_plan || error.subject() == model_options.model) throw;
    throw InputError(options.plan, std::string("field 'inputs': the shapes the plan was made for "
                                               "do not fit the model (") +
                                       error.what() + ")");
  }
  if (options.fuse) fuse_for_inference(model.graph);
  const Cluster cluster = load_cluster(options.cluster);
  const CostModel cost(cluster);
  const BatchSplit split = batch_split_of(model_options, {}, model, options.fuse);
  const PlanningProblem problem(model.graph, cost.cluster(), cost,
                                options_of(document, split, options.plan));
  const Plan plan = plan_from_json(document, problem, options.plan);

  SimulationOptions simulation;
  simulation.replicas = options.replicas;
  simulation.record_timeline = !options.trace.empty() || !options.report.empty();
  const SimulationResult result = simulate(problem, plan, simulation);

  if (!options.trace.empty()) write_chrome_trace(options.trace, result.timeline);
  if (!options.report.empty()) {
    write_html_report(options.report, simulation_html(result, plan, problem,
                                                      options.plan + " on " + options.cluster));
  }
  if (result.overflow) {
    const MemoryOverflow& overflow = *result.overflow;
    throw InputError(options.plan, "does not fit: " + overflow.device + " needs " +
                                       human_bytes(overflow.bytes) + " at " +
                                       format("%.6g s", overflow.time_seconds) + ", it holds " +
                                       human_bytes(overflow.capacity_bytes));
  }
  if (options.json) {
    std::printf("%s\n", simulation_json(result, plan, problem).dump(2).c_str());
  } else {
    std::printf("%s", render_simulation(result, plan, problem).c_str());
    if (!options.trace.empty()) std::printf("trace written to %s\n", options.trace.c_str());
    if (!options.report.empty()) std::printf("report written to %s\n", options.report.c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
