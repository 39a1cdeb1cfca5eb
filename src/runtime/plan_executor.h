#pragma once
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backends/device.h"
#include "ir/batch_split.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "report/timeline.h"
#include "runtime/fault.h"

namespace tandem {

// Runs a plan's segments on their devices at once: per device a compute worker, which runs its
// segments in a fixed order (micro-batch, then segment: stage 1 takes micro-batch k+1 while
// stage 2 works on k), and a copy worker, which copies the values that device reads from other
// devices into its own buffers, so that copies overlap compute. A segment starts when its
// inputs have arrived. Pipeline plans split the batch into micro-batches, data-parallel plans
// into each device's share; outputs are concatenated back. The first error (a backend's, or an
// injected fault) stops every worker, is re-thrown by run() as DeviceFailure naming the device,
// the segment and the op, and every buffer of the run is freed. The workers are started by the
// first run and kept (pinned, their OpenMP teams and oneDNN streams warm) until the executor is
// destroyed; run() calls on one executor are serialised.
class PlanExecutor {
 public:
  struct Options {
    std::vector<Fault> faults;
    // Called once, first, in every worker thread of a device (pin it to the device's cores).
    // An error from it fails every run.
    std::function<void(int device)> on_worker_start;
  };

  struct RunStats {
    double seconds = 0;
    std::vector<double> busy_seconds;  // per device: time its segments ran
    int segments_run = 0;
    int transfers = 0;
  };

  // `devices` follow the cluster's devices (the plan's indices); null where the plan puts
  // nothing. `graph`, the devices and the plan must outlive the executor. `split` says how the
  // batch divides (needed only by plans that split it: each piece runs the model bound to its
  // size, inputs are cut and outputs joined along their own batch axes). Compiles every
  // segment's kernels on its device once. Throws InputError when the plan does not fit the graph.
  PlanExecutor(const Graph& graph, const Plan& plan, std::vector<Device*> devices,
               BatchSplit split = {}, Options options = {});
  ~PlanExecutor();

  // `inputs` follow graph.inputs; returns the graph's outputs, in host memory.
  std::vector<Tensor> run(std::span<const Tensor> inputs);

  // The last run's measured timeline ("<device> compute", "<device> copy" tracks) and figures.
  const Timeline& timeline() const { return timeline_; }
  const RunStats& stats() const { return stats_; }

 private:
  struct Segment;
  struct Job;
  struct RunState;
  struct Pool;
  void build_pieces();
  void build_segments();
  void compute_worker(RunState& state, int device, const std::exception_ptr& start_error);
  void copy_worker(RunState& state, int device, const std::exception_ptr& start_error);
  void run_job(RunState& state, const Job& job);
  void start_pool();

  const Graph& graph_;
  const Plan& plan_;
  std::vector<Device*> devices_;
  Options options_;
  BatchSplit split_;
  int64_t batch_ = 1;
  std::vector<int64_t> piece_sizes_;  // samples per piece (micro-batch or share)
  std::vector<int> piece_device_;     // data-parallel: the device of each piece; else -1
  std::vector<std::shared_ptr<const Graph>> piece_graphs_;  // per distinct piece size
  std::vector<int> piece_graph_;                            // piece -> index in piece_graphs_
  std::vector<std::unique_ptr<Segment>> segments_;          // in a topological order
  std::vector<std::vector<Job>> jobs_;                      // per device, in run order
  std::vector<std::atomic<int>> segments_started_;          // per device, over all runs
  std::vector<int> copies_expected_;                        // per device, every run
  std::mutex run_mutex_;
  std::unique_ptr<Pool> pool_;  // the worker threads, started by the first run
  Timeline timeline_;
  RunStats stats_;
};

}  // namespace tandem
