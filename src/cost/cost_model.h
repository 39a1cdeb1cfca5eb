#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/activation_layout.h"
#include "cost/bandwidth_curve.h"
#include "cost/matmul_efficiency.h"
#include "cost/work_curve.h"
#include "devices/cluster.h"
#include "devices/profile.h"
#include "devices/routing.h"
#include "ir/graph.h"

namespace tandem {

// What limits an op's time on a device.
enum class Bound { kCompute, kMemory, kOverhead };
std::string_view bound_name(Bound bound);  // "compute", "memory", "overhead"

// One op's predicted time on one device, its parts, and where the figures came from.
struct OpTime {
  double seconds = 0;  // +infinity when the device cannot run the op
  // The roofline's parts: seconds = max(compute, memory) + overhead, unless the time was measured
  // (then the parts stay the roofline's, for comparison). For Loop and If, each part is the sum
  // over the ops run (and seconds the sum of their times), so seconds >= max + overhead.
  double compute_seconds = 0;
  double memory_seconds = 0;
  double overhead_seconds = 0;
  // The part of memory_seconds that main memory serves (past the caches): the traffic devices
  // sharing a host's memory slow each other in (PlanningProblem::contended_seconds_for_share).
  double main_memory_seconds = 0;
  // The part of memory_seconds that reads the op's constants (its weights): read once per run of
  // the op, whatever share of the batch it runs on (PlanningProblem::seconds_for_share).
  double weight_seconds = 0;
  Bound bound = Bound::kOverhead;
  // "preset nvidia-h100-sxm", "calibration <file>", "measured op in <file>", "view, no kernel",
  // "cannot run on <device>", or a cluster file's own source for explicit figures.
  std::string source;
};

struct CostOptions {
  // fp32 matmuls on GPU tensor cores as TF32 (PyTorch's allow_tf32). Off by default, as in
  // ONNX Runtime and PyTorch: fp32 matmuls run on the CUDA cores at the fp32 vector peak.
  bool tf32 = false;
};

struct Backend;

// Bytes a node reads that another core wrote: from an op on one thread into one split across
// the threads (spread), or back (gather).
struct CrossCoreBytes {
  double spread = 0, gather = 0;
};

// One input of a node that an op before it in the graph wrote or read: its bytes, and the bytes
// of the distinct tensors touched since (its own included), the cache it is read from.
struct InputDistance {
  double bytes = 0, distance = 0;
};

// The time of ops and transfers on a cluster's devices and links (docs/COST_MODEL.md).
class CostModel {
 public:
  // Reads the calibration profile each device names (`profile:`), once per file; throws
  // InputError for a bad one.
  explicit CostModel(const Cluster& cluster, CostOptions options = {});
  // Profiles already in memory, by device index; a device's `profile` field names its file.
  CostModel(const Cluster& cluster, const std::map<int, CalibrationProfile>& profiles,
            CostOptions options = {});

  // The cluster as costed: every figure a device's profile measured (its own figures, and the
  // bandwidth of its links to its host) replaces the preset's or the cluster file's.
  const Cluster& cluster() const { return cluster_; }
  const DeviceFigures& figures(int device) const { return cluster_.devices[device].figures; }

  // Seconds for one execution of `node` on `device`; +infinity when it cannot run there.
  double op_seconds(const Node& node, const Graph& graph, int device) const {
    return op_time(node, graph, device).seconds;
  }
  OpTime op_time(const Node& node, const Graph& graph, int device) const;

  // Seconds to move `bytes` from one device to another over Cluster::path, store and forward:
  // every hop pays its latency and the bytes at its bandwidth in the direction crossed, except
  // that hops joined at a switch are one stretch: their latencies and the bytes once, at the
  // stretch's least bandwidth (path_seconds). Zero for the same device.
  double transfer_seconds(double bytes, int from_device, int to_device) const;
  double hop_seconds(double bytes, const Cluster::Hop& hop) const;
  // Seconds to copy `bytes` between `device` and its host's memory, into the device when
  // `to_device`: latency + bytes / bandwidth of its link to its host, in that direction. 0 for a
  // device that computes in host memory (the CPU backend's, a CPU that only plans); a PJRT
  // device copies, its CPU plugin included.
  double host_copy_seconds(double bytes, int device, bool to_device) const;
  // The same for a path given (Router::path's, Cluster::path's).
  double path_seconds(double bytes, std::span<const Cluster::Hop> path) const;
  // transfer_seconds(bytes, from_device, to) for every device `to` and each of `sizes`: one
  // routing search for them all. result[size][to], bit for bit transfer_seconds's figure.
  std::vector<std::vector<double>> transfer_seconds_from(int from_device,
                                                         std::span<const double> sizes) const;
  // Whether crossing `hop` arrives at a switch: the transfer goes on over the next hop without
  // being staged (arrives_at_switch, devices/routing.h).
  bool relays(const Cluster::Hop& hop) const {
    return to_switch_[2 * static_cast<size_t>(hop.link) + (hop.forward ? 1 : 0)];
  }
  // The cluster's routes, its routing graph built once (devices/routing.h).
  const Router& router() const { return *router_; }
  // Bytes per second of main memory for the device alone (its bandwidth curve past the caches,
  // else its memory_bandwidth figure), and for its host's CPUs all at once (the host's profile,
  // docs/CLUSTERS.md; else the most any one of its CPU devices has alone); 0 where unknown.
  double main_memory_bandwidth(int device) const;
  double host_memory_bandwidth(const std::string& host) const;
  // How far the machine's speed moved while the device's profile was measured
  // (CalibrationProfile::speed_drift), 0 without one.
  double speed_drift(int device) const;
  // The time of the speed reference when the device's profile was measured
  // (CalibrationProfile::speed_reference), 0 without one.
  double speed_reference(int device) const;

