#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/problem.h"

namespace tandem {

// A way of placing and ordering a graph's nodes on a cluster's devices.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // A plan, or nullopt when the strategy does not apply (e.g. single:tpu0 for a graph the TPU
  // cannot run, or one that does not fit its memory). Plans come back evaluated
  // (evaluate_plan) and respecting memory, support and pins.
  virtual std::optional<Plan> plan(const PlanningProblem& problem) const = 0;
};

// "single:<device>", "greedy", "heft", "pipeline", "data-parallel", "auto".
// Throws InputError naming the strategy when it is unknown.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const Cluster& cluster);
// Every strategy that applies to a cluster: single:<d> per device, greedy, heft, pipeline,
// data-parallel.
std::vector<std::unique_ptr<Strategy>> baseline_strategies(const Cluster& cluster);
// Above this many devices, the single-device baselines are one per class of devices
// (PlanningProblem::device_class): the others would be the same plan on another id.
inline constexpr int kEverySingleDeviceUpTo = 64;
// The baselines for a problem (what auto and `tandem plan` run): as above, with one
// single:<device> per device class when the cluster has more than kEverySingleDeviceUpTo.
std::vector<std::unique_ptr<Strategy>> baseline_strategies(const PlanningProblem& problem);

}  // namespace tandem
