#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "plan/plan.h"
#include "plan/problem.h"

namespace tandem {

// The plan file (docs/PLAN_FORMAT.md): versioned JSON naming nodes, values, devices and links by
// their names in the model and the cluster, so that a plan can be checked against both.
nlohmann::json plan_json(const Plan& plan, const PlanningProblem& problem);
void write_plan(const std::string& path, const Plan& plan, const PlanningProblem& problem);

// Reads a plan for this problem's graph and cluster; throws InputError naming the file and the
// field when the file is not a plan of this version, or does not match the model or cluster.
Plan plan_from_json(const nlohmann::json& json, const PlanningProblem& problem,
                    const std::string& file);
Plan read_plan(const std::string& path, const PlanningProblem& problem);
// A plan file's JSON document; InputError naming the file when it is missing or not JSON.
nlohmann::json read_plan_document(const std::string& path);

}  // namespace tandem