  // The layout `node`'s kernel reads and writes on `device`, as its backend declares it for
  // `graph` (cached by graph); the ONNX layout where the backend keeps it.
  ActivationLayout activation_layout(const Node& node, const Graph& graph, int device) const;

  // The first device whose ops cost exactly what this one's do (the same kind, backend, plugin,
  // preset, cores, profile and figures, sources included): op_time on either gives the same.
  // A cluster of 8,192 alike GPUs is costed once per op, not 8,192 times.
  int cost_twin(int device) const { return cost_twin_[device]; }

 private:
  struct DeviceModel {
    std::shared_ptr<const CalibrationProfile> profile;  // null without one
    std::string profile_file;
    MatmulEfficiency matmul;
    BandwidthCurve bandwidth;     // empty without a calibrated curve
    BandwidthCurve weights;       // by a run's weight bytes; empty without a calibrated curve
    BandwidthCurve conv_weights;  // the same for spatial convolutions' weights
    // The share of a spatial convolution's streamed weights' time that its compute hides (and
    // of its compute that the weights hide, whichever is shorter): 1, the longer of the two
    // alone, where the profile measured no streamed convolution.
    double conv_weights_hidden = 1;
    // The same for a matrix product's constant weights (MatMul, Gemm), where the profile
    // measured a streamed product.
    double product_weights_hidden = 1;
    // Depthwise convolutions' kernel times by FLOPs, less a Conv's fixed cost, by the layouts
    // they read and write (depthwise_layout_key).
    std::map<std::string, WorkCurve, std::less<>> depthwise;
    // Kinds timed by elements (the profile's op_element_curves), their fixed cost left out; a
    // kind that works along rows, in the longest rows it was timed in.
    std::map<std::string, WorkCurve, std::less<>> element_curves;
    // A kind that works along rows, also timed in shorter rows: that curve and both lengths.
    struct ShortRows {
      double row = 0, long_row = 0;
      WorkCurve curve;
    };
    std::map<std::string, ShortRows, std::less<>> short_rows;
    // Copies timed by their contiguous runs (op_run_curves), their fixed cost left out.
    std::map<std::string, WorkCurve, std::less<>> run_curves;
    // A convolution's reorders of an NCHW input in and of its output out, by their bytes.
    BandwidthCurve reorder_in, reorder_out;
    // What the first reader of a matrix product's output pays beyond reading it warm: the
    // profile's points, by ascending bytes.
    std::vector<CalibrationProfile::BandwidthPoint> product_output_reads;
    // What the last writer of a matrix product's input pays beyond writing one an elementwise
    // op reads: the profile's points, by ascending bytes.
    std::vector<CalibrationProfile::BandwidthPoint> product_input_writes;
    // What a tensor costs to pass from a kernel on one thread to one split among the threads
    // (spread) and back (gather), by its bytes: the profile's points, ascending.
    std::vector<CalibrationProfile::BandwidthPoint> cross_core_spread, cross_core_gather;
    // Spatial convolutions' (kernels larger than 1x1) times by their GEMM FLOPs, less a Conv's
    // fixed cost; empty where they run on the GEMM curve.
    WorkCurve convolutions;
  };
  // Bytes of the constants a run of `graph` on `device` reads (its weights: each once, or once
  // per product that reads it where the device's products keep copies of their own), cached by
  // graph.
  double run_weight_bytes(const Graph& graph, int device) const;
  // Bytes of `node`'s inputs and output that a compiled program keeps inside one loop (values
  // between two elementwise ops, read by nothing else), cached by graph; 0 for a node not of
  // `graph`.
  double bytes_inside_loops(const Node& node, const Graph& graph) const;
  // Bytes of `node`'s inputs that a matrix product wrote (through views) and that `node`, not
  // itself a product or a view, is the first in the graph's order to read; cached by graph; 0
  // for a node not of `graph`.
  double product_output_bytes_read(const Node& node, const Graph& graph) const;
  // How far back each of `node`'s inputs was last touched, in bytes of the distinct tensors
  // touched since (input_distances_by_node); cached by graph; none for a node not of `graph`.
  std::vector<InputDistance> input_distances(const Node& node, const Graph& graph) const;
  // Bytes of `node`'s outputs that a matrix product reads (through views), `node` not itself a
  // product or a view; cached by graph; 0 for a node not of `graph`.
  double product_input_bytes_written(const Node& node, const Graph& graph) const;
  // Bytes of `node`'s same-sized inputs that an op its backend splits among the threads the
  // other way wrote (ThreadSplit; through views), `node` splitting across them (spread) or
  // running on one thread (gather); cached by graph and backend; 0 where the backend declares
  // no splits or for a node not of `graph`.
  CrossCoreBytes cross_core_bytes(const Node& node, const Graph& graph, int device) const;
  // `node`'s figure in `cache`'s entry for `graph`, which `compute` (one figure per node) makes
  // anew when the graph changed since it was made; Figure{} for a node not of `graph`.
  template <typename Figure = double>
  struct NodeFigures {
    size_t values = 0, nodes = 0;  // the graph's size when made, to notice a new graph
    std::vector<Figure> by_node;
  };
  template <typename Figure>
  Figure per_node_figure(std::map<const Graph*, NodeFigures<Figure>>& cache, const Node& node,
                         const Graph& graph, std::vector<Figure> (*compute)(const Graph&)) const;

