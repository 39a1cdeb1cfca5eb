#include "plan/whole_machine.h"

#include <cmath>

#include "ir/error.h"
#include "plan/evaluate.h"
#include "plan/strategy.h"

namespace tandem {
namespace {

std::string merged_names(const WholeMachineView& view) {
  std::string names;
  for (const std::string& merged : view.merged) names += (names.empty() ? "" : ", ") + merged;
  return names;
}

// Why the options rule the view out: they pin ops to, or exclude, a device it merges.
std::string options_refusal(const PlanOptions& options, const Cluster& view) {
  const auto merged = [&](const std::string& id) { return view.device_index(id) < 0; };
  for (const Pin& pin : options.pins) {
    if (merged(pin.device)) return "ops are pinned to " + pin.device;
  }
  for (const std::string& id : options.excluded) {
    if (merged(id)) return id + " is excluded";
  }
  return "";
}

// Auto's plan on the view, with the same graph and options as `given`; nullopt where the view
// cannot be planned, `why_not` saying why (no view, options that pin ops to or exclude a device
// it merges, an op none of it runs, no plan that fits).
std::optional<WholeMachinePlan> plan_whole_machine(const PlanningProblem& given,
                                                   const WholeMachineView& view,
                                                   std::string& why_not) {
  if (!view.cluster) {
    why_not = view.why_not;
    return std::nullopt;
  }
  if (std::string why = options_refusal(given.options(), *view.cluster); !why.empty()) {
    why_not = std::move(why);
    return std::nullopt;
  }
  PlannedCluster whole;
  try {
    whole.cost = std::make_unique<CostModel>(*view.cluster);
    whole.problem = std::make_unique<PlanningProblem>(*given.graph(), whole.cost->cluster(),
                                                      *whole.cost, given.options());
  } catch (const InputError& error) {  // a problem the view cannot pose (an op none of it runs)
    why_not = error.subject() + ": " + error.what();
    return std::nullopt;
  }
  std::optional<Plan> plan = make_strategy("auto", whole.cost->cluster())->plan(*whole.problem);
  // No plan there, or none that meets the objective (a cost's latency limit).
  if (!plan || objective_score(*whole.problem, *plan) >= kInfinity) {
    why_not = "no plan fits " + merged_names(view);
    return std::nullopt;
  }
  return WholeMachinePlan{std::move(whole), std::move(*plan)};
}

// "<objective> on the machine as one device, <merged devices>", for plans' reasons.
std::string whole_machine_text(const WholeMachinePlan& whole, const WholeMachineView& view) {
  return objective_text(*whole.planned.problem, whole.plan) + " on the machine as one device, " +
         merged_names(view);
}

}  // namespace

std::optional<PlannedCluster> compare_whole_machine(const PlanningProblem& given,
                                                    const WholeMachineView& view, Plan& plan,
                                                    std::optional<WholeMachinePlan>* beaten) {
  std::string why_not;
  std::optional<WholeMachinePlan> whole = plan_whole_machine(given, view, why_not);
  if (!whole) {
    if (!why_not.empty()) plan.reason += "; the machine as one device not compared: " + why_not;
    return std::nullopt;
  }
  const std::string whole_text = whole_machine_text(*whole, view);
  const double given_score = objective_score(given, plan);
  const double whole_score = objective_score(*whole->planned.problem, whole->plan);
  const double margin =
      std::max(given.split_margin(plan), whole->planned.problem->split_margin(whole->plan));
  if (given_score * (1 + margin) < whole_score) {
    plan.reason += "; against " + whole_text;
    if (beaten) *beaten = std::move(whole);
    return std::nullopt;
  }
  const bool within_margin = given_score < whole_score;
  whole->plan.reason =
      "predicted " + whole_text + ", against " + objective_text(given, plan) + " (" +
      (plan.chosen.empty() ? plan.strategy : plan.chosen) + " on the devices as given" +
      (within_margin ? ", better by less than the " + margin_text(given.options(), margin) : "") +
      "); " + whole->plan.reason;
  plan = std::move(whole->plan);
  return std::move(whole->planned);
}

bool names_whole_machine(const std::string& strategy, const Cluster& given,
                         const WholeMachineView& view) {
  constexpr std::string_view kSingle = "single:";
  if (!view.cluster || !strategy.starts_with(kSingle)) return false;
  const std::string id = strategy.substr(kSingle.size());
  return given.device_index(id) < 0 && view.cluster->device_index(id) >= 0;
}

}  // namespace tandem
