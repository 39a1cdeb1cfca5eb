#pragma once
// The whole machine as one device: where a host's CPU devices share its cores
// (whole_machine_view, devices/cluster.h), `auto` plans on that view as well and keeps the
// better plan, so that a split across a machine's cores is chosen only where it is predicted to
// beat the machine run as one device.
#include <memory>
#include <optional>
#include <string>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "plan/problem.h"

namespace tandem {

// A cluster to plan on: its cost model and the planning problem on it.
struct PlannedCluster {
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<PlanningProblem> problem;
};

// Auto's plan on the cluster's whole-machine view, and the view's cost model and problem it was
// made on.
struct WholeMachinePlan {
  PlannedCluster planned;
  Plan plan;
};

// After `auto` made `plan` for `given`: plans `auto` on the cluster's whole-machine view with the
// same graph and options, and compares the two on the objective. Unless `plan` is better by more
// than PlanOptions::split_margin, returns the view's problem and
// replaces `plan` with its plan; else returns nullopt and `plan` stands. Either way the plan's
// reason says what it was compared with, or why the view was not compared (its hosts cannot merge,
// ops are pinned to or exclude a device it merges). Where `plan` stands against a plan on the
// view, that plan goes to `beaten` (tandem run tries the two).
std::optional<PlannedCluster> compare_whole_machine(
    const PlanningProblem& given, const WholeMachineView& view, Plan& plan,
    std::optional<WholeMachinePlan>* beaten = nullptr);

// Whether `strategy` is `single:<id>` for a device of the view that the cluster as given lacks:
// a plan on the machine as one device, asked for by name.
bool names_whole_machine(const std::string& strategy, const Cluster& given,
                         const WholeMachineView& view);

}  // namespace tandem
