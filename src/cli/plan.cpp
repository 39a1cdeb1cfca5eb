#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "ir/error.h"
#include "plan/compare.h"
#include "plan/evaluate.h"
#include "plan/plan_json.h"
#include "plan/strategy.h"
#include "plan/whole_machine.h"
#include "report/device_costs.h"
#include "report/html_report.h"
#include "report/plan_report.h"
#include "report/table.h"
#include "runtime/constant_folding.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace tandem::cli {
namespace {

Objective parse_objective(const std::string& text) {
  if (const std::optional<Objective> objective = objective_named(text)) return *objective;
  throw InputError("--objective " + text, "expected latency, throughput or cost");
}

PlanOptions plan_options(const PlanCommandOptions& options, const BatchSplit& split) {
  PlanOptions plan;
  plan.objective = parse_objective(options.objective);
  plan.microbatches = options.microbatches;
  plan.max_latency_seconds = options.max_latency;
  for (const std::string& text : options.pins) {
    auto [pattern, device] = split_assignment(text, "--pin");
    plan.pins.push_back({pattern, device});
  }
  plan.excluded = options.excluded;
  plan.batch = split.batch;
  plan.batch_unsplittable = split.refusal;
  return plan;
}

// The simulated plan, with every strategy's figure and the bound for the comparison chart.
HtmlReport plan_html(const PlanReport& report, const PlanningProblem& problem,
                     const SimulationResult& simulated) {
  HtmlReport html =
      simulation_html(simulated, report.plan, problem, report.model + " on " + report.cluster);
  html.objective = std::string(objective_name(report.plan.objective));
  html.lower_bound = report.plan.lower_bound;
  for (const StrategyResult& result : report.strategies) {
    HtmlReport::StrategyRow row;
    row.strategy = result.strategy;
    row.feasible = result.plan.has_value();
    row.chosen = &result == &report.strategies.back();
    if (result.plan) {
      const Prediction& p = result.plan->predicted;
      row.figure = report.plan.objective == Objective::kThroughput ? p.throughput_samples_per_second
                   : report.plan.objective == Objective::kCost     ? p.cost_per_million_samples
                                                                   : p.latency_seconds;
      row.text = objective_figure(*result.plan);
    } else {
      row.text = result.why_not;
    }
    html.strategies.push_back(std::move(row));
  }
  return html;
}

}  // namespace

int plan_command(const PlanCommandOptions& options) {
  const std::map<std::string, Tensor> input_files = read_input_files(options);
  ImportedModel model = load_model(options, input_files);
  if (options.fuse) prepare_for_inference(model.graph);
  const Graph& graph = model.graph;
  const Cluster cluster = load_cluster(options.cluster);
  const WholeMachineView view = whole_machine_view(cluster);
  // `single:local.cpu` asks for the machine as one device by name: planned on that view alone.
  const bool view_only = names_whole_machine(options.strategy, cluster, view);
  const CostModel cost(view_only ? *view.cluster : cluster);
  make_strategy(options.strategy, cost.cluster());  // an unknown one is refused before any work
  const BatchSplit split = batch_split_of(options, input_files, model, options.fuse);
  const PlanningProblem given(graph, cost.cluster(), cost, plan_options(options, split));
  if (options.microbatches > 1 && !given.batch_splittable() && !options.json) {
    std::fprintf(stderr, "note: 1 micro-batch, not %d: the batch cannot be split (%s)\n",
                 options.microbatches, given.batch_refusal().c_str());
  }

  const bool interactive = isatty(fileno(stderr));
  const auto started = std::chrono::steady_clock::now();
  bool progress_shown = false;
  PlanReport report;
  report.model = model.path;
  report.cluster = options.cluster;
  report.chosen_strategy = options.strategy;
  // What the plan is made from, so that simulate and run --plan need nothing more.
  report.provenance.model = plan_source(options.model);
  report.provenance.cluster = plan_source(options.cluster);
  const ImportOptions bound = import_options(options, input_files);
  report.provenance.dims = bound.dims;
  // Dims nothing bound were bound to 1: recorded too, so that the plan's bindings are whole.
  for (const std::string& name : model.unbound_dims) report.provenance.dims[name] = 1;
  for (const auto& [name, shape] : bound.shapes) report.provenance.shapes[name] = shape.dims;
  report.provenance.fused = options.fuse;
  report.strategies = compare_strategies(
      given, options.strategy, model.path,
      [&](const std::string& name, size_t index, size_t count) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (!interactive || elapsed <= 1) return;
        std::fprintf(stderr, "\rplanning: %-24s (%zu/%zu, %.1f s)", name.c_str(), index + 1, count,
                     elapsed);
        progress_shown = true;
      });
  if (progress_shown) std::fprintf(stderr, "\n");
  // Auto's plan against the machine as one device, where the cluster splits a machine's cores.
  std::optional<PlannedCluster> whole;
  if (options.strategy == "auto" && !view_only)
    whole = compare_whole_machine(given, view, *report.strategies.back().plan);
  report.provenance.whole_machine = view_only || whole.has_value();
  const PlanningProblem& problem = whole ? *whole->problem : given;
  report.plan = *report.strategies.back().plan;
  if (!options.output.empty()) write_plan(options.output, report.plan, problem, report.provenance);
  // The simulator's result is the plan's prediction; the evaluator's figures rank strategies.
  SimulationOptions simulation_options;
  simulation_options.record_timeline = !options.report.empty();
  const SimulationResult simulated = simulate(problem, report.plan, simulation_options);
  if (!options.report.empty())
    write_html_report(options.report, plan_html(report, problem, simulated));
  if (options.json) {
    nlohmann::json json = plan_report_json(report, problem);
    json["simulated"] = simulation_json(simulated, report.plan, problem);
    json["batch_split"] = {{"dim", split.dim},
                           {"samples", split.batch},
                           {"splittable", problem.batch_splittable()},
                           {"why_not", problem.batch_refusal()}};
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    std::printf("%s", render_plan_report(report, problem).c_str());
    if (problem.batch_splittable())
      std::printf("batch: %lld samples along '%s', splittable into micro-batches and shares\n",
                  static_cast<long long>(split.batch), split.dim.c_str());
    else
      std::printf("batch: not split (%s)\n", problem.batch_refusal().c_str());
    const std::string overflow =
        simulated.overflow ? ", out of memory on " + simulated.overflow->device : "";
    std::printf(
        "\nsimulated (discrete-event, predicted): latency %s, throughput %.1f samples/s%s\n",
        human_seconds(simulated.latency_seconds).c_str(), simulated.throughput_samples_per_second,
        overflow.c_str());
    if (!options.output.empty()) std::printf("plan written to %s\n", options.output.c_str());
    if (!options.report.empty()) std::printf("report written to %s\n", options.report.c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
