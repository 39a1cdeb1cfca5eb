#pragma once
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cost/cost_model.h"
#include "ir/graph.h"

namespace tandem {

struct Plan;  // plan/plan.h, which reads this file

enum class Objective { kLatency, kThroughput, kCost };
std::string_view objective_name(Objective objective);  // "latency", "throughput", "cost"
// The objective of that name; nullopt for any other.
std::optional<Objective> objective_named(std::string_view name);

// A user's pin: nodes whose name (or op type, for patterns like 'Gather*') matches `pattern`
// (glob: * and ?) must run on `device`.
struct Pin {
  std::string pattern;
  std::string device;  // a device id of the cluster
};

struct PlanOptions {
  Objective objective = Objective::kLatency;
  int microbatches = 1;  // for throughput: the batch is split into this many micro-batches
  double max_latency_seconds = 0;  // for cost: plans slower than this are refused (0 = none)
  std::vector<Pin> pins;
  std::vector<std::string> excluded;  // device ids no op may use
  int64_t batch = 1;                  // samples per run (BatchSplit::batch)
  // Why the batch cannot be split into micro-batches or data-parallel shares
  // (BatchSplit::refusal); empty when it can.
  std::string batch_unsplittable;
  // Per node, its phase: nodes of different phases never share a segment (a training step's
  // forward and backward nodes run at different times for different micro-batches), and a node
  // may join its device's latest segment of its phase wherever that keeps the segment convex.
  // Empty: one phase.
  std::vector<int> node_phase;
  // auto takes a plan over several devices only where it is predicted better than the best
  // one-device plan by more than this share, and a plan on the devices as given over the
  // machine as one device likewise (whole_machine.h): a split has more for the prediction to
  // miss (its transfers, its devices' sharing of a host). On the 2-vCPU VM, calibrations minutes
  // apart priced one model 11-13% apart, and splits predicted 0-6% faster than the whole
  // machine measured 6-57% slower; on an H200 beside its host's CPU, HEFT splits predicted 1.5%
  // and 3% faster than the GPU alone measured 52% and 8% slower (docs/BENCHMARKS.md).
  double split_margin = 0.10;
};

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

class PlanningProblem;

// The copies of one run between the caller's host memory and the devices that keep their own
// (a GPU's, a PJRT device's): every graph input once to each such device that reads it, when its
// first reader there starts, and every graph output back from its producer, as a segment's
// run does them; charged to the device's time. `piece` tells apart the micro-batches and
// data-parallel replicas, each of which copies its own part of the batch.
class HostCopies {
 public:
  explicit HostCopies(const PlanningProblem& problem) : problem_(problem) {}
  // Seconds `node` spends on `device` copying the inputs it is the first there to read and the
  // outputs it writes, for `fraction` of the batch.
  double charge(int node, int device, double fraction, int piece = 0);

 private:
  const PlanningProblem& problem_;
  std::unordered_set<uint64_t> copied_;  // (piece, device, value)
};

// What no plan can beat, for each objective (lower_bounds in plan/evaluate.h).
struct LowerBounds {
  double latency_seconds = 0;
  double throughput_samples_per_second = kInfinity;  // +infinity for a graph without work
  double cost_per_million_samples = 0;               // USD; 0 when some node has no priced device
};

// Everything a strategy needs, computed once: the graph's top-level nodes as a DAG, the time of
// every node on every device (+infinity where it cannot run, is excluded, or is pinned
// elsewhere), the bytes each node sends to its successors, and each device's memory. Strategies
// read this, never the cost model, so that they are fast on 100k-node graphs.
class PlanningProblem {
 public:
  // Throws InputError for an op no allowed device supports (naming it), a pin naming an
  // unknown device or contradicting support, an unknown excluded device.
  PlanningProblem(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                  PlanOptions options);
  // A synthetic problem (benchmarks and tests): the cost matrix and edges are given directly.
  PlanningProblem(const Cluster& cluster, const CostModel& cost,
                  std::vector<std::vector<double>> seconds,
                  std::vector<std::vector<std::pair<int, double>>> successors,
                  std::vector<double> weight_bytes, std::vector<double> output_bytes,
                  PlanOptions options);

  const Graph* graph() const { return graph_; }  // null for synthetic problems
  // Whether the batch can be split into micro-batches or data-parallel shares: a batch of more
  // than one sample that the caller found splittable. When not, micro-batches are 1 and
  // batch_refusal() says why.
  bool batch_splittable() const { return batch_refusal_.empty(); }
  const std::string& batch_refusal() const { return batch_refusal_; }
  const Cluster& cluster() const { return cost_.cluster(); }
  const CostModel& cost() const { return cost_; }
  const PlanOptions& options() const { return options_; }

