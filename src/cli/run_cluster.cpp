#include "cli/run_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "backends/registry.h"
#include "calibrate/calibrate.h"
#include "calibrate/op_history.h"
#include "cli/backends.h"
#include "cost/cost_model.h"
#include "devices/profile.h"
#include "distributed/core_sharing.h"
#include "distributed/rank_map.h"
#include "distributed/rank_timeline.h"
#include "ir/error.h"
#include "plan/evaluate.h"
#include "plan/plan_json.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "plan/whole_machine.h"
#include "report/html_report.h"
#include "report/segment_check.h"
#include "report/table.h"
#include "report/timeline.h"
#include "runtime/plan_executor.h"
#include "sim/simulator.h"
#include "sim/summary.h"
#include "util/cpu_affinity.h"
#include "util/statistics.h"
#ifdef TANDEM_WITH_MPI
#include "distributed/mpi_transport.h"
#include "distributed/mpi_world.h"
#endif

namespace tandem::cli {
namespace {

struct ClusterRun {
  Plan plan;
  std::vector<Tensor> outputs;
  TimedRuns runs;
  std::vector<std::vector<double>> busy_seconds;  // per device, one per timed run
  PlanExecutor::RunStats stats;                   // of the last timed run
  Timeline timeline;
  double prepare_seconds = 0;            // segments extracted, kernels and programs compiled
  std::vector<SpeedCheck> speed_checks;  // timed after the runs (check_speeds)
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

// Auto's split of a machine's cores is tried against the machine as one device before the timed
// runs: a prediction cannot tell apart plans nearer than the machine's speed moved between their
// devices' calibrations (on a shared 2-vCPU VM, 20-40% within minutes: a one-core device priced
// 0.25 ms against the whole machine's 0.31 ran 0.44 against 0.34), and a split that runs slower
// than the machine as one device is worse than none. The plans run in turns, each turn for
// kTrialTurnSeconds or one run; a plan's figure is the median of its turns' medians.
constexpr int kTrialTurns = 3;
constexpr double kTrialTurnSeconds = 0.03;

struct TrialPlan {
  const Plan& plan;
  const std::vector<std::unique_ptr<Device>>& devices;
  bool whole_machine;
};

// Each plan's median run as the trial measured it; the fastest is `kept`.
std::vector<TriedPlan> try_plans(const Graph& graph, const BatchSplit& split,
                                 const std::vector<Tensor>& inputs,
                                 const std::vector<TrialPlan>& plans) {
  PlanExecutor::Options executor_options;
  executor_options.faults = faults_from_environment();
  std::vector<std::unique_ptr<PlanExecutor>> executors;
  for (const TrialPlan& candidate : plans) {
    std::vector<Device*> pointers;
    for (const auto& device : candidate.devices) pointers.push_back(device.get());
    executors.push_back(
        std::make_unique<PlanExecutor>(graph, candidate.plan, pointers, split, executor_options));
    executors.back()->run(inputs);  // warm-up: first-run allocations, programs loaded
  }
  std::vector<std::vector<double>> turns(plans.size());
  for (int turn = 0; turn < kTrialTurns; ++turn) {
    for (size_t p = 0; p < plans.size(); ++p) {
      std::vector<double> runs;
      const auto start = std::chrono::steady_clock::now();
      do {
        executors[p]->run(inputs);
        runs.push_back(executors[p]->stats().seconds);
      } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
               kTrialTurnSeconds);
      turns[p].push_back(median(runs));
    }
  }
  std::vector<TriedPlan> tried;
  for (size_t p = 0; p < plans.size(); ++p) {
    const Plan& plan = plans[p].plan;
    tried.push_back({.plan = plan.chosen.empty() ? plan.strategy : plan.chosen,
                     .whole_machine = plans[p].whole_machine,
                     .measured_seconds = median(turns[p]),
                     .predicted_seconds = plan.predicted.latency_seconds});
  }
  std::min_element(tried.begin(), tried.end(), [](const auto& a, const auto& b) {
    return a.measured_seconds < b.measured_seconds;
  })->kept = true;
  return tried;
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

// --calibrate-from-run folds op times measured on the whole batch only: an op run on a
// micro-batch or a data-parallel share has other shapes than the node the cost model prices.
void check_foldable(const RunOptions& options, const Plan& plan) {
  if (!options.calibrate_from_run) return;
  if (plan.microbatches > 1 || !plan.batch_share.empty())
    throw InputError("--calibrate-from-run",
                     "the plan (" + (plan.chosen.empty() ? plan.strategy : plan.chosen) +
                         ") splits the batch into " +
                         (plan.batch_share.empty() ? "micro-batches" : "data-parallel shares") +
                         ", whose op times do not price the whole batch's ops; calibrate from a "
                         "run with --microbatches 1 and a strategy that does not split the batch");
}

// Whether a run that records ops waits for `device` after every node, so that each op's span is
// its execution: an eager accelerator, whose launch, kernel and wait then run in series where
// an unrecorded run streams them (on an H200, 12 us of wait per node against 6 of launch).
bool waited_for_per_node(const DeviceSpec& device) {
  return device.kind != DeviceKind::kCpu && backend_of(device.backend).eager;
}

// Says on stderr which of the plan's devices a recorded run waits for after every node: their
// measured times are not what an unrecorded run takes.
void say_waits_per_node(const Plan& plan, const Cluster& cluster) {
  std::set<int> used;
  for (const Segment& segment : plan.segments) used.insert(segment.device);
  for (const int d : used) {
    if (!waited_for_per_node(cluster.devices[d])) continue;
    std::fprintf(stderr,
                 "note: ops are recorded (--trace, --report, --profile or --calibrate-from-run): "
                 "%s is waited for after every node, so its measured times include a wait per "
                 "node that a run without recording does not pay\n",
                 cluster.devices[d].id.c_str());
  }
}

// Each device's measured op times (median over the timed runs, per top-level node) into the
// profile its cluster entry names; says on stderr what went where and what was left out.
void calibrate_from_run(const ClusterRun& run, const PlanningProblem& planned) {
  const Graph& graph = *planned.graph();
  const Cluster& cluster = planned.cluster();
  std::map<std::string, const Node*> by_label;
  for (const Node& node : graph.nodes) by_label[node.label()] = &node;
  std::map<std::string, int> device_of_id;
  for (int d = 0; d < planned.device_count(); ++d) device_of_id[cluster.devices[d].id] = d;
  // Per device, per node, per run: the node's time (one call per run: the batch is whole).
  std::map<int, std::map<const Node*, std::map<int, double>>> measured;
  for (const TimelineSpan& span : run.timeline.spans) {
    if (span.category != "op" || span.track < 0 ||
        span.track >= static_cast<int>(run.timeline.tracks.size()))
      continue;
    const auto node = by_label.find(span.name);
    const auto device = device_of_id.find(run.timeline.tracks[span.track].group);
    if (node == by_label.end() || device == device_of_id.end()) continue;
    measured[device->second][node->second][span.iteration] += span.duration_seconds;
  }
  std::map<std::string, calibrate::OpHistory> by_profile;
  std::map<std::string, std::string> devices_of_profile;
  for (int d = 0; d < planned.device_count(); ++d) {
    const DeviceSpec& spec = cluster.devices[d];
    const auto ran = measured.find(d);
    if (ran == measured.end()) {
      const bool used = std::any_of(run.plan.segments.begin(), run.plan.segments.end(),
                                    [&](const Segment& segment) { return segment.device == d; });
      if (used)
        std::fprintf(stderr, "calibrated: %s ran compiled programs, no op times to fold\n",
                     spec.id.c_str());
      continue;
    }
    if (spec.profile.empty()) {
      std::fprintf(stderr, "calibrated: %s names no profile; its %zu op times were not kept\n",
                   spec.id.c_str(), ran->second.size());
      continue;
    }
    // Times with a wait after every node would price its nodes at about twice what a run pays.
    if (waited_for_per_node(spec)) {
      std::fprintf(stderr,
                   "calibrated: %s's %zu op times were each waited for (a recorded run waits "
                   "after every node on an accelerator), not what a run pays; not kept\n",
                   spec.id.c_str(), ran->second.size());
      continue;
    }
    calibrate::OpHistory& history = by_profile[spec.profile];
    for (const auto& [node, per_run] : ran->second) {
      std::vector<double> seconds;
      for (const auto& [iteration, total] : per_run) seconds.push_back(total);
      history.add(op_signature(*node, graph), median(seconds));
    }
    std::string& devices = devices_of_profile[spec.profile];
    devices += (devices.empty() ? "" : ", ") + spec.id;
  }
  for (const auto& [file, history] : by_profile) {
    calibrate::fold_into_profile(file, history.median_seconds());
    std::fprintf(stderr, "calibrated: %zu op times measured on %s folded into %s\n",
                 history.signatures(), devices_of_profile[file].c_str(),
                 display_path(file).c_str());
  }
}

// The prediction the report draws above the measured run: the plan that ran, simulated.
void write_report(const RunOptions& options, const ClusterRun& ran, const PlanningProblem& planned,
                  const ImportedModel& model, const BatchSplit& split,
                  const std::vector<TriedPlan>& trial) {
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
  html.segment_checks = check_segments(ran.plan, planned, ran.timeline);
  html.speed_checks = ran.speed_checks;
  html.trial = trial;
  html.measured_source = display_path(options.cluster) + ": " +
                         std::to_string(ran.runs.latencies_seconds.size()) +
                         " timed run(s) after " + std::to_string(ran.runs.warmup_runs) + " warm-up";
  write_html_report(options.report, html);
}

// Each device the plan ran on whose profile timed the speed reference times it again, now that
// its runs are over: on a shared VM the machine's speed moved by up to 35% within the hour,
// more than any pricing rule misses by, and a run that missed its prediction says so.
constexpr double kSpeedCheckSeconds = 0.2;  // per device; the calibration's own took 0.6
std::vector<SpeedCheck> check_speeds(const Plan& plan, const PlanningProblem& planned,
                                     const std::vector<std::unique_ptr<Device>>& devices) {
  std::set<int> used;
  for (const Segment& segment : plan.segments) used.insert(segment.device);
  std::vector<SpeedCheck> checks;
  for (const int d : used) {
    const double calibrated = planned.cost().speed_reference(d);
    if (calibrated <= 0 || d >= static_cast<int>(devices.size()) || !devices[d]) continue;
    checks.push_back({planned.cluster().devices[d].id, calibrated,
                      calibrate::speed_reference_seconds(*devices[d], kSpeedCheckSeconds)});
  }
  return checks;
}

// The report both run paths print: the timed runs, the figures against the plan that ran, the
// outputs, the profile; `failed_over` names the device a failover left behind, when one did.
RunReport cluster_report(const RunOptions& options, const ClusterRun& run,
                         const PlanningProblem& planned,
                         const std::vector<std::unique_ptr<Device>>& devices,
                         const std::string& failed_over) {
  const Graph& graph = *planned.graph();
  RunReport report;
  report.device = "cluster";
  report.warmup_runs = run.runs.warmup_runs;
  report.latencies_seconds = run.runs.latencies_seconds;
  report.duration_seconds = run.runs.duration_seconds;
  report.cluster = figures_of(run, planned, compile_stats(devices), options.cluster);
  report.cluster->segment_checks = check_segments(run.plan, planned, run.timeline);
  report.cluster->speed_checks = run.speed_checks;
  if (!failed_over.empty())
    report.cluster->failover = "failover    " + failed_over +
                               " failed; re-planned with auto onto the remaining devices and "
                               "finished\n";
  for (size_t i = 0; i < run.outputs.size(); ++i)
    report.outputs.push_back({graph.values[graph.outputs[i]].name, run.outputs[i]});
  if (options.profile) add_profile(report, run, graph);
  return report;
}

}  // namespace

RunReport run_on_cluster(const RunOptions& options, const RunSchedule& schedule,
                         const ImportedModel& model,
                         const std::map<std::string, Tensor>& input_files,
                         const std::vector<Tensor>& inputs) {
  const Graph& graph = model.graph;
  const Cluster cluster = load_cluster(options.cluster);
  const WholeMachineView view = whole_machine_view(cluster);
  // A plan file made on the machine as one device, or `--strategy single:<host>.cpu`: the
  // whole-machine view from the start.
  const bool view_only =
      (!options.plan.empty() && options.strategy.empty())
          ? plan_provenance(read_plan_document(options.plan), options.plan).whole_machine
          : names_whole_machine(options.strategy, cluster, view);
  if (view_only && !view.cluster)
    throw InputError(options.plan, "it was made on the machine as one device, and " +
                                       options.cluster + " has no such view any more (" +
                                       view.why_not + ")");
  const CostModel cost(view_only ? *view.cluster : cluster);
  const BatchSplit split = batch_split_of(options, input_files, model, options.fuse);
  PlanOptions plan_options;
  plan_options.batch = split.batch;
  plan_options.batch_unsplittable = split.refusal;
  plan_options.microbatches = options.microbatches;
  if (options.microbatches > 1 && !split.splittable() && !options.json) {
    std::fprintf(stderr, "note: 1 micro-batch, not %d: the batch cannot be split (%s)\n",
                 options.microbatches, split.refusal.c_str());
  }
  const PlanningProblem given(graph, cost.cluster(), cost, plan_options);
  if (options.calibrate_from_run &&
      std::none_of(cluster.devices.begin(), cluster.devices.end(),
                   [](const DeviceSpec& device) { return !device.profile.empty(); }))
    throw InputError(options.cluster,
                     "--calibrate-from-run: no device names a profile (make one with `tandem "
                     "calibrate -o FILE.json` and name it with profile: FILE.json)");
  const bool record_ops = !options.trace.empty() || !options.report.empty() || options.profile ||
                          options.calibrate_from_run;
  ClusterRun run;
  std::string failed_over;  // the device a failover left behind
  std::optional<PlannedCluster> whole;
  const PlanningProblem* planned = &given;
  std::vector<TriedPlan> trial;  // auto's split against the machine as one device, when tried
  const auto write_report = [&](const ClusterRun& ran, const PlanningProblem& on) {
    cli::write_report(options, ran, on, model, split, trial);
  };

  Plan plan = make_plan(options, given, options.strategy);
  // Auto's plan against the machine as one device, where the cluster splits a machine's cores;
  // where the split stands, the two are tried before the timed runs (kTrialTurns).
  std::optional<WholeMachinePlan> beaten;
  if (options.plan.empty() && (options.strategy.empty() || options.strategy == "auto") &&
      !view_only) {
    whole = compare_whole_machine(given, view, plan, options.trial ? &beaten : nullptr);
    if (whole) planned = whole->problem.get();
  }
  // The planned cluster's devices start (or the run is refused, naming one) before any work;
  // devices a whole-machine plan merged never start, unless they are tried.
  const bool progress = isatty(fileno(stderr)) && !options.json;
  std::vector<std::unique_ptr<Device>> devices = make_devices(planned->cluster(), progress);
  try {
    if (beaten) {
      std::vector<std::unique_ptr<Device>> whole_devices =
          make_devices(beaten->planned.problem->cluster(), progress);
      if (progress && plan.predicted.latency_seconds * (2 + kTrialTurns) > 1)
        std::fprintf(stderr, "auto: trying %s against the machine as one device\n",
                     plan.chosen.c_str());
      trial = try_plans(graph, split, inputs,
                        {{plan, devices, false}, {beaten->plan, whole_devices, true}});
      const std::string measured = seconds_text(trial.back().measured_seconds) +
                                   " on the machine as one device against " +
                                   seconds_text(trial.front().measured_seconds) + " for " +
                                   plan.chosen + " on the devices as given";
      if (!trial.back().kept) {
        plan.reason += "; and in a trial before the timed runs, " + measured;
      } else {
        beaten->plan.reason = "in a trial before the timed runs, " + measured + " (" + plan.reason +
                              "); " + beaten->plan.reason;
        plan = std::move(beaten->plan);
        whole = std::move(beaten->planned);
        planned = whole->problem.get();
        devices = std::move(whole_devices);
      }
    }
    if (options.verbose) say_plan(plan, *planned);
    check_foldable(options, plan);
    if (record_ops) say_waits_per_node(plan, planned->cluster());
    run = run_plan(schedule, graph, split, plan, devices, inputs, record_ops);
    run.speed_checks = check_speeds(run.plan, *planned, devices);
    write_report(run, *planned);
    if (options.calibrate_from_run) calibrate_from_run(run, *planned);
  } catch (const DeviceFailure& failure) {
    if (!options.failover) throw;
    // Re-plan with `auto` onto the devices left, and run that plan from the start.
    PlanOptions remaining = plan_options;
    remaining.excluded.push_back(failure.device_name());
    const PlanningProblem replanned(graph, planned->cluster(), planned->cost(), remaining);
    std::fprintf(stderr, "tandem: %s failed (%s); failing over: re-planning onto the others\n",
                 failure.device_name().c_str(), failure.what());
    const Plan plan = make_plan(options, replanned, "auto");
    if (options.verbose) say_plan(plan, replanned);
    check_foldable(options, plan);
    run = run_plan(schedule, graph, split, plan, devices, inputs, record_ops);
    run.speed_checks = check_speeds(run.plan, replanned, devices);
    write_report(run, replanned);
    if (options.calibrate_from_run) calibrate_from_run(run, replanned);
    failed_over = failure.device_name();
  }
  if (!options.trace.empty()) {
    run.timeline.source = "measured on this machine (" + options.cluster + ")";
    write_chrome_trace(options.trace, run.timeline);
  }
  RunReport report = cluster_report(options, run, *planned, devices, failed_over);
  report.cluster->trial = std::move(trial);
  return report;
}

#ifdef TANDEM_WITH_MPI
struct RankWorld {
  distributed::MpiWorld world;
};

std::shared_ptr<RankWorld> join_ranks_if_launched() {
  if (!distributed::launched_by_mpi()) return nullptr;
  return std::make_shared<RankWorld>();
}

namespace {

// Every rank says whether its step worked; when one did not, every rank throws InputError
// naming the first that failed, so that all of them stop at the same point.
void agree(const distributed::MpiWorld& world, const std::string& error, const std::string& step) {
  const std::vector<std::string> errors = world.all_gather(error);
  for (size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty())
      throw InputError(world.describe(static_cast<int>(r)), step + ": " + errors[r]);
  }
}

std::string message_of(const std::exception& error) {
  const auto* input = dynamic_cast<const InputError*>(&error);
  return input && !input->subject().empty() ? input->subject() + ": " + error.what() : error.what();
}

// After a run the ranks agree on how it went: a rank whose part finished before another's device
// failed must stop too, and each then knows which device failed. `what` and `device`: this
// rank's failure, empty when it had none. Throws DeviceFailure on every rank when one failed.
void agree_on_run(const distributed::MpiWorld& world, const std::string& what,
                  const std::string& device) {
  const std::vector<std::string> failed = world.all_gather(what);
  const std::vector<std::string> failed_devices = world.all_gather(device);
  for (size_t r = 0; r < failed.size(); ++r) {
    if (failed[r].empty()) continue;
    const size_t named =
        static_cast<size_t>(std::find_if(failed_devices.begin(), failed_devices.end(),
                                         [](const std::string& d) { return !d.empty(); }) -
                            failed_devices.begin());
    // A rank's own failure names it already; the others say they stopped for it.
    throw DeviceFailure(
        -1, named < failed_devices.size() ? failed_devices[named] : "",
        what.empty() ? world.describe(world.rank()) + ": stopped: " + failed[r] : what);
  }
}

// Ranks that mpirun left on the same cores of one machine each narrow themselves to a share of
// them before their CPU devices pin to cores (distributed/core_sharing.h): else every rank's
// first device pins to the same first core and the ranks take turns instead of overlapping.
void take_share_of_cores(const distributed::MpiWorld& world, const Cluster& mine) {
  distributed::RankCores own{world.processor_names()[world.rank()], affinity_cores(), 0};
  for (const DeviceSpec& device : mine.devices) {
    if (device.backend != BackendKind::kCpu) continue;
    own.claimed += device.cores > 0 ? device.cores : static_cast<int>(own.cores.size());
  }
  nlohmann::json text{{"machine", own.machine}, {"cores", own.cores}, {"claimed", own.claimed}};
  std::vector<distributed::RankCores> ranks;
  for (const std::string& other : world.all_gather(text.dump())) {
    const nlohmann::json figures = nlohmann::json::parse(other);
    ranks.push_back({figures["machine"].get<std::string>(),
                     figures["cores"].get<std::vector<int>>(), figures["claimed"].get<int>()});
  }
  const std::vector<int> share = distributed::share_of_cores(ranks, world.rank());
  if (share != own.cores) restrict_affinity(share);
}

// This rank's devices of the cluster, null for the other ranks'; when one rank cannot start its
// devices, every rank throws InputError naming it.
std::vector<std::unique_ptr<Device>> start_rank_devices(const distributed::MpiWorld& world,
                                                        const Cluster& cluster,
                                                        const std::vector<int>& rank_of_device) {
  Cluster mine = cluster;
  mine.devices.clear();
  std::vector<int> positions;
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    if (rank_of_device[d] != world.rank()) continue;
    mine.devices.push_back(cluster.devices[d]);
    positions.push_back(static_cast<int>(d));
  }
  std::vector<std::unique_ptr<Device>> devices(cluster.devices.size());
  std::string error;
  try {
    take_share_of_cores(world, mine);
    std::vector<std::unique_ptr<Device>> made = make_devices(mine, false);
    for (size_t k = 0; k < made.size(); ++k) devices[positions[k]] = std::move(made[k]);
  } catch (const std::exception& failure) {
    error = message_of(failure);
  }
  agree(world, error, "cannot start its devices");
  return devices;
}

// What each rank measured, as it travels to rank 0: per device of its own, the busy time of
// every timed run; per timed run, the seconds and bytes received from each rank.
struct RankFigures {
  std::map<int, std::vector<double>> busy;
  std::vector<std::vector<double>> seconds_from_rank, bytes_from_rank;  // [run][rank]
  int segments_run = 0, transfers_run = 0;
};

std::string rank_figures_text(const RankFigures& figures) {
  nlohmann::json busy = nlohmann::json::object();
  for (const auto& [device, seconds] : figures.busy) busy[std::to_string(device)] = seconds;
  return nlohmann::json{{"busy", busy},
                        {"seconds_from_rank", figures.seconds_from_rank},
                        {"bytes_from_rank", figures.bytes_from_rank},
                        {"segments_run", figures.segments_run},
                        {"transfers_run", figures.transfers_run}}
      .dump();
}

RankFigures rank_figures_from_text(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text);
  RankFigures figures;
  for (const auto& [device, seconds] : json.at("busy").items())
    figures.busy[std::stoi(device)] = seconds.get<std::vector<double>>();
  figures.seconds_from_rank = json.at("seconds_from_rank").get<std::vector<std::vector<double>>>();
  figures.bytes_from_rank = json.at("bytes_from_rank").get<std::vector<std::vector<double>>>();
  figures.segments_run = json.at("segments_run").get<int>();
  figures.transfers_run = json.at("transfers_run").get<int>();
  return figures;
}

