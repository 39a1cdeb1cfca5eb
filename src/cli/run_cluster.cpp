#include "cli/run_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "backends/registry.h"
#include "cli/backends.h"
#include "cost/cost_model.h"
#include "ir/error.h"
#include "plan/evaluate.h"
#include "plan/plan_json.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "report/html_report.h"
#include "report/table.h"
#include "report/timeline.h"
#include "runtime/plan_executor.h"
#include "sim/simulator.h"
#include "sim/summary.h"
#include "util/statistics.h"

namespace tandem::cli {
namespace {

struct ClusterRun {
  Plan plan;
  std::vector<Tensor> outputs;
  TimedRuns runs;
  std::vector<std::vector<double>> busy_seconds;  // per device, one per timed run
  PlanExecutor::RunStats stats;                   // of the last timed run
  Timeline timeline;
  double prepare_seconds = 0;  // segments extracted, kernels and programs compiled
};

// Runs the plan as `schedule` says; the timeline holds every timed run, with each op inside its
// segment when `record_ops`.
ClusterRun run_plan(const RunSchedule& schedule, const Graph& graph, const BatchSplit& split,
                    const Plan& plan, const std::vector<std::unique_ptr<Device>>& devices,
                    const std::vector<Tensor>& inputs, bool record_ops) {
  std::vector<Device*> pointers;
  for (const auto& device : devices) pointers.push_back(device.get());
  PlanExecutor::Options executor_options;
  executor_options.faults = faults_from_environment();
  const auto start = std::chrono::steady_clock::now();
  PlanExecutor executor(graph, plan, pointers, split, executor_options);
  ClusterRun run;
  run.prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.plan = plan;
  run.busy_seconds.resize(devices.size());
  bool recording = false;
  run.runs = time_runs(schedule, [&](bool timed) {
    if (timed && !recording) {  // the warm-up runs are not part of the trace
      executor.set_recording({.every_run = true, .ops = record_ops});
      recording = true;
    }
    run.outputs = executor.run(inputs);
    const PlanExecutor::RunStats& stats = executor.stats();
    if (timed) {
      for (size_t d = 0; d < stats.busy_seconds.size() && d < devices.size(); ++d)
        run.busy_seconds[d].push_back(stats.busy_seconds[d]);
    }
    return stats.seconds;
  });
  run.stats = executor.stats();
  run.timeline = executor.timeline();
  return run;
}

Plan make_plan(const RunOptions& options, const PlanningProblem& problem,
               const std::string& strategy) {
  if (!options.plan.empty() && strategy.empty()) {
    Plan plan = read_plan(options.plan, problem);
    for (const Segment& segment : plan.segments) {
      const DeviceSpec& device = problem.cluster().devices[segment.device];
      if (!problem.allowed(segment.device)) {
        throw InputError(options.plan, "it runs ops on " + device.id + " (backend " +
                                           std::string(backend_name(device.backend)) +
                                           "), which this build of Tandem cannot run");
      }
    }
    return plan;
  }
  const std::string name = strategy.empty() ? "auto" : strategy;
  const std::optional<Plan> plan = make_strategy(name, problem.cluster())->plan(problem);
  if (!plan) {
    if (name == "data-parallel" && !data_parallel_refusal(problem).empty())
      throw InputError("--strategy data-parallel", data_parallel_refusal(problem));
    throw InputError(options.cluster, "the " + name +
                                          " strategy found no plan of the model that "
                                          "fits this cluster");
  }
  return *plan;
}

void say_plan(const Plan& plan, const PlanningProblem& problem) {
  const std::string chosen = plan.chosen.empty() || plan.chosen == plan.strategy
                                 ? ""
                                 : " chose " + plan.chosen + " (" + plan.reason + ")";
  std::fprintf(stderr, "verbose: plan: %s%s, %zu segments, %zu transfers, %d micro-batch(es)\n",
               plan.strategy.c_str(), chosen.c_str(), plan.segments.size(), plan.transfers.size(),
               std::max(plan.microbatches, 1));
  for (const Segment& segment : plan.segments) {
    const std::vector<Node>& nodes = problem.graph()->nodes;
    std::fprintf(stderr, "verbose:   %s: %zu node(s), %s .. %s\n",
                 problem.cluster().devices[segment.device].id.c_str(), segment.nodes.size(),
                 nodes[segment.nodes.front()].name.c_str(),
                 nodes[segment.nodes.back()].name.c_str());
  }
}

// The profile from the measured timeline: every op span of the timed runs, per node and per op
// type (a pipelined node runs once per micro-batch: each counts as a call).
void add_profile(RunReport& report, const ClusterRun& run, const Graph& graph) {
  std::map<std::string, const Node*> by_label;
  for (const Node& node : graph.nodes) by_label[node.label()] = &node;
  const size_t runs = run.runs.latencies_seconds.size();
  std::map<std::string, NodeTotal> totals;  // by label
  for (const TimelineSpan& span : run.timeline.spans) {
    if (span.category != "op") continue;
    NodeTotal& total = totals[span.name];
    NodeTime& row = total.node;
    if (row.node.empty()) {
      const auto node = by_label.find(span.name);
      row.node = node == by_label.end() ? span.name : node->second->name;
      row.op_type = node == by_label.end() ? "" : node->second->op_type;
      // The whole batch's work per run, however many micro-batches it ran in.
      row.flops = node == by_label.end() ? 0 : node->second->cost.flops * static_cast<double>(runs);
      row.device = run.timeline.tracks[span.track].group;
    }
    row.seconds += span.duration_seconds;
    ++total.calls;
  }
  std::vector<NodeTotal> rows;
  for (const auto& [label, total] : totals) rows.push_back(total);
  set_profile(report, rows, runs);
}

ClusterRunFigures figures_of(const ClusterRun& run, const PlanningProblem& problem,
                             std::vector<ProgramStats> compiled, const std::string& cluster) {
  const Plan& plan = run.plan;
  ClusterRunFigures figures;
  figures.cluster = cluster;
  figures.strategy = plan.strategy;
  figures.chosen = plan.chosen;
  figures.segments = plan.segments.size();
  figures.transfers = plan.transfers.size();
  figures.microbatches = std::max(plan.microbatches, 1);
  figures.prepare_seconds = run.prepare_seconds;
  figures.predicted_latency_seconds = plan.predicted.latency_seconds;
  std::vector<std::string> sources = plan.figure_sources;
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  for (const std::string& source : sources)
    figures.predicted_from += (figures.predicted_from.empty() ? "" : ", ") + source;
  for (int d = 0; d < problem.device_count(); ++d) {
    figures.devices.push_back(
        {problem.cluster().devices[d].id,
         d < static_cast<int>(run.busy_seconds.size()) ? median(run.busy_seconds[d]) : 0.0,
         d < static_cast<int>(plan.predicted.busy_seconds.size()) ? plan.predicted.busy_seconds[d]
                                                                  : 0.0});
  }
  figures.compiled = std::move(compiled);
  figures.segments_run = run.stats.segments_run;
  figures.transfers_run = run.stats.transfers;
  return figures;
}

}  // namespace

RunReport run_on_cluster(const RunOptions& options, const RunSchedule& schedule,
                         const ImportedModel& model,
                         const std::map<std::string, Tensor>& input_files,
                         const std::vector<Tensor>& inputs) {
  const Graph& graph = model.graph;
  const Cluster cluster = load_cluster(options.cluster);
  const CostModel cost(cluster);
  // Every device starts (or the run is refused, naming it) before any planning or work.
  const auto devices = make_devices(cost.cluster(), isatty(fileno(stderr)) && !options.json);
  const BatchSplit split = batch_split_of(options, input_files, model, options.fuse);
  PlanOptions plan_options;
  plan_options.batch = split.batch;
  plan_options.batch_unsplittable = split.refusal;
  plan_options.microbatches = options.microbatches;
  if (options.microbatches > 1 && !split.splittable() && !options.json) {
    std::fprintf(stderr, "note: 1 micro-batch, not %d: the batch cannot be split (%s)\n",
                 options.microbatches, split.refusal.c_str());
  }
  const PlanningProblem problem(graph, cost.cluster(), cost, plan_options);
  const bool record_ops = !options.trace.empty() || !options.report.empty() || options.profile;
  ClusterRun run;
  std::string failover_note;
  // The prediction the report draws above the measured run: the plan that ran, simulated.
  const auto write_report = [&](const ClusterRun& ran, const PlanningProblem& planned) {
    if (options.report.empty()) return;
    SimulationOptions simulation;
    simulation.record_timeline = true;
    HtmlReport html =
        simulation_html(simulate(planned, ran.plan, simulation), ran.plan, planned,
                        display_path(model.path) + " on " + display_path(options.cluster));
    html.strategy = ran.plan.chosen.empty() || ran.plan.chosen == ran.plan.strategy
                        ? ran.plan.strategy
                        : ran.plan.chosen + " (chosen by " + ran.plan.strategy + ")";
    html.batch = split.batch;
    html.measured = ran.timeline;
    html.measured_source =
        display_path(options.cluster) + ": " + std::to_string(ran.runs.latencies_seconds.size()) +
        " timed run(s) after " + std::to_string(ran.runs.warmup_runs) + " warm-up";
    write_html_report(options.report, html);
  };
  try {
    const Plan plan = make_plan(options, problem, options.strategy);
    if (options.verbose) say_plan(plan, problem);
    run = run_plan(schedule, graph, split, plan, devices, inputs, record_ops);
    write_report(run, problem);
  } catch (const DeviceFailure& failure) {
    if (!options.failover) throw;
    // Re-plan with `auto` onto the devices left, and run that plan from the start.
    PlanOptions remaining = plan_options;
    remaining.excluded.push_back(failure.device_name());
    const PlanningProblem replanned(graph, cost.cluster(), cost, remaining);
    std::fprintf(stderr, "tandem: %s failed (%s); failing over: re-planning onto the others\n",
                 failure.device_name().c_str(), failure.what());
    const Plan plan = make_plan(options, replanned, "auto");
    if (options.verbose) say_plan(plan, replanned);
    run = run_plan(schedule, graph, split, plan, devices, inputs, record_ops);
    write_report(run, replanned);
    failover_note = "failover    " + failure.device_name() +
                    " failed; re-planned with auto onto the remaining devices and finished\n";
  }
  if (!options.trace.empty()) {
    run.timeline.source = "measured on this machine (" + options.cluster + ")";
    write_chrome_trace(options.trace, run.timeline);
  }
  RunReport report;
  report.device = "cluster";
  report.warmup_runs = run.runs.warmup_runs;
  report.latencies_seconds = run.runs.latencies_seconds;
  report.duration_seconds = run.runs.duration_seconds;
  report.cluster = figures_of(run, problem, compile_stats(devices), options.cluster);
  report.cluster->failover = failover_note;
  for (size_t i = 0; i < run.outputs.size(); ++i)
    report.outputs.push_back({graph.values[graph.outputs[i]].name, run.outputs[i]});
  if (options.profile) add_profile(report, run, graph);
  return report;
}

}  // namespace tandem::cli
