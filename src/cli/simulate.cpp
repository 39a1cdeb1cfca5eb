#include <cstdio>

#include "cli/commands.h"
#include "ir/error.h"
#include "plan/plan_json.h"
#include "report/html_report.h"
#include "report/json_schema.h"
#include "report/table.h"
#include "report/timeline.h"
#include "runtime/constant_folding.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace tandem::cli {

int simulate_command(const SimulateOptions& options) {
  const nlohmann::json document = read_plan_document(options.plan);
  const PlanProvenance provenance = plan_provenance(document, options.plan);
  // The model, cluster, bindings and fusion the plan was made from, unless flags say otherwise;
  // a file taken from the plan must be as it was then.
  ModelOptions model_options;
  model_options.model = options.model;
  if (model_options.model.empty()) {
    check_unchanged(provenance.model, "model", options.plan);
    model_options.model = provenance.model.resolved();
  }
  std::string cluster_file = options.cluster;
  if (cluster_file.empty()) {
    check_unchanged(provenance.cluster, "cluster", options.plan);
    cluster_file = provenance.cluster.resolved();
  }
  const bool bindings_from_plan = options.dims.empty() && options.shapes.empty();
  model_options.dims = bindings_from_plan ? provenance.dim_arguments() : options.dims;
  model_options.shapes = bindings_from_plan ? provenance.shape_arguments() : options.shapes;
  model_options.json = options.json;
  const bool fuse = options.fuse && provenance.fused;  // --no-fusion overrides the plan
  ImportedModel model;
  try {
    model = load_model(model_options);
  } catch (const InputError& error) {
    if (!bindings_from_plan || error.subject() == model_options.model) throw;
    throw InputError(options.plan, std::string("fields 'dims' and 'shapes': the bindings the plan "
                                               "was made with do not fit the model (") +
                                       error.what() + ")");
  }
  if (fuse) prepare_for_inference(model.graph);
  const CostModel cost(cluster_as_planned(cluster_file, provenance, options.plan));
  const BatchSplit split = batch_split_of(model_options, {}, model, fuse);
  const PlanningProblem problem(model.graph, cost.cluster(), cost,
                                plan_options_of(document, split, options.plan));
  const Plan plan = plan_from_json(document, problem, options.plan);

  SimulationOptions simulation;
  simulation.replicas = options.replicas;
  simulation.record_timeline = !options.trace.empty() || !options.report.empty();
  const SimulationResult result = simulate(problem, plan, simulation);

  if (!options.trace.empty()) write_chrome_trace(options.trace, result.timeline);
  if (!options.report.empty()) {
    write_html_report(options.report,
                      simulation_html(result, plan, problem, options.plan + " on " + cluster_file));
  }
  if (result.overflow) {
    const MemoryOverflow& overflow = *result.overflow;
    throw InputError(options.plan, "does not fit: " + overflow.device + " needs " +
                                       human_bytes(overflow.bytes) + " at " +
                                       format("%.6g s", overflow.time_seconds) + ", it holds " +
                                       human_bytes(overflow.capacity_bytes));
  }
  if (options.json) {
    nlohmann::json json = simulation_json(result, plan, problem);
    json["schema_version"] = kJsonSchemaVersion;
    json["plan"] = options.plan;
    json["model"] = model_options.model;
    json["cluster"] = cluster_file;
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    std::printf("%s", render_simulation(result, plan, problem).c_str());
    if (!options.trace.empty()) std::printf("trace written to %s\n", options.trace.c_str());
    if (!options.report.empty()) std::printf("report written to %s\n", options.report.c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
