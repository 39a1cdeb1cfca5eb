#include "calibrate/microbench.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "util/random_tensor.h"
#include "util/statistics.h"

namespace tandem::calibrate {

ContentionLog& contention_log() {
  static ContentionLog log;
  return log;
}

namespace {

// Runs at full speed (within kContendedSpread of the fastest) that a contended figure needs.
// Beside a process that spins on one core, the scheduler kept both of an OpenMP team's threads
// on the other core for up to seconds at a time; every run then took 4-25 ms, so a low
// percentile of a fixed budget's runs could still be a stall.
constexpr size_t kFastRuns = 5;
// How long a contended measurement waits for them, pausing between runs so that the scheduler
// places the threads again.
constexpr double kPatienceSeconds = 2.0;
constexpr auto kPause = std::chrono::milliseconds(2);

std::vector<double> fast_runs(const std::vector<double>& samples) {
  std::vector<double> fast;
  if (samples.empty()) return fast;
  const double fastest = *std::min_element(samples.begin(), samples.end());
  for (double sample : samples)
    if (sample <= kContendedSpread * fastest) fast.push_back(sample);
  return fast;
}

bool contended(const std::vector<double>& samples) {
  const double fast = quantile(samples, 0.1);
  return fast > 0 && median(samples) / fast > kContendedSpread;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// More runs of a contended measurement: up to `limit` samples within `budget` seconds, and
// then, paused, until each series that `stalled` names has kFastRuns fast samples, for up to
// kPatienceSeconds in all.
void run_until_settled(const std::function<void()>& run, size_t runs, size_t limit, double budget,
                       const std::function<bool()>& stalled) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const double elapsed = seconds_since(start);
    const bool within_budget = runs < limit && elapsed < budget;
    if (!within_budget && !(stalled() && elapsed < kPatienceSeconds)) return;
    if (!within_budget) std::this_thread::sleep_for(kPause);  // waiting out a stall
    run();
    ++runs;
  }
}

// A contended series' figure: the median of its runs at full speed.
double settled_figure(const std::vector<double>& samples) {
  const std::vector<double> fast = fast_runs(samples);
  ContentionLog& log = contention_log();
  log.worst_spread = std::max(log.worst_spread, median(samples) / quantile(samples, 0.1));
  if (contended(samples) || fast.size() < kFastRuns) ++log.unsettled;
  return median(fast);
}

}  // namespace

double typical(std::vector<double> samples, const std::function<double()>& more,
               const Repetition& repetition) {
  ContentionLog& log = contention_log();
  ++log.measurements;
  if (!contended(samples)) return median(std::move(samples));
  ++log.contended;
  const size_t limit = samples.size() + static_cast<size_t>(std::max(repetition.max_runs, 20));
  run_until_settled([&] { samples.push_back(more()); }, samples.size(), limit,
                    3 * repetition.budget_seconds,
                    [&] { return fast_runs(samples).size() < kFastRuns; });
  return settled_figure(samples);
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
  const auto start = std::chrono::steady_clock::now();
  int runs = 0;
  while (runs < repetition.min_runs ||
         (runs < repetition.max_runs && seconds_since(start) < repetition.budget_seconds)) {
    executor_->run(inputs_);
    ++runs;
  }
  // A node whose runs were contended gets more, as typical() takes, all nodes timed together.
  std::vector<bool> contended_node(nodes, false);
  bool any = false;
  for (size_t n = 0; n < nodes; ++n) {
    contended_node[n] = !samples[n].empty() && contended(samples[n]);
    any = any || contended_node[n];
  }
  ContentionLog& log = contention_log();
  log.measurements += 1;
  if (any) {
    ++log.contended;
    const auto runs_done = static_cast<size_t>(runs);
    run_until_settled([&] { executor_->run(inputs_); }, runs_done,
                      runs_done + static_cast<size_t>(std::max(repetition.max_runs, 20)),
                      3 * repetition.budget_seconds,
                      [&] {
                        for (size_t n = 0; n < nodes; ++n)
                          if (contended_node[n] && fast_runs(samples[n]).size() < kFastRuns)
                            return true;
                        return false;
                      });
  }
  executor_->set_observer(nullptr);
  std::vector<double> typical_times;
  for (size_t n = 0; n < nodes; ++n) {
    if (samples[n].empty()) {
      typical_times.push_back(0);
      continue;
    }
    typical_times.push_back(contended_node[n] ? settled_figure(samples[n]) : median(samples[n]));
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
