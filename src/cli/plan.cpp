#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "backends/registry.h"
#include "cli/commands.h"
#include "ir/error.h"
#include "ir/fuse.h"
#include "plan/evaluate.h"
#include "plan/plan_json.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "report/device_costs.h"
#include "report/html_report.h"
#include "report/plan_report.h"
#include "report/table.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace tandem::cli {
namespace {

Objective parse_objective(const std::string& text) {
  for (Objective objective : {Objective::kLatency, Objective::kThroughput, Objective::kCost}) {
    if (objective_name(objective) == text) return objective;
  }
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

// Why everything on one device is not a plan: an op it cannot run, or memory it lacks.
std::string single_device_shortfall(const PlanningProblem& problem, int device) {
  const DeviceSpec& spec = problem.cluster().devices[device];
  if (!problem.allowed(device)) return spec.id + " is excluded";
  for (int n = 0; n < problem.node_count(); ++n) {
    if (problem.runnable(n, device)) continue;
    const Node& node = problem.graph()->nodes[n];
    std::string reason = cannot_run_reason(spec, node, *problem.graph());
    if (reason.empty()) reason = "pinned to another device";
    return spec.id + " cannot run " + node.label() + ": " + reason;
  }
  const double needs = problem.single_device_memory(device);
  const double has = problem.memory_capacity(device);
  return spec.id + " is short by " + human_bytes(needs - has) + " (the model needs " +
         human_bytes(needs) + ", it has " + human_bytes(has) + ")";
}

// Why no strategy placed the model: the single device closest to holding it, and by how much.
std::string infeasible_reason(const PlanningProblem& problem) {
  int closest = -1;
  double least_short = kInfinity;
  for (int d = 0; d < problem.device_count(); ++d) {
    if (problem.single_device_seconds(d) == kInfinity) continue;
    const double short_bytes = problem.single_device_memory(d) - problem.memory_capacity(d);
    if (short_bytes < least_short) least_short = short_bytes, closest = d;
  }
  if (closest >= 0)
    return "the model fits no combination of devices; the closest single device: " +
           single_device_shortfall(problem, closest);
  double capacity = 0;
  for (int d = 0; d < problem.device_count(); ++d) {
    if (problem.allowed(d)) capacity += problem.memory_capacity(d);
  }
  return "the model fits no combination of devices: it needs " +
         human_bytes(problem.single_device_memory(0)) + " of weights and activations, the " +
         "devices allowed hold " + human_bytes(capacity) + " in all";
}

StrategyResult run_strategy(const Strategy& strategy, const PlanningProblem& problem) {
  StrategyResult result;
  const auto start = std::chrono::steady_clock::now();
  result.plan = strategy.plan(problem);
  result.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.strategy = result.plan ? result.plan->strategy : strategy.name();
  if (!result.plan) {
    constexpr std::string_view kSingle = "single:";
    const std::string name = strategy.name();
    const int device = name.starts_with(kSingle)
                           ? problem.cluster().device_index(name.substr(kSingle.size()))
                           : -1;
    result.why_not = device >= 0 ? single_device_shortfall(problem, device)
                     : name == "data-parallel" && !data_parallel_refusal(problem).empty()
                         ? data_parallel_refusal(problem)
                         : "no plan within memory, support and pins";
  }
  return result;
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
  if (options.fuse) fuse_for_inference(model.graph);
  const Graph& graph = model.graph;
  const Cluster cluster = load_cluster(options.cluster);
  const CostModel cost(cluster);
  const std::unique_ptr<Strategy> chosen = make_strategy(options.strategy, cost.cluster());
  const BatchSplit split = batch_split_of(options, input_files, model, options.fuse);
  const PlanningProblem problem(graph, cost.cluster(), cost, plan_options(options, split));
  if (options.microbatches > 1 && !problem.batch_splittable() && !options.json) {
    std::fprintf(stderr, "note: 1 micro-batch, not %d: the batch cannot be split (%s)\n",
                 options.microbatches, problem.batch_refusal().c_str());
  }

  std::vector<std::unique_ptr<Strategy>> strategies = baseline_strategies(cost.cluster());
  // The chosen strategy last (once, when it is also a baseline), so that the table ends with it.
  const std::string chosen_name = chosen->name();
  std::vector<const Strategy*> to_run;
  for (const auto& strategy : strategies) {
    if (strategy->name() != chosen_name) to_run.push_back(strategy.get());
  }
  to_run.push_back(chosen.get());

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
  for (size_t i = 0; i < to_run.size(); ++i) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (interactive && elapsed > 1) {
      std::fprintf(stderr, "\rplanning: %-24s (%zu/%zu, %.1f s)", to_run[i]->name().c_str(), i + 1,
                   to_run.size(), elapsed);
      progress_shown = true;
    }
    report.strategies.push_back(run_strategy(*to_run[i], problem));
  }
  if (progress_shown) std::fprintf(stderr, "\n");

  const StrategyResult& result = report.strategies.back();
  if (!result.plan) {
    bool any = false;
    for (const StrategyResult& other : report.strategies) any |= other.plan.has_value();
    if (!any) throw InputError(model.path, infeasible_reason(problem));
    throw InputError(
        "--strategy " + options.strategy,
        "found no plan (" + result.why_not + "); other strategies did: see --strategy auto");
  }
  report.plan = *result.plan;
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
