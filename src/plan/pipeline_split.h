#pragma once
#include <optional>
#include <vector>

#include "plan/problem.h"

namespace tandem {

// Contiguous pipeline stages over the node order (graph().nodes, a topological order), for one
// order of devices: stage k runs on device_order[k], the plan uses a prefix of the order.
//
// The model the split minimises, per micro-batch of batch / M samples (M = microbatches):
// - a node's time is PlanningProblem::seconds_for_share(1/M): its launch overhead plus the rest
//   of its time scaled by 1/M (work assumed linear in the batch; the per-op overhead is not, so
//   small micro-batches pay it M times per batch);
// - a stage's time is the sum of its nodes' times; the boundary between two stages costs one
//   transfer of every value crossing it (bytes / M) between the two stages' devices, even a
//   value whose reader is further down the pipeline (the evaluator routes it directly);
// - the bottleneck, the largest stage or boundary time, sets the steady-state rate;
// - a stage must hold its nodes' weights plus the activations of min(M, kInFlight)
//   micro-batches (the one it computes and the one whose outputs wait to leave, as the
//   evaluator counts them), each the largest live set at one of its steps (what crosses into the
//   step plus what it writes: an upper bound of the evaluator's exact figure).
class PipelineSplitter {
 public:
  static constexpr int kInFlight = 2;

  // capacity_factor < 1 leaves headroom when the evaluator's exact memory check is stricter
  // than this model's (shared weights, fragmentation of lifetimes).
  explicit PipelineSplitter(const PlanningProblem& problem, double capacity_factor = 1.0);

  struct Split {
    std::vector<int> devices;  // per stage
    std::vector<int> ends;     // per stage: one past its last node; the last is node_count()
    double bottleneck = kInfinity;
  };
  // The split with the least bottleneck for this device order, or nullopt when no split fits
  // or none beats `must_beat`. Exact on the model above, to a relative 1e-6: a bisection on
  // the bottleneck, each step a linear-time feasibility sweep, O(N·S) per step.
  std::optional<Split> split(const std::vector<int>& device_order,
                             double must_beat = kInfinity) const;

  // The model's figures, for tests that search exhaustively.
  double node_seconds(int node, int device) const;  // per micro-batch
  double stage_seconds(int first, int end, int device) const;
  double boundary_seconds(int position, int from, int to) const;  // nodes < position to >= it
  bool stage_fits(int first, int end, int device) const;
  double bottleneck(const Split& split) const;  // +infinity when a stage cannot run or fit
  // Sweeps of the feasibility test so far (benchmarks count the work).
  long long sweeps() const { return sweeps_; }

 private:
  bool feasible(const std::vector<int>& device_order, double limit, Split* split) const;

  const PlanningProblem& problem_;
  int nodes_ = 0;
  std::vector<std::vector<double>> prefix_seconds_;  // per device: N + 1 prefix sums
  std::vector<std::vector<int>> earliest_start_;     // per device, per end: the first start
                                                     // whose stage runs and fits there
  std::vector<double> crossing_bytes_;               // per position, per micro-batch
  // A device pair's transfer as latency + bytes / bandwidth (PlanningProblem::transfer_seconds,
  // asked for the pairs an order puts side by side, never for every pair).
  struct Link {
    double latency = 0, bandwidth = kInfinity;
  };
  Link link(int from, int to) const;
  double least_bottleneck_ = 0;  // no split beats the slowest node on its fastest device
  mutable long long sweeps_ = 0;
};

}  // namespace tandem
