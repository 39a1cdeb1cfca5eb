#pragma once
// Planning a model the way `tandem plan` and the Python package do: every baseline strategy and
// the one asked for, side by side, with why each that found nothing did not.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/problem.h"
#include "plan/strategy.h"

namespace tandem {

// One strategy's result for the side-by-side table.
struct StrategyResult {
  std::string strategy;
  std::optional<Plan> plan;
  std::string why_not;  // when there is no plan
  double planning_seconds = 0;
};

// Runs one strategy, timed; without a plan, says why (the single device's shortfall, the
// data-parallel refusal).
StrategyResult run_strategy(const Strategy& strategy, const PlanningProblem& problem);

// Called before each strategy runs: its name, its place (from 0) and how many there are.
using PlanningProgress =
    std::function<void(const std::string& strategy, size_t index, size_t count)>;

// Every baseline strategy of the cluster, then `strategy` (once, last, even when it is also a
// baseline), so that the last result is the one asked for. Throws InputError when the last found
// no plan: with the closest single device's shortfall when no strategy found one (`subject`
// names the model), else naming `--strategy <name>`.
std::vector<StrategyResult> compare_strategies(const PlanningProblem& problem,
                                               const std::string& strategy,
                                               const std::string& subject,
                                               const PlanningProgress& progress = {});

}  // namespace tandem
