// ONNX Runtime's partitioning: each node to the first device of a priority list that can run
// it, with no costs. A baseline for the cost-based strategies to beat.
#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

class GreedyStrategy : public Strategy {
 public:
  explicit GreedyStrategy(std::vector<int> priority) : priority_(std::move(priority)) {}

  std::string name() const override { return "greedy"; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    // Falls down the list when a device's weights would overflow it (ONNX Runtime would fail
    // at load time instead); the exact check with activations comes at the end.
    std::vector<double> weights(problem.device_count(), 0);
    Plan plan;
    plan.strategy = "greedy";
    plan.device_of_node.assign(problem.node_count(), -1);
    for (int n = 0; n < problem.node_count(); ++n) {
      for (int d : priority_) {
        if (d < 0 || d >= problem.device_count() || !problem.runnable(n, d)) continue;
        if (weights[d] + problem.weight_bytes(n) > problem.memory_capacity(d)) continue;
        weights[d] += problem.weight_bytes(n);
        plan.device_of_node[n] = d;
        break;
      }
      if (plan.device_of_node[n] < 0) return std::nullopt;
    }
    if (!check_memory(problem, plan).fits) return std::nullopt;
    evaluate_plan(problem, plan);
    return plan;
  }

 private:
  std::vector<int> priority_;
};

}  // namespace

std::unique_ptr<Strategy> make_greedy_strategy(std::vector<int> priority) {
  return std::make_unique<GreedyStrategy>(std::move(priority));
}

}  // namespace tandem
