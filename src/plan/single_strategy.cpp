// Everything on one device: the baseline every plan is compared with.
#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

class SingleStrategy : public Strategy {
 public:
  SingleStrategy(int device, std::string device_id)
      : device_(device),
        device_id_(device_id.empty() ? std::to_string(device) : std::move(device_id)) {}

  std::string name() const override { return "single:" + device_id_; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    if (device_ < 0 || device_ >= problem.device_count() ||
        problem.single_device_seconds(device_) == kInfinity)
      return std::nullopt;
    Plan plan;
    plan.strategy = "single:" + problem.cluster().devices[device_].id;
    plan.device_of_node.assign(problem.node_count(), device_);
    if (!check_memory(problem, plan).fits) return std::nullopt;
    evaluate_plan(problem, plan);
    return plan;
  }

 private:
  int device_;
  std::string device_id_;
};

}  // namespace

std::unique_ptr<Strategy> make_single_strategy(int device, std::string device_id) {
  return std::make_unique<SingleStrategy>(device, std::move(device_id));
}

}  // namespace tandem