  int node_count() const { return static_cast<int>(seconds_.size()); }
  int device_count() const { return static_cast<int>(cluster().devices.size()); }
  // Node indices follow graph().nodes, which is in topological order.
  double seconds(int node, int device) const { return seconds_[node][device]; }
  bool runnable(int node, int device) const { return seconds_[node][device] < kInfinity; }
  // Edges to later nodes, with the bytes that cross them if the two land on different devices.
  const std::vector<std::pair<int, double>>& successors(int node) const {
    return successors_[node];
  }
  const std::vector<std::pair<int, double>>& predecessors(int node) const {
    return predecessors_[node];
  }
  double weight_bytes(int node) const { return weight_bytes_[node]; }  // constants it reads
  double output_bytes(int node) const { return output_bytes_[node]; }  // activations it writes
  // Bytes of its outputs that live to the end wherever it runs: graph outputs (synthetic
  // problems: the outputs of nodes nothing reads).
  double final_output_bytes(int node) const { return final_output_bytes_[node]; }
  double memory_capacity(int device) const;  // bytes; +infinity when unknown
  // Seconds to move `bytes` between two devices: latency + bytes / bandwidth of the pair's path,
  // both from two probes of the cost model, computed for all pairs from a device the first time
  // one is asked for (one routing search), then kept.
  double transfer_seconds(double bytes, int from, int to) const {
    if (from == to) return 0;
    const TransferRow& row = transfer_row(from);
    return row.latency[to] + bytes / row.bandwidth[to];
  }
  // The graph's inputs `node` reads, as (value id, bytes); empty for synthetic problems.
  const std::vector<std::pair<int, double>>& graph_inputs_read(int node) const {
    return graph_inputs_read_[node];
  }
  // Seconds to copy `bytes` between `device` and its host's memory, where the caller's inputs
  // are and its outputs go (CostModel::host_copy_seconds): 0 for a device computing in host
  // memory.
  double host_copy_seconds(double bytes, int device, bool to_device) const {
    return bytes > 0 ? cost_.host_copy_seconds(bytes, device, to_device) : 0;
  }

  // A value a node writes and the later nodes that read it: it crosses once to every other
  // device its readers are on. Synthetic problems have one value per edge (value id -1).
  struct OutputValue {
    int value = -1;
    double bytes = 0;
    std::vector<int> readers;
  };
  const std::vector<OutputValue>& values_out(int node) const { return values_out_[node]; }
  // Whether a device may run anything (not excluded).
  bool allowed(int device) const { return allowed_[device]; }
  // The links a transfer between two devices crosses (Cluster::path, computed once per pair
  // asked for; the reference stays valid as long as the problem).
  const std::vector<Cluster::Hop>& path(int from, int to) const;
  // Devices that no plan tells apart when each runs nodes alone: the same time for every node,
  // the same memory, launch overhead, price and kind (a cluster of identical GPUs is one
  // class). The class is the index of its first device; device_class(d) == d for that one.
  int device_class(int device) const { return device_class_[device]; }
  int class_count() const { return class_count_; }
  // Seconds per op a device pays whatever the op's size (launch overhead): what does not shrink
  // when a micro-batch does.
  double launch_overhead(int device) const;
  // Seconds each run of a segment costs beyond its nodes: a compiled device's program step
  // (step_overhead: one PJRT execute, its arguments in and results out); 0 where unknown.
  double segment_overhead(int device) const;
  // Seconds of a node run on `fraction` of the batch (a micro-batch, a data-parallel share): its
  // compute and its activations' traffic scale, reading its weights (OpTime::weight_seconds)
  // and the launch overhead do not. A measured op time scales as its roofline does.
  double seconds_for_share(int node, int device, double fraction) const;
  // Devices that share a host's memory and cores: the CPU devices of one host, two or more. The
  // group is the index of its first device; -1 for a device that shares with none.
  int memory_group(int device) const { return memory_group_[device]; }
  // The cores a device of a memory group computes on: its `cores`, else every core of the host
  // (this machine's, as the runtime and the presets resolve them).
  int device_cores(int device) const { return device_cores_[device]; }
  // Devices of one memory group computing at once: how many, and the cores they take together.
  struct Sharing {
    int devices = 1;
    int cores = 0;
  };
  // seconds_for_share while `sharing` computes at once (the device itself included). The devices
  // split the host's main-memory bandwidth: the op's main-memory traffic
  // (OpTime::main_memory_seconds) takes devices x the device's bandwidth alone / the host's (at
  // least 1x) as long, its compute and its traffic in the caches no longer. And where they take
  // more cores than the host has (a CPU device beside a PJRT CPU plugin on every core), the
  // operating system shares the cores out: the whole op takes cores / host cores as long.
  double contended_seconds_for_share(int node, int device, double fraction, Sharing sharing) const;
  // Bytes a device needs to run `nodes` in that order: the weights they read (a shared weight
  // once) and the peak of live activations (cost/memory_footprint.h for graphs).
  struct MemoryUse {
    double weights = 0, activations = 0;
    double total() const { return weights + activations; }
  };
  MemoryUse memory_use(std::span<const int> nodes_in_order) const;
  // The whole graph on one device: seconds (+infinity when some node cannot run there) and
  // bytes of memory; the best single device is the fastest that runs everything and fits.
  double single_device_seconds(int device) const { return single_seconds_[device]; }
  double single_device_memory(int device) const { return single_memory_[device]; }
  int best_single_device() const { return best_single_; }  // -1 when none
  // The runtime's cost of one run of `plan` beyond its segments (waking the device workers,
  // moving the inputs in and the outputs out, the run's events), once per batch, priced as the
  // runtime runs it: the largest run_overhead figure of the devices it runs on (each measured
  // as a plan on that device alone runs: on run()'s own thread where the device keeps every
  // core busy, else handed to its worker while run()'s thread watches on a core left free);
  // and where the plan is handed to workers whose devices keep every core of a host busy,
  // run()'s thread sleeps until they end, and waking it is one more hand-off (the largest
  // handoff_latency figure of those devices). 0 where nothing is known.
  double run_overhead(const Plan& plan) const;
  // The same for a plan of `device` alone.
  double run_overhead(int device) const { return run_overheads_[device]; }
  // The share by which another plan must be predicted better than `plan` (or `plan` than it)
  // to be told apart: PlanOptions::split_margin, or more where a device `plan` runs on was
  // calibrated while the machine's speed moved more (CostModel::speed_drift): its figures
  // carry that much of the machine's phase.
  double split_margin(const Plan& plan) const;
  // How many of its host's cores a device's work keeps busy while it runs, as its backend
  // declares it (Backend::busy_host_cores): a CPU device's own, every core for a PJRT CPU
  // plugin, one for an accelerator (its worker waits on it awake).
  int busy_host_cores(int device) const { return busy_host_cores_[device]; }
  // lower_bound (plan/evaluate.h) for this problem's objective, and every objective's, computed
  // once.
  double bound() const { return bound_; }
  const LowerBounds& bounds() const { return bounds_; }

