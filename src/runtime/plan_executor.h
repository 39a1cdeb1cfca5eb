#pragma once
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "backends/device.h"
#include "ir/batch_split.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "report/timeline.h"
#include "runtime/fault.h"
#include "runtime/recycled_memory.h"
#include "runtime/transport.h"

namespace tandem {

// What a PlanExecutor runs with besides the plan (PlanExecutor::Options).
struct PlanExecutorOptions {
  std::vector<Fault> faults;
  // Called once in every worker thread of a device, after the device bound the thread
  // (Device::bind_current_thread, bind_copy_thread). An error from either fails every run.
  std::function<void(int device)> on_worker_start;
  // Several ranks: the transport to the others and the rank that runs each device (by plan
  // index). `devices` then holds this rank's devices only (null elsewhere); rank 0 gives the
  // inputs and returns the outputs, the other ranks' run() takes no inputs and returns none.
  Transport* transport = nullptr;
  std::vector<int> device_rank;
  // A training step's pipeline (Plan::piece_order): per graph node, whether it is backward work.
  std::vector<bool> backward_nodes;
};

// Runs a plan's segments on their devices at once: per device a compute worker, which runs its
// segments in a fixed order (micro-batch, then segment: stage 1 takes micro-batch k+1 while
// stage 2 works on k), and a copy worker, which copies the values that device reads from other
// devices into its own buffers, so that copies overlap compute. A segment starts when its
// inputs have arrived. Pipeline plans split the batch into micro-batches, data-parallel plans
// into each device's share; outputs are concatenated back. The first error (a backend's, or an
// injected fault) stops every worker, is re-thrown by run() as DeviceFailure naming the device,
// the segment and the op, and every buffer of the run is freed. The workers are started by the
// first run and kept (pinned, their OpenMP teams and oneDNN streams warm) until the executor is
// destroyed; run() calls on one executor are serialised. A plan on one device that keeps every
// core busy runs on run()'s own thread instead, where that thread runs its work as a worker
// would (Device::runs_on_any_thread): a hand-off there cost a wake-up per run.
//
// Across hosts, one executor per rank runs that rank's devices (Options::transport): a value a
// device of another rank reads is sent to that rank as soon as it is computed (once per rank,
// in host memory) and arrives there as one of the reading devices' copies; rank 0 sends the
// other ranks the inputs they read and receives the outputs they compute. A failure on any rank
// stops every rank's run.
class PlanExecutor {
 public:
  using Options = PlanExecutorOptions;

  struct RunStats {
    double seconds = 0;
    std::vector<double> busy_seconds;  // per device: time its segments ran
    int segments_run = 0;
    int transfers = 0;
    int messages_received = 0;  // from other ranks
    double bytes_received = 0;
    // By sending rank: bytes, and the time from each message's first byte to its last.
    std::vector<double> bytes_from_rank, seconds_from_rank;
  };

  // `devices` follow the cluster's devices (the plan's indices); null where the plan puts
  // nothing. `graph`, the devices and the plan must outlive the executor. `split` says how the
  // batch divides (needed only by plans that split it: each piece runs the model bound to its
  // size, inputs are cut and outputs joined along their own batch axes). Compiles every
  // segment's kernels on its device once. Throws InputError when the plan does not fit the graph.
  PlanExecutor(const Graph& graph, const Plan& plan, std::vector<Device*> devices,
               BatchSplit split = {}, Options options = {});
  ~PlanExecutor();

  // `inputs` follow graph.inputs; returns the graph's outputs, in host memory (on a rank other
  // than 0: no inputs, no outputs).
  std::vector<Tensor> run(std::span<const Tensor> inputs);

  // What the measured timeline keeps. By default, the last run: its segments ("<device>
  // compute" tracks), copies ("<device> copy") and the run itself ("iterations" track, group
  // "run"), times from the run's start. Every span carries its run's index (runs counted
  // from the last clear_timeline() or set_recording(), which also clears).
  struct Recording {
    // Every run since then, on one clock from the first one's start (so each run lies after
    // the previous, the gaps between runs included).
    bool every_run = false;
    // Each op inside its segment's span, on the same track (so trace viewers nest them),
    // category "op", named by Node::label(). Not for compiled devices (one program, no ops).
    bool ops = false;
  };
  void set_recording(Recording recording);
  // Forgets the runs recorded so far (the warm-up's, say): the next run is iteration 0.
  void clear_timeline();

  // The measured timeline, as set_recording says; stats() are the last run's figures.
  const Timeline& timeline() const { return timeline_; }
  // Where the timeline's time 0 lies on this process's steady clock.
  std::chrono::steady_clock::time_point timeline_origin() const { return epoch_; }
  const RunStats& stats() const { return stats_; }

 private:
  struct Segment;
  struct Job;
  struct RunState;
  struct Pool;
  struct Message;
  void build_pieces();
  void build_segments();
  void build_messages();
  // Each device's jobs (segment, piece) in the order it runs them (Options::piece_order).
  void order_jobs(int device_count);
  bool local(int device) const;
  int rank_of(int device) const;
  std::string on_rank() const;  // "rank 1 (host-b): " across ranks, else ""
  std::vector<Transport::Receive> receives(RunState& state);
  // The graph's outputs in host memory, the pieces of a split batch joined.
  std::vector<Tensor> host_outputs(RunState& state,
                                   const std::vector<std::vector<Tensor>>& input_pieces) const;
  // Whether `part` is piece `piece`'s part of the joined output `output` of this run, in host
  // memory, as the piece graph gave its shape.
  bool fits_joined(const Tensor& part, size_t output, int piece, const RunState& state) const;
  void compute_worker(RunState& state, int device, const std::exception_ptr& start_error);
  void copy_worker(RunState& state, int device, const std::exception_ptr& start_error);
  void run_job(RunState& state, const Job& job);
  void start_pool();
  // The plan's only device where it keeps every core busy and nothing moves between devices,
  // or -1 (found once); caller_device(): that device where run()'s thread can run its work
  // this time (Device::runs_on_any_thread), or -1.
  int find_lone_device() const;
  int caller_device() const;

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
  // Per graph output of a split batch: where each piece's part lies in the whole, when every
  // piece graph gives it a static shape and it is joined (not summed). Its workers then copy
  // their parts in as they finish, from their own caches, instead of run()'s thread reading
  // them all from the other cores' afterwards.
  struct JoinedOutput {
    DType dtype = DType::kUndefined;
    Shape whole;
    int axis = 0;
    std::vector<int64_t> offsets;  // per piece, along axis
  };
  std::vector<std::optional<JoinedOutput>> joined_outputs_;
  RecycledHostMemory joined_memory_{2 * graph_.outputs.size()};
  std::vector<std::unique_ptr<Segment>> segments_;  // in a topological order
  std::vector<std::vector<Job>> jobs_;              // per device, in run order
  std::vector<std::atomic<int>> segments_started_;  // per device, over all runs
  std::vector<int> copies_expected_;                // per device, every run
  std::vector<Message> messages_;  // between ranks, every run; a message's tag is its index
  std::vector<std::vector<int>> sends_of_piece_;  // [piece]: messages this rank sends
  std::mutex run_mutex_;
  std::unique_ptr<Pool> pool_;  // the worker threads, started by the first run
  Recording recording_;         // read by the workers during a run, set between runs
  Timeline timeline_;
  int runs_recorded_ = 0;                        // since clear_timeline()
  std::chrono::steady_clock::time_point epoch_;  // every_run: the first recorded run's start
  RunStats stats_;
  int lone_device_ = -1;  // find_lone_device()
};

}  // namespace tandem
