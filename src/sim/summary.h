#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "plan/plan.h"
#include "plan/problem.h"
#include "report/html_report.h"
#include "sim/simulator.h"

namespace tandem {

// What `tandem simulate` prints: the predicted latency and throughput, then per device (busy,
// idle, utilisation, memory peak) and per link (bytes, busy), every figure labelled predicted
// with its source. With replicas, one row per device of the plan's cluster: busy and idle are
// the mean over replicas, the memory peak the largest; a replicated link's bytes are summed.
// A cluster of more than kEveryDeviceRowUpTo devices has one row per run of neighbouring
// devices whose figures read the same ("h0-gpu0 .. h63-gpu7 (512 devices)"); --json keeps every
// device.
inline constexpr size_t kEveryDeviceRowUpTo = 64;
std::string render_simulation(const SimulationResult& result, const Plan& plan,
                              const PlanningProblem& problem);
nlohmann::json simulation_json(const SimulationResult& result, const Plan& plan,
                               const PlanningProblem& problem);
// The HTML report's content for a simulation (no strategy comparison: `tandem plan` adds it).
HtmlReport simulation_html(const SimulationResult& result, const Plan& plan,
                           const PlanningProblem& problem, const std::string& title);

}  // namespace tandem
