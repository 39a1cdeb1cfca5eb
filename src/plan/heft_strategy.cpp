// HEFT (Topcuoglu, Hariri and Wu, 2002): list scheduling for latency on heterogeneous devices.
// Nodes are taken by decreasing upward rank (mean time on the devices that can run it plus the
// longest path after it, transfers at their mean time); each goes to the device where it
// finishes first, possibly in an idle gap between nodes already there. Devices whose memory
// would overflow are skipped.
#include <algorithm>
#include <numeric>
#include <set>

#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

// Gaps looked at per device before a node goes at the end: insertion stays O(log N) per probe,
// so 100k nodes x 16 devices plan in well under a second.
constexpr int kGapsSearched = 16;
// Rounds of planning again with a device's memory reduced by its shortfall (the schedule counts
// weights as it goes; activations are known only once the plan is whole).
constexpr int kMemoryRounds = 6;

// Busy intervals of one device, by start.
using Slots = std::set<std::pair<double, double>>;

double earliest_start(const Slots& slots, double ready, double duration, double device_end) {
  if (ready >= device_end) return ready;
  auto next = slots.upper_bound({ready, kInfinity});
  double candidate = next == slots.begin() ? ready : std::max(ready, std::prev(next)->second);
  for (int gaps = 0; next != slots.end() && gaps < kGapsSearched; ++next, ++gaps) {
    if (candidate + duration <= next->first) return candidate;
    candidate = std::max(candidate, next->second);
  }
  return next == slots.end() ? candidate : device_end;
}

// Mean transfer time over ordered pairs of allowed devices: latency + bytes * inverse bandwidth.
struct MeanTransfer {
  double latency = 0, seconds_per_byte = 0;
  double operator()(double bytes) const { return latency + bytes * seconds_per_byte; }
};

// Up to this many allowed devices the mean is over every pair; beyond, over the pairs from
// kSampledSources of them spread evenly (each source costs one routing search).
constexpr int kEveryPairUpTo = 256;
constexpr int kSampledSources = 64;

MeanTransfer mean_transfer(const PlanningProblem& problem) {
  MeanTransfer mean;
  int pairs = 0;
  std::vector<int> allowed;
  for (int d = 0; d < problem.device_count(); ++d) {
    if (problem.allowed(d)) allowed.push_back(d);
  }
  std::vector<bool> source(problem.device_count(), true);
  if (allowed.size() > static_cast<size_t>(kEveryPairUpTo)) {
    source.assign(problem.device_count(), false);
    for (int k = 0; k < kSampledSources; ++k)
      source[allowed[k * allowed.size() / kSampledSources]] = true;
  }
  for (int from = 0; from < problem.device_count(); ++from) {
    if (!source[from]) continue;
    for (int to = 0; to < problem.device_count(); ++to) {
      if (from == to || !problem.allowed(from) || !problem.allowed(to)) continue;
      const double latency = problem.transfer_seconds(0, from, to);
      mean.latency += latency;
      mean.seconds_per_byte += problem.transfer_seconds(1, from, to) - latency;
      ++pairs;
    }
  }
  if (pairs > 0) mean.latency /= pairs, mean.seconds_per_byte /= pairs;
  return mean;
}

std::vector<int> by_upward_rank(const PlanningProblem& problem) {
  const int nodes = problem.node_count();
  const MeanTransfer transfer = mean_transfer(problem);
  std::vector<double> rank(nodes, 0);
  for (int n = nodes - 1; n >= 0; --n) {
    double total = 0;
    int runnable = 0;
    for (int d = 0; d < problem.device_count(); ++d) {
      if (problem.runnable(n, d)) total += problem.seconds(n, d), ++runnable;
    }
    double after = 0;
    for (const auto& [successor, bytes] : problem.successors(n))
      after = std::max(after, transfer(bytes) + rank[successor]);
    rank[n] = total / std::max(runnable, 1) + after;
  }
  std::vector<int> order(nodes);
  std::iota(order.begin(), order.end(), 0);
  // Ties by index keep the order topological (a predecessor never ranks below its successor).
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rank[a] > rank[b]; });
  return order;
}

std::optional<Plan> schedule(const PlanningProblem& problem, const std::vector<int>& by_rank,
                             const std::vector<double>& reserved) {
  const int devices = problem.device_count();
  const auto kept = [&](int n) { return problem.weight_bytes(n) + problem.final_output_bytes(n); };
  std::vector<Slots> slots(devices);
  // Bytes held to the end on each device: weights and graph outputs.
  std::vector<double> device_end(devices, 0), held(devices, 0);
  std::vector<double> start(problem.node_count(), 0), finish(problem.node_count(), 0);
  Plan plan;
  plan.strategy = "heft";
  plan.device_of_node.assign(problem.node_count(), -1);
  for (int n : by_rank) {
    int best = -1;
    double best_start = 0, best_finish = kInfinity;
    for (int d = 0; d < devices; ++d) {
      if (!problem.runnable(n, d)) continue;
      if (held[d] + kept(n) > problem.memory_capacity(d) - reserved[d]) continue;
      double ready = 0;
      for (const auto& [predecessor, bytes] : problem.predecessors(n)) {
        ready =
            std::max(ready, finish[predecessor] + problem.transfer_seconds(
                                                      bytes, plan.device_of_node[predecessor], d));
      }
      const double duration = problem.seconds(n, d);
      const double begin = earliest_start(slots[d], ready, duration, device_end[d]);
      if (begin + duration < best_finish)
        best = d, best_start = begin, best_finish = begin + duration;
    }
    if (best < 0) return std::nullopt;
    plan.device_of_node[n] = best;
    held[best] += kept(n);
    start[n] = best_start;
    finish[n] = best_finish;
    if (best_finish > best_start) slots[best].insert({best_start, best_finish});
    device_end[best] = std::max(device_end[best], best_finish);
  }
  // The evaluator runs each device's nodes in plan order: by start time, ties by index (a
  // zero-time predecessor starts when its successor does).
  plan.order.resize(problem.node_count());
  std::iota(plan.order.begin(), plan.order.end(), 0);
  std::sort(plan.order.begin(), plan.order.end(),
            [&](int a, int b) { return start[a] != start[b] ? start[a] < start[b] : a < b; });
  return plan;
}

class HeftStrategy : public Strategy {
 public:
  std::string name() const override { return "heft"; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    const std::vector<int> by_rank = by_upward_rank(problem);
    std::vector<double> reserved(problem.device_count(), 0);
    for (int round = 0; round < kMemoryRounds; ++round) {
      std::optional<Plan> plan = schedule(problem, by_rank, reserved);
      if (!plan) return std::nullopt;
      const std::vector<double> memory = memory_per_device(problem, *plan);
      bool fits = true;
      for (int d = 0; d < problem.device_count(); ++d) {
        const double short_bytes = memory[d] - problem.memory_capacity(d);
        if (short_bytes <= 0) continue;
        fits = false;
        reserved[d] += short_bytes * 1.1;  // a margin, so that rounds converge
      }
      if (fits) {
        evaluate_plan(problem, *plan);
        return plan;
      }
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_heft_strategy() { return std::make_unique<HeftStrategy>(); }

}  // namespace tandem
