#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "backends/device.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace tandem::calibrate {

// How long each measurement repeats: at least `min_runs`, then until `budget_seconds` of
// samples are gathered or `max_runs` is reached. The 10th percentile of the samples is reported
// (typical(), below).
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
  int remeasured = 0;             // curve points measured again, out of order with their neighbours
  int slow_phase_waits = 0;       // measurements that waited for the machine's full speed
  double slow_phase_seconds = 0;  // the time they waited
  int slow_phase_unsettled = 0;   // measurements taken slow: the wait's limit was reached
  double late_full_speed = 1;     // FullSpeedGate::speed_up_since_warmup() at the end
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

// The typical time of one run from `samples`: their 10th percentile, what a run takes on a
// machine of its own. On a quiet machine it is within a few percent of the median; on a shared
// VM whose host alternates between full speed and phases up to 1.6x slower, each lasting tens
// of milliseconds, the median is a mix of the two that changes from minute to minute, and the
// 10th percentile is the full-speed phase every time. Where the samples are contended (another
// process had the cores for most runs), more runs are taken first (`more` called until three
// times the budget) to find the ones it left alone, the measurement counted in
// contention_log().
double typical(std::vector<double> samples, const std::function<double()>& more,
               const Repetition& repetition);

// A shared VM's host also runs slow for seconds at a time, longer than any measurement's
// samples (a calibration's first 256^3 product took 192 us where the rest took 100), so that no
// percentile of them is at full speed. Before each measurement the gate times a short
// sentinel (the median of a few runs of one product: a slow phase has moments of full speed,
// which must not pass for its end) and, while it takes over
// kSlowPhaseFactor times the fastest sentinel seen, waits for the machine to speed up, up to a
// total `budget_seconds` per calibration; the waits are counted in contention_log(). Arming it
// times the sentinel for `warmup_seconds` first, to see full speed before the first
// measurement even where the calibration starts in a slow phase.
inline constexpr double kSlowPhaseFactor = 1.2;
class FullSpeedGate {
 public:
  // Gates every measurement from now on; `sentinel` times one short reference, in seconds.
  void arm(std::function<double()> sentinel, double warmup_seconds, double budget_seconds);

  void disarm();
  // The fastest sentinel seen since arm() over the fastest seen by its warm-up: below
  // 1 / kSlowPhaseFactor, the machine was slow all through the warm-up and the measurements
  // before it sped up were taken slow.
  double speed_up_since_warmup() const;
  // Before a measurement: returns once the sentinel runs at full speed, or the budget is spent.
  void wait();

 private:
  std::function<double()> sentinel_;
  double fastest_ = 0;
  double fastest_after_warmup_ = 0;
  double budget_left_ = 0;
};
FullSpeedGate& full_speed_gate();

// Calls `sample`, which times one run in seconds, as `repetition` says, once the machine runs
// at full speed (full_speed_gate()); returns typical().
template <typename Sample>
double typical_seconds(const Repetition& repetition, Sample sample) {
  full_speed_gate().wait();
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
  // The median of `runs` whole runs, ungated: the full-speed gate's sentinel.
  double median_run_seconds(int runs);
  // Each node's kernel time (the executor's per-node observer), in node order, over whole runs
  // repeated as `repetition` says: the 10th percentile of its samples (typical()'s figure).
  // Empty on a compiled device.
  std::vector<double> per_node_seconds(const Repetition& repetition);

 private:
  double timed_run();

  Graph graph_;
  std::vector<Tensor> inputs_;
  std::unique_ptr<GraphExecutor> executor_;
};

}  // namespace tandem::calibrate