  OpTime op_time_in(const Node& node, const Graph& graph, int device, double weight_bytes) const;

  // `profile_file`: where the profile came from, for figures' sources.
  void add_device(int device, std::shared_ptr<const CalibrationProfile> profile,
                  const std::string& profile_file);
  // `weight_bytes`: the weights of the run the op is part of (their working set).
  OpTime roofline(const Node& node, const Graph& graph, int device, double weight_bytes) const;
  double vector_op_rate(const DeviceModel& model, const Node& node, Precision precision) const;
  // What a kind that works along rows takes beyond its curve for `elements` in rows of its
  // node's length, per row; 0 for other kinds.
  static double short_rows_seconds(const DeviceModel& model, const Node& node, const Graph& graph,
                                   double elements);
  // Loop and If: the ops of the body (times its trip count) or of the branch taken.
  OpTime control_flow(const Node& node, const Graph& graph, int device, double weight_bytes) const;
  // The label of a figure's source as OpTime::source gives it.
  std::string source_of(const Figure& figure, int device) const;

  // Routes, switch ends and cost twins, once the devices' profiles have set the figures.
  void build_indices();

  Cluster cluster_;
  CostOptions options_;
  std::vector<DeviceModel> devices_;
  std::optional<Router> router_;
  std::vector<bool> to_switch_;  // per link and direction (2 * link + forward)
  // Per device: its link to its host (-1: none), and whether the link's forward is to the host.
  std::vector<std::pair<int, bool>> host_link_;
  std::vector<int> cost_twin_;
  std::map<std::string, double, std::less<>> host_memory_bandwidth_;  // from hosts' profiles
  struct WeightBytes {
    size_t values = 0, nodes = 0;  // the graph's size when counted, to notice a new graph
    double bytes = 0;
    // The further copies where each product keeps its own (Backend::product_weight_copies): a
    // constant read by k products, k - 1 more times its bytes.
    double product_copies = 0;
  };
  // One figure per node of a graph, as a backend declares or prices it, cached by graph and
  // backend.
  template <typename Figure>
  struct BackendFigures {
    size_t values = 0, nodes = 0;  // as WeightBytes
    std::vector<Figure> by_node;
  };
  template <typename Figure>
  using BackendCache = std::map<std::pair<const Graph*, BackendKind>, BackendFigures<Figure>>;
  // `node`'s figure in `cache`, which `compute` (the graph's figures for the backend) makes anew
  // when the graph changed since it was made; Figure{} for a node not of `graph`. Takes
  // cache_mutex_.
  template <typename Figure, typename Compute>
  Figure backend_figure(BackendCache<Figure>& cache, const Node& node, const Graph& graph,
                        const Backend& backend, Compute compute) const;
  mutable std::mutex cache_mutex_;  // guards the caches below
  mutable std::map<const Graph*, WeightBytes> weight_bytes_;
  mutable BackendCache<ActivationLayout> layouts_;
  mutable BackendCache<CrossCoreBytes> cross_cores_;
  mutable std::map<const Graph*, NodeFigures<>> loop_bytes_;
  mutable std::map<const Graph*, NodeFigures<>> product_output_bytes_;
  mutable std::map<const Graph*, NodeFigures<>> product_input_bytes_;
  mutable std::map<const Graph*, NodeFigures<std::vector<InputDistance>>> input_distances_;
};

}  // namespace tandem
