#include "plan/chain_placement.h"

#include <algorithm>
#include <cmath>

namespace tandem {
namespace {

// Above this many (node, device, device) steps, only the fastest devices take part.
constexpr double kWork = 1e8;
// Nor more devices than this: a cluster of thousands holds many alike (each a routing search).
constexpr size_t kMostDevices = 64;

// The devices that take part when not all can: the fastest of each class of devices
// (PlanningProblem::device_class) in turn, so that a cluster of many alike is represented by a
// few of each kind rather than by its fastest kind alone. `by_speed` is fastest first.
std::vector<std::pair<double, int>> representatives(
    const PlanningProblem& problem, const std::vector<std::pair<double, int>>& by_speed,
    size_t most) {
  std::vector<int> seen(problem.device_count(), 0);  // per class: its devices so far
  std::vector<std::pair<int, size_t>> keyed;         // (rank in class, place in by_speed)
  for (size_t i = 0; i < by_speed.size(); ++i) {
    const int device = by_speed[i].second;
    keyed.push_back({seen[problem.device_class(device)]++, i});
  }
  std::stable_sort(keyed.begin(), keyed.end());
  keyed.resize(most);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<std::pair<double, int>> chosen;
  for (const auto& [place, index] : keyed) chosen.push_back(by_speed[index]);
  return chosen;
}

}  // namespace

std::vector<int> chain_placement(const PlanningProblem& problem) {
  const int nodes = problem.node_count();
  if (nodes == 0) return {};
  std::vector<std::pair<double, int>> by_speed;
  for (int d = 0; d < problem.device_count(); ++d) {
    if (problem.allowed(d)) by_speed.push_back({problem.single_device_seconds(d), d});
  }
  std::stable_sort(by_speed.begin(), by_speed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t most =
      std::min(kMostDevices, std::max<size_t>(2, static_cast<size_t>(std::sqrt(kWork / nodes))));
  if (by_speed.size() > most) {
    by_speed = by_speed.size() > kMostDevices
                   ? representatives(problem, by_speed, most)
                   : std::vector(by_speed.begin(), by_speed.begin() + static_cast<long>(most));
  }
  const int devices = static_cast<int>(by_speed.size());

  std::vector<double> crossing(nodes + 1, 0);  // bytes made before a position, read at or after
  for (int n = 0; n < nodes; ++n) {
    for (const PlanningProblem::OutputValue& value : problem.values_out(n)) {
      int last = n;
      for (int reader : value.readers) last = std::max(last, reader);
      if (last == n) continue;
      crossing[n + 1] += value.bytes;
      crossing[last + 1] -= value.bytes;
    }
  }
  for (int p = 1; p <= nodes; ++p) crossing[p] += crossing[p - 1];

  std::vector<double> best(devices), next(devices);
  std::vector<int> from(static_cast<size_t>(nodes) * devices, -1);
  for (int k = 0; k < devices; ++k) best[k] = problem.seconds(0, by_speed[k].second);
  for (int n = 1; n < nodes; ++n) {
    for (int k = 0; k < devices; ++k) {
      const int device = by_speed[k].second;
      const double seconds = problem.seconds(n, device);
      next[k] = kInfinity;
      if (seconds == kInfinity) continue;
      for (int j = 0; j < devices; ++j) {
        if (best[j] == kInfinity) continue;
        const double switch_seconds = j == k ? 0
                                             : problem.transfer_seconds(std::max(0.0, crossing[n]),
                                                                        by_speed[j].second, device);
        if (best[j] + switch_seconds < next[k]) {
          next[k] = best[j] + switch_seconds;
          from[static_cast<size_t>(n) * devices + k] = j;
        }
      }
      next[k] += seconds;
    }
    std::swap(best, next);
  }
  const int last = static_cast<int>(std::min_element(best.begin(), best.end()) - best.begin());
  if (best[last] == kInfinity) return {};
  std::vector<int> placement(nodes);
  for (int n = nodes - 1, k = last; n >= 0; --n) {
    placement[n] = by_speed[k].second;
    if (n > 0) k = from[static_cast<size_t>(n) * devices + k];
  }
  return placement;
}

}  // namespace tandem
