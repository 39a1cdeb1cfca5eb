#include "plan/pipeline_split.h"

#include <algorithm>
#include <cmath>
#include <deque>

namespace tandem {
namespace {

// Bisection stops when the feasible and infeasible limits are this close (relative).
constexpr double kPrecision = 1e-6;
// Affine transfer times: two probes give latency and bandwidth (PlanningProblem's model).
constexpr double kProbeBytes = 1 << 30;

}  // namespace

PipelineSplitter::PipelineSplitter(const PlanningProblem& problem, double capacity_factor)
    : problem_(problem), nodes_(problem.node_count()) {
  const int devices = problem.device_count();
  const double microbatches = std::max(1, problem.options().microbatches);
  const double in_flight = std::min<double>(microbatches, kInFlight);

  // Bytes crossing each position: a value crosses every position between its producer and its
  // last reader.
  std::vector<double> delta(nodes_ + 2, 0);
  for (int n = 0; n < nodes_; ++n) {
    for (const PlanningProblem::OutputValue& value : problem.values_out(n)) {
      int last = n;
      for (int reader : value.readers) last = std::max(last, reader);
      if (last == n) continue;
      delta[n + 1] += value.bytes / microbatches;
      delta[last + 1] -= value.bytes / microbatches;
    }
  }
  crossing_bytes_.assign(nodes_ + 1, 0);
  double running = 0;
  for (int p = 0; p <= nodes_; ++p) {
    running += delta[p];
    crossing_bytes_[p] = std::max(0.0, running);
  }
  // Live bytes during a node's step: what crosses into it, plus what it writes.
  std::vector<double> live(nodes_);
  std::vector<double> prefix_weights(nodes_ + 1, 0);
  for (int n = 0; n < nodes_; ++n) {
    live[n] = crossing_bytes_[n] + problem.output_bytes(n) / microbatches;
    prefix_weights[n + 1] = prefix_weights[n] + problem.weight_bytes(n);
  }

  prefix_seconds_.assign(devices, std::vector<double>(nodes_ + 1, 0));
  earliest_start_.assign(devices, std::vector<int>(nodes_ + 1, 0));
  for (int d = 0; d < devices; ++d) {
    std::vector<double>& prefix = prefix_seconds_[d];
    std::vector<int>& earliest = earliest_start_[d];
    const double capacity = problem.memory_capacity(d) * capacity_factor;
    std::deque<int> window_max;  // indices of [start, end) with decreasing live bytes
    int start = 0;
    for (int end = 1; end <= nodes_; ++end) {
      const int node = end - 1;
      const double seconds = node_seconds(node, d);
      prefix[end] = prefix[node] + (seconds < kInfinity ? seconds : 0);
      while (!window_max.empty() && live[window_max.back()] <= live[node]) window_max.pop_back();
      window_max.push_back(node);
      if (seconds == kInfinity) start = end;
      auto fits = [&] {
        const double weights = prefix_weights[end] - prefix_weights[start];
        return weights + in_flight * live[window_max.front()] <= capacity;
      };
      while (start < end && !fits()) {
        ++start;
        while (!window_max.empty() && window_max.front() < start) window_max.pop_front();
      }
      while (!window_max.empty() && window_max.front() < start) window_max.pop_front();
      earliest[end] = start;
    }
  }

  for (int n = 0; n < nodes_; ++n) {
    double fastest = kInfinity;
    for (int d = 0; d < devices; ++d) fastest = std::min(fastest, node_seconds(n, d));
    least_bottleneck_ = std::max(least_bottleneck_, fastest);
  }
}

PipelineSplitter::Link PipelineSplitter::link(int from, int to) const {
  if (from == to) return {0, kInfinity};
  const double latency = problem_.transfer_seconds(0, from, to);
  const double probe = problem_.transfer_seconds(kProbeBytes, from, to);
  return {latency, probe < kInfinity && probe > latency ? kProbeBytes / (probe - latency) : 0};
}

double PipelineSplitter::node_seconds(int node, int device) const {
  return problem_.seconds_for_share(node, device,
                                    1.0 / std::max(1, problem_.options().microbatches));
}

double PipelineSplitter::stage_seconds(int first, int end, int device) const {
  double total = 0;
  for (int n = first; n < end; ++n) total += node_seconds(n, device);
  return total;
}

double PipelineSplitter::boundary_seconds(int position, int from, int to) const {
  const double bytes = crossing_bytes_[position];
  if (bytes <= 0 || from == to) return 0;
  const Link pair = link(from, to);
  return pair.latency + bytes / pair.bandwidth;
}

bool PipelineSplitter::stage_fits(int first, int end, int device) const {
  return first < end && first >= earliest_start_[device][end];
}

double PipelineSplitter::bottleneck(const Split& split) const {
  double worst = 0;
  int first = 0;
  for (size_t k = 0; k < split.devices.size(); ++k) {
    const int end = split.ends[k];
    if (!stage_fits(first, end, split.devices[k])) return kInfinity;
    worst = std::max(worst, stage_seconds(first, end, split.devices[k]));
    if (k > 0)
      worst = std::max(worst, boundary_seconds(first, split.devices[k - 1], split.devices[k]));
    first = end;
  }
  return first == nodes_ ? worst : kInfinity;
}

// Whether some split on a prefix of the order has every stage and boundary within `limit`.
// reachable[p]: the first p nodes can form stages 0..k. A stage on device d may end at p when it
// starts at some reachable q with q >= earliest_start[d][p] (support, memory) and
// prefix[p] - prefix[q] <= limit; both bounds only grow with p, so one sweep with prefix
// counts of the allowed starts decides every p. Only the band of positions reachable after the
// previous stage is swept.
bool PipelineSplitter::feasible(const std::vector<int>& device_order, double limit,
                                Split* split) const {
  ++sweeps_;
  const int stages = static_cast<int>(device_order.size());
  std::vector<char> reachable(nodes_ + 1, 0), next(nodes_ + 1, 0);
  std::vector<int> allowed_starts(nodes_ + 2, 0);
  struct Starts {
    int first;
    std::vector<char> allowed;  // positions first, first + 1, ...
  };
  std::vector<Starts> starts;  // per stage, for the reconstruction
  reachable[0] = 1;
  int low = 0, high = 0;  // the band of reachable positions
  for (int k = 0; k < stages; ++k) {
    const int device = device_order[k];
    const std::vector<double>& prefix = prefix_seconds_[device];
    const std::vector<int>& earliest = earliest_start_[device];
    // A boundary fits when latency + bytes / bandwidth <= limit: a bound on the bytes.
    double most_bytes = kInfinity;
    if (k > 0) {
      const Link pair = link(device_order[k - 1], device);
      most_bytes = limit < pair.latency ? 0 : (limit - pair.latency) * pair.bandwidth;
    }
    high = std::min(high, nodes_ - 1);
    if (split) starts.push_back({low, std::vector<char>(high - low + 1, 0)});
    allowed_starts[low] = 0;
    for (int q = low; q <= high; ++q) {
      const bool ok = reachable[q] && (k == 0 || crossing_bytes_[q] <= most_bytes);
      allowed_starts[q + 1] = allowed_starts[q] + ok;
      if (split) starts.back().allowed[q - low] = ok;
    }
    int next_low = nodes_ + 1, next_high = -1;
    int time_start = low;
    for (int end = low + 1; end <= nodes_; ++end) {
      while (prefix[end] - prefix[time_start] > limit) ++time_start;
      const int first = std::max(time_start, earliest[end]);
      if (first > high) break;  // no allowed start is left for this or any later end
      if (first < end && allowed_starts[std::min(end, high + 1)] - allowed_starts[first] > 0) {
        next[end] = 1;
        next_low = std::min(next_low, end);
        next_high = end;
      }
    }
    if (next_high == nodes_) {
      if (!split) return true;
      split->devices.assign(device_order.begin(), device_order.begin() + k + 1);
      split->ends.assign(k + 1, nodes_);
      int end = nodes_;
      for (int stage = k; stage >= 0; --stage) {
        const int stage_device = device_order[stage];
        const std::vector<double>& stage_prefix = prefix_seconds_[stage_device];
        const Starts& allowed = starts[stage];
        split->ends[stage] = end;
        int start = std::min(end - 1, allowed.first + static_cast<int>(allowed.allowed.size()) - 1);
        while (!allowed.allowed[start - allowed.first] ||
               stage_prefix[end] - stage_prefix[start] > limit ||
               start < earliest_start_[stage_device][end]) {
          --start;
        }
        end = start;
      }
      split->bottleneck = bottleneck(*split);
      return true;
    }
    if (next_high < 0) return false;
    std::fill(reachable.begin() + low, reachable.begin() + high + 1, 0);
    std::swap(reachable, next);
    low = next_low;
    high = next_high;
  }
  return false;
}

std::optional<PipelineSplitter::Split> PipelineSplitter::split(const std::vector<int>& device_order,
                                                               double must_beat) const {
  if (device_order.empty() || nodes_ == 0) return std::nullopt;
  double high = must_beat < kInfinity ? must_beat * (1 - kPrecision) : kInfinity;
  if (!feasible(device_order, high, nullptr)) return std::nullopt;
  // No split beats the slowest node on its fastest device, nor the work of every node on its
  // fastest device of the order spread evenly over all of them.
  double spread = 0;
  for (int n = 0; n < nodes_; ++n) {
    double fastest = kInfinity;
    for (int device : device_order) fastest = std::min(fastest, node_seconds(n, device));
    spread += fastest;
  }
  double low = std::max(least_bottleneck_, spread / static_cast<double>(device_order.size()));
  if (feasible(device_order, low, nullptr)) {
    high = low;
  } else {
    if (high == kInfinity) {
      high = std::max(low, 1e-12);
      while (!feasible(device_order, high, nullptr)) {
        low = high;
        high *= 2;
      }
    }
    low = std::max(low, high * 1e-12);
    while (high > low * (1 + kPrecision)) {
      const double middle = std::sqrt(low * high);
      (feasible(device_order, middle, nullptr) ? high : low) = middle;
    }
  }
  Split result;
  feasible(device_order, high, &result);
  return result;
}

}  // namespace tandem