// Per ordered pair of hosts: measured network time (median over runs of the run's sum) and
// bytes, beside the planner's transfers between devices of those hosts.
std::vector<ClusterRunFigures::HostLink> host_links(const std::vector<RankFigures>& ranks,
                                                    const distributed::RankMap& map,
                                                    const Cluster& cluster, const Plan& plan) {
  std::map<std::pair<int, int>, ClusterRunFigures::HostLink> links;  // by (from, to) rank
  const auto link = [&](int from, int to) -> ClusterRunFigures::HostLink& {
    ClusterRunFigures::HostLink& entry = links[{from, to}];
    entry.from = cluster.hosts[map.host_of_rank[from]].id;
    entry.to = cluster.hosts[map.host_of_rank[to]].id;
    return entry;
  };
  for (size_t to = 0; to < ranks.size(); ++to) {
    const RankFigures& figures = ranks[to];
    if (figures.seconds_from_rank.empty()) continue;
    for (size_t from = 0; from < figures.seconds_from_rank.front().size(); ++from) {
      std::vector<double> seconds;
      for (const auto& run : figures.seconds_from_rank) seconds.push_back(run[from]);
      const double bytes = figures.bytes_from_rank.back()[from];
      if (bytes == 0) continue;
      ClusterRunFigures::HostLink& entry = link(static_cast<int>(from), static_cast<int>(to));
      entry.measured_seconds = median(seconds);
      entry.bytes = bytes;
    }
  }
  for (const Transfer& transfer : plan.transfers) {
    const int from = map.rank_of_device[transfer.from_device];
    const int to = map.rank_of_device[transfer.to_device];
    if (from != to) link(from, to).predicted_seconds += transfer.seconds;
  }
  std::vector<ClusterRunFigures::HostLink> result;
  for (const auto& [ranks_pair, entry] : links) result.push_back(entry);
  return result;
}

}  // namespace

