#include "cli/run_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "cli/backends.h"
#include "cost/cost_model.h"
#include "ir/error.h"
#include "ir/fuse.h"
#include "plan/evaluate.h"
#include "plan/plan_json.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "report/table.h"
#include "report/timeline.h"
#include "runtime/plan_executor.h"
#include "util/compare.h"
#include "util/npy.h"

namespace tandem::cli {
namespace {

std::string percent_error(double measured, double predicted) {
  return predicted > 0 ? format("%+.1f%%", 100 * (measured - predicted) / predicted) : "-";
}

struct ClusterRun {
  Plan plan;
  std::vector<Tensor> outputs;
  std::vector<double> latencies;
  PlanExecutor::RunStats stats;  // of the last timed run
  Timeline timeline;
  double prepare_seconds = 0;  // segments extracted, kernels and programs compiled
};

std::string render_compile_stats(const ClusterRun& run, const std::vector<CompileStats>& stats) {
  std::string text = format("prepared in %s (segments extracted, kernels and programs compiled)\n",
                            seconds_text(run.prepare_seconds).c_str());
  for (const CompileStats& plugin : stats) {
    text += format(
        "  %s: %d program(s) compiled in %s, %d loaded from the disk cache in %s, %d "
        "reused in memory (cache: %s)\n",
        plugin.plugin.c_str(), plugin.compiles, seconds_text(plugin.compile_seconds).c_str(),
        plugin.disk_hits, seconds_text(plugin.load_seconds).c_str(), plugin.memory_hits,
        plugin.cache_directory.empty() ? "memory only" : plugin.cache_directory.c_str());
    text += format(
        "    program inputs, all runs: %d uploaded from the host, %d copied device to device, %d "
        "already on the device\n",
        plugin.uploaded, plugin.device_to_device, plugin.reused);
  }
  return text;
}

nlohmann::json cluster_run_json(const ClusterRun& run, const PlanningProblem& problem,
                                const std::vector<CompileStats>& stats) {
  nlohmann::json devices = nlohmann::json::array();
  for (int d = 0; d < problem.device_count(); ++d) {
    const auto& busy = run.stats.busy_seconds;
    const auto& predicted = run.plan.predicted.busy_seconds;
    devices.push_back(
        {{"id", problem.cluster().devices[d].id},
         {"busy_ms", d < static_cast<int>(busy.size()) ? busy[d] * 1e3 : 0.0},
         {"predicted_busy_ms", d < static_cast<int>(predicted.size()) ? predicted[d] * 1e3 : 0.0}});
  }
  std::vector<double> samples;
  for (double seconds : run.latencies) samples.push_back(seconds * 1e3);
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json compiled = nlohmann::json::array();
  for (const CompileStats& plugin : stats) {
    compiled.push_back({{"plugin", plugin.plugin},
                        {"cache_directory", plugin.cache_directory},
                        {"compiles", plugin.compiles},
                        {"disk_hits", plugin.disk_hits},
                        {"memory_hits", plugin.memory_hits},
                        {"compile_seconds", plugin.compile_seconds},
                        {"load_seconds", plugin.load_seconds},
                        {"inputs_uploaded", plugin.uploaded},
                        {"inputs_device_to_device", plugin.device_to_device},
                        {"inputs_on_device", plugin.reused}});
  }
  return {{"plan",
           {{"strategy", run.plan.strategy},
            {"segments", run.plan.segments.size()},
            {"transfers", run.plan.transfers.size()},
            {"microbatches", std::max(run.plan.microbatches, 1)}}},
          {"prepare_seconds", run.prepare_seconds},
          {"latency_ms",
           {{"median", sorted.empty() ? 0.0 : sorted[sorted.size() / 2]}, {"samples", samples}}},
          {"predicted_latency_ms", run.plan.predicted.latency_seconds * 1e3},
          {"devices", devices},
          {"compiled", compiled}};
}

ClusterRun run_plan(const RunOptions& options, const Graph& graph, const BatchSplit& split,
                    const Plan& plan, const std::vector<std::unique_ptr<Device>>& devices,
                    const std::vector<Tensor>& inputs) {
  std::vector<Device*> pointers;
  for (const auto& device : devices) pointers.push_back(device.get());
  PlanExecutor::Options executor_options;
  executor_options.faults = faults_from_environment();
  executor_options.on_worker_start = [&devices](int device) {
    devices[device]->bind_current_thread();
  };
  const auto start = std::chrono::steady_clock::now();
  PlanExecutor executor(graph, plan, pointers, split, executor_options);
  ClusterRun run;
  run.prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.plan = plan;
  for (int i = 0; i < options.warmup + options.iterations; ++i) {
    run.outputs = executor.run(inputs);
    if (i >= options.warmup) run.latencies.push_back(executor.stats().seconds);
  }
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

std::string render_summary(const ClusterRun& run, const PlanningProblem& problem) {
  const Plan& plan = run.plan;
  std::vector<double> sorted = run.latencies;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::string text =
      format("plan: %s, %zu segments, %zu transfers, %d micro-batch(es)\n", plan.strategy.c_str(),
             plan.segments.size(), plan.transfers.size(), std::max(plan.microbatches, 1));
  Table table({"", "measured", "predicted", "error"});
  for (int d = 0; d < problem.device_count(); ++d) {
    const double measured =
        d < static_cast<int>(run.stats.busy_seconds.size()) ? run.stats.busy_seconds[d] : 0;
    const double predicted = d < static_cast<int>(plan.predicted.busy_seconds.size())
                                 ? plan.predicted.busy_seconds[d]
                                 : 0;
    if (measured == 0 && predicted == 0) continue;
    table.add_row({problem.cluster().devices[d].id + " busy", format("%.3f ms", measured * 1e3),
                   format("%.3f ms", predicted * 1e3), percent_error(measured, predicted)});
  }
  table.add_separator();
  table.add_row({"latency (median)", format("%.3f ms", median * 1e3),
                 format("%.3f ms", plan.predicted.latency_seconds * 1e3),
                 percent_error(median, plan.predicted.latency_seconds)});
  text += table.render();
  std::string sources;
  for (const std::string& source : plan.figure_sources)
    sources += (sources.empty() ? "" : ", ") + source;
  text += format(
      "measured: %zu timed run(s) on this machine, %d segment runs and %d transfers "
      "in the last; predicted: the planner's evaluator (%s)\n",
      run.latencies.size(), run.stats.segments_run, run.stats.transfers,
      sources.empty() ? "cost model" : sources.c_str());
  return text;
}

}  // namespace

int run_on_cluster(const RunOptions& options, const ImportedModel& model,
                   const std::map<std::string, Tensor>& input_files,
                   const std::vector<Tensor>& inputs,
                   const std::map<std::string, Tensor>& expected) {
  const Graph& graph = model.graph;
  if (!options.plan.empty() && !options.strategy.empty())
    throw InputError("--plan and --strategy", "give one: a plan file, or a strategy to plan with");
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
  ClusterRun run;
  std::string failover_note;
  try {
    run = run_plan(options, graph, split, make_plan(options, problem, options.strategy), devices,
                   inputs);
  } catch (const DeviceFailure& failure) {
    if (!options.failover) {
      std::fprintf(stderr, "tandem: error: device failed: %s\n", failure.what());
      return kExitDeviceFailed;
    }
    // Re-plan with `auto` onto the devices left, and run that plan from the start.
    PlanOptions remaining = plan_options;
    remaining.excluded.push_back(failure.device_name());
    const PlanningProblem replanned(graph, cost.cluster(), cost, remaining);
    std::fprintf(stderr, "tandem: %s failed (%s); failing over: re-planning onto the others\n",
                 failure.device_name().c_str(), failure.what());
    run = run_plan(options, graph, split, make_plan(options, replanned, "auto"), devices, inputs);
    failover_note = "failover: " + failure.device_name() + " failed; re-planned with auto onto " +
                    "the remaining devices and finished\n";
  }
  if (!options.trace.empty()) {
    run.timeline.source = "measured on this machine (" + options.cluster + ")";
    write_chrome_trace(options.trace, run.timeline);
  }
  if (!options.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.output_dir, error);
    if (error) throw InputError(options.output_dir, "cannot create the folder: " + error.message());
  }
  const std::vector<CompileStats> stats = compile_stats(devices);
  std::string text = "model: " + model.path + "\ncluster: " + options.cluster + "\n" +
                     failover_note + render_summary(run, problem) +
                     render_compile_stats(run, stats);
  nlohmann::json json = cluster_run_json(run, problem, stats);
  json["model"] = model.path;
  json["cluster"] = options.cluster;
  json["checks"] = nlohmann::json::array();
  int status = kExitOk;
  for (size_t i = 0; i < run.outputs.size(); ++i) {
    const std::string& name = graph.values[graph.outputs[i]].name;
    text += "output " + name + ": " + shape_str(run.outputs[i].shape()) + "\n";
    if (!options.output_dir.empty()) {
      std::string file = name;
      for (char& c : file) {
        if (c == '/' || c == '\\' || c == ':' || c == ' ') c = '_';
      }
      write_npy((std::filesystem::path(options.output_dir) / (file + ".npy")).string(),
                run.outputs[i]);
    }
    auto reference = expected.find(name);
    if (reference == expected.end()) continue;
    const Comparison comparison = compare_tensors(run.outputs[i], reference->second);
    text += "  matches " + name + ": " + (comparison.matches ? "yes" : "NO") + "\n";
    json["checks"].push_back({{"output", name}, {"matches", comparison.matches}});
    if (!comparison.matches) status = kExitMismatch;
  }
  if (!options.trace.empty()) text += "trace written to " + options.trace + "\n";
  std::printf("%s", options.json ? (json.dump(2) + "\n").c_str() : text.c_str());
  return status;
}

}  // namespace tandem::cli
