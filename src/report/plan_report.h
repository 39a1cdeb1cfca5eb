#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/compare.h"
#include "plan/plan.h"
#include "plan/plan_json.h"
#include "plan/problem.h"

namespace tandem {

// What `tandem plan` shows: the chosen plan per device and link, its figures against the bound
// and the best single device, and every strategy side by side.
struct PlanReport {
  std::string model;
  std::string cluster;
  std::string chosen_strategy;  // as asked (--strategy)
  PlanProvenance provenance;    // what the plan is made from, for the plan file
  Plan plan;
  std::vector<StrategyResult> strategies;
};

std::string render_plan_report(const PlanReport& report, const PlanningProblem& problem);
// The plan file's JSON (plan/plan_json.h) with "schema_version", "best_single_device" and the
// side-by-side "strategies" added (docs/JSON.md).
nlohmann::json plan_report_json(const PlanReport& report, const PlanningProblem& problem);

// The plan's figure for its objective, as text ("12.3 ms", "812 samples/s", "$0.41 per M").
std::string objective_figure(const Plan& plan);

}  // namespace tandem
