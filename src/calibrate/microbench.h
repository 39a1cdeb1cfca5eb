#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "backends/device.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace tandem::calibrate {

// How long each measurement repeats: at least `min_runs`, then until `budget_seconds` of
// samples are gathered or `max_runs` is reached. The median of the samples is reported, unless
// they are contended (below).
struct Repetition {
  int min_runs = 5;
  int max_runs = 200;
  double budget_seconds = 0.2;
};

// Samples are contended when their median exceeds their 10th percentile by this factor: another
// process had the cores for some of the runs, most of them even (on a quiet machine the two stay
// within a few percent). A stall must not become the figure.
inline constexpr double kContendedSpread = 1.5;

// What this process's measurements saw, for calibrate's closing note.
struct ContentionLog {
  int measurements = 0;
  int contended = 0;        // measurements whose samples were contended
  int unsettled = 0;        // still contended after more runs: the figure may be too slow
  double worst_spread = 1;  // the largest median / 10th percentile seen
  // The same product's time at the end of the calibration over its time at the start (1 when
  // not measured): other tenants of a VM change its speed over minutes, and the figures
  // measured in between were measured at different speeds.
  double speed_change = 1;
  int remeasured = 0;  // curve points measured again, out of order with their neighbours
  // Whether the kernels' threads each kept to a core of their own while measured: unset where
  // that was not tried (one thread, or not one thread per core), false where a move was refused.
  std::optional<bool> team_on_distinct_cores;
};
// More work never takes less time. Where, by `sizes`, a point of a curve takes longer than the
// next larger one, both are measured again (`measure_again(i)`, seconds) and each keeps the
// faster of its timings, as a stall only ever slows a run; at most `rounds` times. Points
// still out of order are left so (the cost model makes each curve non-decreasing). Counted in
// contention_log().remeasured; returns how many re-measurements it took.
int settle_curve(const std::vector<double>& sizes, std::vector<double>& seconds,
                 const std::function<double(size_t)>& measure_again, int rounds = 2);

// Beyond this factor either way, `tandem calibrate` warns that the machine's speed changed.
inline constexpr double kSpeedChangeWarning = 1.1;
ContentionLog& contention_log();

// The typical time of one run from `samples`: their median when they are not contended; else
// more runs are taken (`more` called until three times the budget, then, with short pauses
// between runs, until five ran at full speed or two seconds passed: a stall can outlast a
// budget), and the median of the runs at full speed (within kContendedSpread of the fastest) is
// reported: what a run on a machine of its own takes. Counted in contention_log().
double typical(std::vector<double> samples, const std::function<double()>& more,
               const Repetition& repetition);

// Calls `sample`, which times one run in seconds, as `repetition` says; returns typical().
template <typename Sample>
double typical_seconds(const Repetition& repetition, Sample sample) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> samples;
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  while (static_cast<int>(samples.size()) < repetition.min_runs ||
         (static_cast<int>(samples.size()) < repetition.max_runs &&
          elapsed() < repetition.budget_seconds)) {
    samples.push_back(sample());
  }
  return typical(
      std::move(samples), [&] { return sample(); }, repetition);
}

// A graph compiled once on a device through the runtime, so what is timed is the backend's
// real kernels and the executor's real dispatch. Inputs are random, made once.
class OpBench {
 public:
  OpBench(Device& device, Graph graph);
  OpBench(const OpBench&) = delete;  // the executor holds a reference to graph_
  OpBench& operator=(const OpBench&) = delete;
  ~OpBench();

  const Graph& graph() const { return graph_; }
  // The work of the first node, as the cost model sees it.
  const OpCost& cost() const { return graph_.nodes.front().cost; }
  // Typical seconds (typical_seconds) of the first node's kernel alone (the executor's per-node
  // observer); on a compiled device, of the whole program (there is no per-node time to observe).
  double node_seconds(const Repetition& repetition);
  // Typical seconds of a whole run through the executor, dispatch included.
  double run_seconds(const Repetition& repetition);
  // Each node's kernel time (the executor's per-node observer), in node order, over whole runs
  // repeated as `repetition` says: a node's median, or where another process contended, its
  // runs at full speed after more runs, as typical() takes them. Empty on a compiled device.
  std::vector<double> per_node_seconds(const Repetition& repetition);

 private:
  Graph graph_;
  std::vector<Tensor> inputs_;
  std::unique_ptr<GraphExecutor> executor_;
};

}  // namespace tandem::calibrate