std::optional<RunReport> run_on_ranks(RankWorld& ranks, const RunOptions& options,
                                      const RunSchedule& schedule, const ImportedModel& model,
                                      const std::map<std::string, Tensor>& input_files,
                                      const std::vector<Tensor>& inputs) {
  const distributed::MpiWorld& world = ranks.world;
  const bool root = world.rank() == 0;
  const Graph& graph = model.graph;
  const Cluster cluster = load_cluster(options.cluster);
  const CostModel cost(cluster);
  const distributed::RankMap map = distributed::map_ranks(cost.cluster(), world.processor_names(),
                                                          options.rank_hosts, options.cluster);

  // This rank's devices only; every rank starts its own (or all stop, naming it) before work.
  const std::vector<std::unique_ptr<Device>> devices =
      start_rank_devices(world, cost.cluster(), map.rank_of_device);
  std::vector<int> positions;  // this rank's devices, by plan index
  for (size_t d = 0; d < devices.size(); ++d)
    if (devices[d]) positions.push_back(static_cast<int>(d));

  const BatchSplit split = batch_split_of(options, input_files, model, options.fuse);
  PlanOptions plan_options;
  plan_options.batch = split.batch;
  plan_options.batch_unsplittable = split.refusal;
  plan_options.microbatches = options.microbatches;
  const PlanningProblem problem(graph, cost.cluster(), cost, plan_options);
  // Rank 0 plans; the others run the plan it sends. Then every rank prepares its segments and
  // rank 0 runs the schedule, telling the others before each run whether it is timed.
  const bool record_ops = !options.trace.empty() || !options.report.empty() || options.profile;
  Plan plan;
  std::unique_ptr<distributed::MpiTransport> transport;
  std::unique_ptr<PlanExecutor> executor;
  double prepare_seconds = 0;
  std::vector<double> offsets;
  RankFigures figures;
  TimedRuns runs;
  std::vector<Tensor> outputs;
  const auto attempt = [&](const PlanningProblem& planned, const std::string& strategy) {
    executor.reset();  // a failed attempt's; its transport goes with it
    transport.reset();
    figures = RankFigures{};
    std::string plan_text, error;
    if (root) {
      try {
        plan = make_plan(options, planned, strategy);
        if (options.verbose) say_plan(plan, planned);
        plan_text = plan_json(plan, planned, PlanProvenance{}).dump();
      } catch (const std::exception& failure) {
        error = message_of(failure);
      }
    }
    agree(world, error, "cannot plan");
    plan_text = world.broadcast(plan_text);
    error.clear();
    const auto start = std::chrono::steady_clock::now();
    try {
      if (!root) plan = plan_from_json(nlohmann::json::parse(plan_text), planned, "rank 0's plan");
      transport = std::make_unique<distributed::MpiTransport>(world);
      PlanExecutor::Options executor_options;
      executor_options.faults = faults_from_environment();
      executor_options.transport = transport.get();
      executor_options.device_rank = map.rank_of_device;
      std::vector<Device*> pointers;
      for (const auto& device : devices) pointers.push_back(device.get());
      executor = std::make_unique<PlanExecutor>(graph, plan, pointers, split, executor_options);
    } catch (const std::exception& failure) {
      error = message_of(failure);
    }
    agree(world, error, "cannot prepare its segments");
    prepare_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    offsets = world.clock_offsets();
    bool recording = false;
    const auto run_once = [&](bool timed) {
      if (timed && !recording) {
        executor->set_recording({.every_run = true, .ops = record_ops});
        recording = true;
      }
      std::string what, device;
      try {
        outputs = executor->run(root ? std::span<const Tensor>(inputs) : std::span<const Tensor>());
      } catch (const DeviceFailure& failure) {
        what = failure.what();
        device = failure.device_name();
      }
      agree_on_run(world, what, device);
      const PlanExecutor::RunStats& stats = executor->stats();
      if (timed) {
        for (int d : positions) figures.busy[d].push_back(stats.busy_seconds[d]);
        figures.seconds_from_rank.push_back(stats.seconds_from_rank);
        figures.bytes_from_rank.push_back(stats.bytes_from_rank);
      }
      return stats.seconds;
    };
    if (root) {
      runs = time_runs(schedule, [&](bool timed) {
        world.broadcast(timed ? "timed" : "warm-up");
        return run_once(timed);
      });
      world.broadcast("done");
    } else {
      for (std::string next = world.broadcast(""); next != "done"; next = world.broadcast(""))
        run_once(next == "timed");
    }
  };
  const PlanningProblem* planned = &problem;
  std::optional<PlanningProblem> replanned;
  std::string failed_over;  // the device a failover left behind
  try {
    attempt(problem, options.strategy);
  } catch (const DeviceFailure& failure) {
    if (!options.failover || failure.device_name().empty()) throw;
    // Every rank knows which device failed: re-plan with `auto` onto the others, from the start.
    PlanOptions remaining = plan_options;
    remaining.excluded.push_back(failure.device_name());
    if (root)
      std::fprintf(stderr, "tandem: %s failed (%s); failing over: re-planning onto the others\n",
                   failure.device_name().c_str(), failure.what());
    replanned.emplace(graph, cost.cluster(), cost, remaining);
    planned = &*replanned;
    attempt(*replanned, "auto");
    failed_over = failure.device_name();
  }
  figures.segments_run = executor->stats().segments_run;
  figures.transfers_run = executor->stats().transfers;

  // Rank 0 gathers what each rank measured and merges the timelines onto its clock.
  const double origin =
      std::chrono::duration<double>(executor->timeline_origin().time_since_epoch()).count();
  const std::vector<std::string> timelines =
      world.gather(distributed::rank_timeline_text({executor->timeline(), origin}));
  const std::vector<std::string> figure_texts = world.gather(rank_figures_text(figures));
  if (!root) return std::nullopt;

  std::vector<RankFigures> all;
  std::vector<distributed::RankTimeline> rank_timelines;
  for (size_t r = 0; r < figure_texts.size(); ++r) {
    all.push_back(rank_figures_from_text(figure_texts[r]));
    rank_timelines.push_back(distributed::rank_timeline_from_text(timelines[r]));
  }
  std::vector<std::string> ids;
  for (const DeviceSpec& device : cost.cluster().devices) ids.push_back(device.id);
  ClusterRun run;
  run.plan = plan;
  run.outputs = outputs;
  run.runs = runs;
  run.prepare_seconds = prepare_seconds;
  run.busy_seconds.resize(ids.size());
  for (const RankFigures& rank : all) {
    for (const auto& [device, seconds] : rank.busy) run.busy_seconds[device] = seconds;
    run.stats.segments_run += rank.segments_run;
    run.stats.transfers += rank.transfers_run;
  }
  run.timeline =
      distributed::merge_rank_timelines(rank_timelines, offsets, map.rank_of_device, ids);
  run.speed_checks = check_speeds(run.plan, *planned, devices);
  write_report(options, run, *planned, model, split, {});
  if (!options.trace.empty()) {
    run.timeline.source =
        "measured on " + std::to_string(world.size()) + " ranks (" + options.cluster + ")";
    write_chrome_trace(options.trace, run.timeline);
  }
  RunReport report = cluster_report(options, run, *planned, devices, failed_over);
  report.cluster->ranks = world.size();
  report.cluster->rank_mapping = map.how;
  report.cluster->host_links = host_links(all, map, cost.cluster(), plan);
  return report;
}
RankRuns::RankRuns(RankWorld& ranks, const Cluster& cluster,
                   const std::vector<std::string>& rank_hosts, const std::string& cluster_path)
    : ranks_(ranks) {
  rank_of_device_ =
      distributed::map_ranks(cluster, ranks.world.processor_names(), rank_hosts, cluster_path)
          .rank_of_device;
}

