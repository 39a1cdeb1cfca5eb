// Pipeline: contiguous stages of the topological order, one device each, micro-batches flowing
// through them. The stage boundaries for one order of devices are exact (PipelineSplitter);
// the order of devices is searched: every permutation when the cluster and graph are small
// enough (then the split is exact over all assignments of distinct devices to stages), else a
// hill climb over swaps from the fastest-first and the cluster's own orders (heuristic).
#include <algorithm>
#include <numeric>

#include "plan/evaluate.h"
#include "plan/pipeline_split.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

// Work limits, in feasibility sweeps times nodes times devices (one sweep costs about that).
constexpr double kExhaustiveWork = 4e8;
constexpr double kClimbWork = 6e7;
// When the evaluator's exact memory check refuses the split, retry with less of each device.
constexpr double kCapacityFactors[] = {1.0, 0.8, 0.6, 0.4};

std::vector<int> fastest_first(const PlanningProblem& problem, std::vector<int> devices) {
  // Devices that cannot run some nodes go last; among the rest, the faster first.
  auto key = [&](int d) {
    int unrunnable = 0;
    double seconds = 0;
    for (int n = 0; n < problem.node_count(); ++n) {
      if (problem.runnable(n, d)) {
        seconds += problem.seconds(n, d);
      } else {
        ++unrunnable;
      }
    }
    return std::make_pair(unrunnable, seconds);
  };
  std::vector<std::pair<std::pair<int, double>, int>> keyed;
  for (int d : devices) keyed.push_back({key(d), d});
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) devices[i] = keyed[i].second;
  return devices;
}

double factorial(int n) { return n <= 1 ? 1 : n * factorial(n - 1); }

class PipelineSearch {
 public:
  PipelineSearch(const PlanningProblem& problem, const PipelineSplitter& splitter)
      : problem_(problem), splitter_(splitter) {}

  std::optional<PipelineSplitter::Split> best() {
    std::vector<int> devices;
    for (int d = 0; d < problem_.device_count(); ++d) {
      if (problem_.allowed(d)) devices.push_back(d);
    }
    if (devices.empty()) return std::nullopt;
    const double sweep_work = static_cast<double>(problem_.node_count()) * devices.size();
    if (factorial(static_cast<int>(devices.size())) * sweep_work <= kExhaustiveWork) {
      std::sort(devices.begin(), devices.end());
      do {
        try_order(devices);
      } while (std::next_permutation(devices.begin(), devices.end()));
      return best_;
    }
    const std::vector<int> fastest = fastest_first(problem_, devices);
    try_order(fastest);
    try_order(devices);
    climb(sweep_work);
    return best_;
  }

 private:
  bool try_order(const std::vector<int>& order) {
    auto split = splitter_.split(order, best_ ? best_->bottleneck : kInfinity);
    if (!split) return false;
    best_ = std::move(split);
    best_order_ = order;
    return true;
  }

  // Swaps a used stage's device with any other, first improvement, until no swap improves or
  // the work limit is reached.
  void climb(double sweep_work) {
    if (!best_) return;
    const long long limit = splitter_.sweeps() + static_cast<long long>(kClimbWork / sweep_work);
    bool improved = true;
    while (improved && splitter_.sweeps() < limit) {
      improved = false;
      const size_t used = best_->devices.size();
      for (size_t i = 0; i < used && !improved && splitter_.sweeps() < limit; ++i) {
        for (size_t j = i + 1; j < best_order_.size() && splitter_.sweeps() < limit; ++j) {
          std::vector<int> order = best_order_;
          std::swap(order[i], order[j]);
          if (try_order(order)) {
            improved = true;
            break;
          }
        }
      }
    }
  }

  const PlanningProblem& problem_;
  const PipelineSplitter& splitter_;
  std::optional<PipelineSplitter::Split> best_;
  std::vector<int> best_order_;
};

Plan to_plan(const PlanningProblem& problem, const PipelineSplitter& splitter,
             const PipelineSplitter::Split& split) {
  Plan plan;
  plan.strategy = "pipeline";
  plan.objective = problem.options().objective;
  plan.microbatches = std::max(1, problem.options().microbatches);
  plan.order.resize(problem.node_count());
  std::iota(plan.order.begin(), plan.order.end(), 0);
  plan.device_of_node.resize(problem.node_count());
  int first = 0;
  for (size_t k = 0; k < split.devices.size(); ++k) {
    const int device = split.devices[k], end = split.ends[k];
    plan.stages.push_back({device, first, end - 1, splitter.stage_seconds(first, end, device)});
    std::fill(plan.device_of_node.begin() + first, plan.device_of_node.begin() + end, device);
    first = end;
  }
  evaluate_plan(problem, plan);
  return plan;
}

class PipelineStrategy : public Strategy {
 public:
  std::string name() const override { return "pipeline"; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    for (double factor : kCapacityFactors) {
      const PipelineSplitter splitter(problem, factor);
      const auto split = PipelineSearch(problem, splitter).best();
      if (!split) return std::nullopt;  // less capacity will not make it fit
      Plan plan = to_plan(problem, splitter, *split);
      if (check_memory(problem, plan).fits) return plan;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_pipeline_strategy() { return std::make_unique<PipelineStrategy>(); }

}  // namespace tandem