 private:
  void validate_runnable() const;
  void build_transfers_and_paths();
  void build_single_device_figures();
  void build_device_classes();
  void build_memory_groups();

  // Per device pair from one device: the transfer's latency and bandwidth (0 when unreachable).
  struct TransferRow {
    std::vector<double> latency, bandwidth;
  };
  const TransferRow& transfer_row(int from) const;

  const Graph* graph_ = nullptr;
  std::string batch_refusal_;
  const CostModel& cost_;
  PlanOptions options_;
  LowerBounds bounds_;
  std::vector<std::vector<double>> seconds_;
  std::vector<std::vector<std::pair<int, double>>> successors_, predecessors_;
  std::vector<double> weight_bytes_, output_bytes_, final_output_bytes_;
  std::vector<std::vector<std::pair<int, double>>> graph_inputs_read_;
  // Filled a row at a time as pairs are asked for (const methods: once per row, thread-safe).
  mutable std::vector<TransferRow> transfer_rows_;
  mutable std::unique_ptr<std::once_flag[]> transfer_row_once_;
  mutable std::mutex paths_mutex_;
  mutable std::unordered_map<int64_t, std::vector<Cluster::Hop>> paths_;  // from * D + to
  std::vector<std::vector<OutputValue>> values_out_;
  std::vector<bool> allowed_;
  std::vector<int> device_class_;
  int class_count_ = 0;
  // Per node and cost twin (CostModel::cost_twin; `twin_slot_` per device), the roofline's
  // parts of its time; empty for synthetic problems.
  struct OpParts {
    double compute = 0, memory = 0, weights = 0, main_memory = 0;
  };
  std::vector<int> twin_slot_;
  std::vector<std::vector<OpParts>> parts_;
  std::vector<int> memory_group_;
  std::vector<double> memory_share_;  // per device: its main memory alone over its host's
  std::vector<int> device_cores_;
  int host_cores_ = 1;
  std::vector<double> single_seconds_, single_memory_;
  int best_single_ = -1;
  double bound_ = 0;
  std::vector<double> run_overheads_;      // per device, 0 where unknown
  std::vector<double> handoff_latencies_;  // per device, 0 where unknown
  std::vector<int> busy_host_cores_;
  std::vector<int> host_of_device_;  // an index per distinct host id
  int host_count_ = 0;
};

}  // namespace tandem
