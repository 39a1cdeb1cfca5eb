// Data parallel: every qualifying device runs the whole graph on a share of the batch, the
// shares in proportion to speed (1 / the device's time for the whole batch) so that all finish
// together when time is linear in the batch; weights are replicated. A device qualifies when
// it runs every node; one whose share does not fit its memory is dropped and the shares redone.
// Shares are whole samples (largest remainders): a batch of one sample is not split.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

// Each used device's share of the batch in proportion to its speed, rounded to whole samples.
std::vector<double> whole_sample_shares(const PlanningProblem& problem,
                                        const std::vector<bool>& used, double total_speed) {
  const int devices = problem.device_count();
  const int64_t batch = std::max<int64_t>(problem.options().batch, 1);
  std::vector<int64_t> samples(devices, 0);
  std::vector<std::pair<double, int>> remainders;
  int64_t given = 0;
  for (int d = 0; d < devices; ++d) {
    if (!used[d]) continue;
    const double exact =
        static_cast<double>(batch) / problem.single_device_seconds(d) / total_speed;
    samples[d] = static_cast<int64_t>(std::floor(exact));
    given += samples[d];
    remainders.push_back({exact - static_cast<double>(samples[d]), d});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < batch && i < remainders.size(); ++i, ++given) {
    ++samples[remainders[i].second];
  }
  std::vector<double> shares(devices, 0);
  for (int d = 0; d < devices; ++d) {
    shares[d] = static_cast<double>(samples[d]) / static_cast<double>(batch);
  }
  return shares;
}

class DataParallelStrategy : public Strategy {
 public:
  std::string name() const override { return "data-parallel"; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    if (!problem.batch_splittable()) return std::nullopt;
    const int devices = problem.device_count();
    std::vector<bool> used(devices, false);
    for (int d = 0; d < devices; ++d) {
      used[d] = problem.allowed(d) && problem.single_device_seconds(d) < kInfinity;
    }
    Plan plan;
    plan.strategy = "data-parallel";
    plan.objective = problem.options().objective;
    plan.order.resize(problem.node_count());
    std::iota(plan.order.begin(), plan.order.end(), 0);
    while (std::count(used.begin(), used.end(), true) >= 2) {
      double speed = 0;
      for (int d = 0; d < devices; ++d) {
        if (used[d]) speed += 1 / problem.single_device_seconds(d);
      }
      plan.batch_share = whole_sample_shares(problem, used, speed);
      if (std::count_if(plan.batch_share.begin(), plan.batch_share.end(),
                        [](double share) { return share > 0; }) < 2) {
        return std::nullopt;
      }
      for (int d = 0; d < devices; ++d) used[d] = plan.batch_share[d] > 0;
      // Placement for the plan file and the segments: each device holds a whole replica; the
      // first device with a share stands for them.
      const int first = static_cast<int>(std::find(used.begin(), used.end(), true) - used.begin());
      plan.device_of_node.assign(problem.node_count(), first);
      const MemoryCheck memory = check_memory(problem, plan);
      if (memory.fits) {
        evaluate_plan(problem, plan);
        return plan;
      }
      used[memory.device] = false;
    }
    return std::nullopt;
  }
};

}  // namespace

std::string data_parallel_refusal(const PlanningProblem& problem) {
  if (!problem.batch_splittable()) return "the batch cannot be split: " + problem.batch_refusal();
  int whole = 0;
  for (int d = 0; d < problem.device_count(); ++d)
    whole += problem.allowed(d) && problem.single_device_seconds(d) < kInfinity;
  if (whole < 2)
    return "it needs two or more devices that each run the whole model; this cluster has " +
           std::to_string(whole);
  return "";
}

std::unique_ptr<Strategy> make_data_parallel_strategy() {
  return std::make_unique<DataParallelStrategy>();
}

}  // namespace tandem