RankRuns::~RankRuns() = default;

int RankRuns::rank() const { return ranks_.world.rank(); }

std::vector<std::unique_ptr<Device>> RankRuns::start_devices(const Cluster& cluster) {
  return start_rank_devices(ranks_.world, cluster, rank_of_device_);
}

std::string RankRuns::broadcast(const std::string& text) { return ranks_.world.broadcast(text); }

void RankRuns::agree(const std::string& error, const std::string& step) {
  cli::agree(ranks_.world, error, step);
}

PlanExecutorOptions RankRuns::executor_options() {
  transports_.push_back(std::make_unique<distributed::MpiTransport>(ranks_.world));
  PlanExecutorOptions options;
  options.faults = faults_from_environment();
  options.transport = transports_.back().get();
  options.device_rank = rank_of_device_;
  return options;
}

std::vector<Tensor> RankRuns::run_here(PlanExecutor& executor, std::span<const Tensor> inputs) {
  std::string what, device;
  std::vector<Tensor> outputs;
  try {
    outputs = executor.run(inputs);
  } catch (const DeviceFailure& failure) {
    what = failure.what();
    device = failure.device_name();
  }
  agree_on_run(ranks_.world, what, device);
  return outputs;
}

std::vector<Tensor> RankRuns::run(PlanExecutor& executor, std::span<const Tensor> inputs) {
  ranks_.world.broadcast("run");
  return run_here(executor, inputs);
}

