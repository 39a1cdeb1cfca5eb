#include "calibrate/microbench.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <random>

#include "util/random_tensor.h"
#include "util/statistics.h"

namespace tandem::calibrate {

ContentionLog& contention_log() {
  static ContentionLog log;
  return log;
}

double typical(std::vector<double> samples, const std::function<double()>& more,
               const Repetition& repetition) {
  ContentionLog& log = contention_log();
  ++log.measurements;
  const auto spread = [&] {
    const double fast = quantile(samples, 0.1);
    return fast > 0 ? median(samples) / fast : 1.0;
  };
  if (spread() <= kContendedSpread) return median(std::move(samples));
  ++log.contended;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const size_t limit = samples.size() + static_cast<size_t>(std::max(repetition.max_runs, 20));
  while (samples.size() < limit && std::chrono::duration<double>(Clock::now() - start).count() <
                                       3 * repetition.budget_seconds) {
    samples.push_back(more());
  }
  const double settled = spread();
  log.worst_spread = std::max(log.worst_spread, settled);
  if (settled > kContendedSpread) ++log.unsettled;
  return quantile(std::move(samples), 0.1);
}

int settle_curve(const std::vector<double>& sizes, std::vector<double>& seconds,
                 const std::function<double(size_t)>& measure_again, int rounds) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] < sizes[b]; });
  int count = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<bool> again(sizes.size(), false);
    for (size_t o = 1; o < order.size(); ++o) {
      const size_t smaller = order[o - 1], larger = order[o];
      if (sizes[smaller] < sizes[larger] && seconds[smaller] > seconds[larger])
        again[smaller] = again[larger] = true;
    }
    if (std::find(again.begin(), again.end(), true) == again.end()) break;
    for (size_t i = 0; i < again.size(); ++i) {
      if (!again[i]) continue;
      seconds[i] = std::min(seconds[i], measure_again(i));
      ++count;
    }
  }
  contention_log().remeasured += count;
  return count;
}

OpBench::OpBench(Device& device, Graph graph) : graph_(std::move(graph)) {
  std::mt19937_64 rng(7);
  // A compiled device moves a program's inputs in on every run; large operands are made
  // constants instead, which it keeps on the device, so that what is timed is the work.
  constexpr int64_t kResidentElements = 1024;
  std::vector<int> fed;
  for (int id : graph_.inputs) {
    Value& value = graph_.values[id];
    Tensor data = random_tensor(value.type.dtype, value.type.shape, rng);
    if (device.compiled() && data.numel() > kResidentElements) {
      value.constant = std::move(data);
    } else {
      fed.push_back(id);
      inputs_.push_back(std::move(data));
    }
  }
  graph_.inputs = std::move(fed);
  // Fed inputs are brought into a device's own memory once, outside the timed runs.
  for (Tensor& input : inputs_) {
    if (input.memory() != device.memory()) input = device.receive(input);
  }
  executor_ = std::make_unique<GraphExecutor>(graph_, device);
  executor_->run(inputs_);  // warm-up: first-touch pages, caches, lazily built primitives
}

OpBench::~OpBench() = default;

double OpBench::node_seconds(const Repetition& repetition) {
  if (executor_->compiled()) return run_seconds(repetition);
  const Node* first = &graph_.nodes.front();
  double seconds = 0;
  executor_->set_observer([&](const Node& node, std::chrono::nanoseconds elapsed) {
    if (&node == first) seconds = std::chrono::duration<double>(elapsed).count();
  });
  const double result = typical_seconds(repetition, [&] {
    executor_->run(inputs_);
    return seconds;
  });
  executor_->set_observer(nullptr);
  return result;
}

std::vector<double> OpBench::per_node_seconds(const Repetition& repetition) {
  if (executor_->compiled()) return {};
  const size_t nodes = graph_.nodes.size();
  std::vector<std::vector<double>> samples(nodes);
  std::map<const Node*, size_t> index;
  for (size_t n = 0; n < nodes; ++n) index[&graph_.nodes[n]] = n;
  executor_->set_observer([&](const Node& node, std::chrono::nanoseconds elapsed) {
    // Nodes of a subgraph are observed too; only the graph's own are timed here.
    if (const auto found = index.find(&node); found != index.end())
      samples[found->second].push_back(std::chrono::duration<double>(elapsed).count());
  });
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int runs = 0;
       runs < repetition.min_runs ||
       (runs < repetition.max_runs &&
        std::chrono::duration<double>(Clock::now() - start).count() < repetition.budget_seconds);
       ++runs) {
    executor_->run(inputs_);
  }
  executor_->set_observer(nullptr);
  std::vector<double> typical_times;
  for (std::vector<double>& node_samples : samples) {
    if (node_samples.empty()) {
      typical_times.push_back(0);
      continue;
    }
    const double fast = quantile(node_samples, 0.1);
    const double middle = median(node_samples);
    typical_times.push_back(fast > 0 && middle / fast > kContendedSpread ? fast : middle);
  }
  return typical_times;
}

double OpBench::run_seconds(const Repetition& repetition) {
  return typical_seconds(repetition, [&] {
    const auto start = std::chrono::steady_clock::now();
    executor_->run(inputs_);
    executor_->finish();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace tandem::calibrate
