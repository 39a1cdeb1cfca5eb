// `tandem compare`: one model planned on each of several clusters, as `tandem plan` plans it,
// and the simulated best plans side by side.
#include "plan/compare.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <optional>

#include "cli/commands.h"
#include "ir/error.h"
#include "plan/strategy.h"
#include "plan/whole_machine.h"
#include "report/compare_report.h"
#include "runtime/constant_folding.h"
#include "sim/simulator.h"

namespace tandem::cli {
namespace {

// The best plan on one cluster with the simulator's figures; without one, the reason `tandem
// plan` would give (the cluster named, as the column is).
CompareColumn plan_on(const std::string& cluster_file, const CostModel& cost, const Graph& graph,
                      const PlanOptions& plan_options, const std::string& strategy,
                      const PlanningProgress& progress, std::string& batch_refusal) {
  CompareColumn column;
  column.cluster = cluster_file;
  try {
    const PlanningProblem given(graph, cost.cluster(), cost, plan_options);
    batch_refusal = given.batch_refusal();
    column.plan = *compare_strategies(given, strategy, cluster_file, progress).back().plan;
    // As `tandem plan` plans: auto's plan against the machine as one device.
    std::optional<PlannedCluster> whole;
    if (strategy == "auto")
      whole = compare_whole_machine(given, whole_machine_view(cost.cluster()), column.plan);
    const PlanningProblem& problem = whole ? *whole->problem : given;
    column.whole_machine = whole.has_value();
    column.bounds = problem.bounds();
    if (problem.best_single_device() >= 0)
      column.best_single_device = problem.cluster().devices[problem.best_single_device()].id;
    const SimulationResult simulated = simulate(problem, column.plan);
    column.latency_seconds = simulated.latency_seconds;
    column.throughput_samples_per_second = simulated.throughput_samples_per_second;
    if (simulated.overflow) column.out_of_memory = simulated.overflow->device;
    for (const DeviceActivity& device : simulated.devices)
      column.devices.push_back(
          {device.id, device.busy_seconds, device.peak_memory_bytes, device.capacity_bytes});
  } catch (const InputError& error) {
    const bool names_cluster = error.subject().empty() || error.subject() == cluster_file;
    column.why_not = names_cluster ? error.what() : error.subject() + ": " + error.what();
  }
  return column;
}

}  // namespace

int compare_command(const CompareOptions& options) {
  if (options.clusters.size() < 2)
    throw InputError("--cluster",
                     "compare needs two or more cluster files (--cluster A.yaml "
                     "--cluster B.yaml), the first the baseline");
  // Every file is read before any planning, so that a bad one costs no waiting.
  std::deque<CostModel> costs;  // not movable: it holds a mutex
  for (const std::string& file : options.clusters) costs.emplace_back(load_cluster(file));
  // A strategy no cluster has is refused before any work; one only some lack (single:gpu3) is
  // the reason in their columns.
  std::optional<InputError> unknown_strategy;
  for (const CostModel& cost : costs) {
    try {
      make_strategy(options.strategy, cost.cluster());
      unknown_strategy.reset();
      break;
    } catch (const InputError& error) {
      unknown_strategy = error;
    }
  }
  if (unknown_strategy) throw *unknown_strategy;
  const std::map<std::string, Tensor> input_files = read_input_files(options);
  ImportedModel model = load_model(options, input_files);
  if (options.fuse) prepare_for_inference(model.graph);
  const BatchSplit split = batch_split_of(options, input_files, model, options.fuse);

  CompareReport report;
  report.model = model.path;
  report.strategy = options.strategy;
  report.objective = objective_named(options.objective).value();  // main.cpp checked the name
  report.batch = split.batch;
  report.microbatches = options.microbatches;
  report.fused = options.fuse;
  PlanOptions plan_options;
  plan_options.objective = report.objective;
  plan_options.microbatches = options.microbatches;
  plan_options.batch = split.batch;
  plan_options.batch_unsplittable = split.refusal;

  // Progress once the comparison has taken a second, on a terminal only.
  const bool interactive = isatty(fileno(stderr));
  const auto started = std::chrono::steady_clock::now();
  bool progress_shown = false;
  std::string batch_refusal;
  for (size_t c = 0; c < costs.size(); ++c) {
    const std::string& file = options.clusters[c];
    const auto progress = [&](const std::string& strategy, size_t, size_t) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
      if (!interactive || elapsed.count() <= 1) return;
      std::fprintf(stderr, "\rplanning on cluster %zu of %zu: %-24s %.1f s", c + 1, costs.size(),
                   strategy.c_str(), elapsed.count());
      progress_shown = true;
    };
    report.columns.push_back(plan_on(file, costs[c], model.graph, plan_options, options.strategy,
                                     progress, batch_refusal));
  }
  if (progress_shown) std::fprintf(stderr, "\n");
  if (options.microbatches > 1 && !batch_refusal.empty() && !options.json)
    std::fprintf(stderr, "note: 1 micro-batch, not %d: the batch cannot be split (%s)\n",
                 options.microbatches, batch_refusal.c_str());
  bool any_plan = false;
  for (const CompareColumn& column : report.columns) any_plan |= column.feasible();
  if (!any_plan) throw InputError(report.columns.front().cluster, report.columns.front().why_not);

  if (options.json)
    std::printf("%s\n", compare_report_json(report).dump(2).c_str());
  else
    std::printf("%s", render_compare_report(report).c_str());
  return kExitOk;
}

}  // namespace tandem::cli