void RankRuns::serve(PlanExecutor& executor) {
  while (ranks_.world.broadcast("") == "run") run_here(executor, {});
}

void RankRuns::stop() { ranks_.world.broadcast("stop"); }

#else
struct RankWorld {};

RankRuns::RankRuns(RankWorld& ranks, const Cluster&, const std::vector<std::string>&,
                   const std::string&)
    : ranks_(ranks) {
  throw InputError("mpirun", "this build of Tandem has no MPI");
}
RankRuns::~RankRuns() = default;
int RankRuns::rank() const { return 0; }
std::vector<std::unique_ptr<Device>> RankRuns::start_devices(const Cluster&) { return {}; }
std::string RankRuns::broadcast(const std::string& text) { return text; }
void RankRuns::agree(const std::string&, const std::string&) {}
PlanExecutorOptions RankRuns::executor_options() { return {}; }
std::vector<Tensor> RankRuns::run(PlanExecutor& executor, std::span<const Tensor> inputs) {
  return executor.run(inputs);
}
void RankRuns::serve(PlanExecutor&) {}
void RankRuns::stop() {}

std::shared_ptr<RankWorld> join_ranks_if_launched() {
  if (distributed::launched_by_mpi())
    throw InputError("mpirun",
                     "this build of Tandem has no MPI (CMake found no Open MPI: "
                     "scripts/setup.sh installs it)");
  return nullptr;
}

std::optional<RunReport> run_on_ranks(RankWorld&, const RunOptions&, const RunSchedule&,
                                      const ImportedModel&, const std::map<std::string, Tensor>&,
                                      const std::vector<Tensor>&) {
  throw InputError("mpirun", "this build of Tandem has no MPI");
}
#endif

}  // namespace tandem::cli
