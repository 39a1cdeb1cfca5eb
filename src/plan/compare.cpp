#include "plan/compare.h"

#include <chrono>
#include <string_view>

#include "backends/registry.h"
#include "devices/units.h"
#include "ir/error.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

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

}  // namespace

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

std::vector<StrategyResult> compare_strategies(const PlanningProblem& problem,
                                               const std::string& strategy,
                                               const std::string& subject,
                                               const PlanningProgress& progress) {
  const std::unique_ptr<Strategy> chosen = make_strategy(strategy, problem.cluster());
  std::vector<std::unique_ptr<Strategy>> baselines = baseline_strategies(problem);
  const std::string chosen_name = chosen->name();
  std::vector<const Strategy*> to_run;
  for (const auto& baseline : baselines) {
    if (baseline->name() != chosen_name) to_run.push_back(baseline.get());
  }
  to_run.push_back(chosen.get());
  std::vector<StrategyResult> results;
  for (size_t i = 0; i < to_run.size(); ++i) {
    if (progress) progress(to_run[i]->name(), i, to_run.size());
    results.push_back(run_strategy(*to_run[i], problem));
  }
  const StrategyResult& asked = results.back();
  if (!asked.plan) {
    bool any = false;
    for (const StrategyResult& other : results) any |= other.plan.has_value();
    if (!any) throw InputError(subject, infeasible_reason(problem));
    throw InputError("--strategy " + strategy, "found no plan (" + asked.why_not +
                                                   "); other strategies did: see --strategy auto");
  }
  return results;
}

}  // namespace tandem
