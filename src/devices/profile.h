#pragma once
#include <map>
#include <string>
#include <vector>

#include "devices/cluster.h"
#include "ir/graph.h"

namespace tandem {

// What `tandem calibrate` measured on one device: its figures, a GEMM efficiency curve, and
// the time of individual ops by signature. A cluster file names it with `profile:`; measured
// figures and op times take precedence over presets and the roofline (history-based, as
// StarPU does).
struct CalibrationProfile {
  int version = 1;
  std::string device_name;  // e.g. "cpu: Intel Xeon ..., 2 threads"
  DeviceKind kind = DeviceKind::kCpu;
  int threads = 0;
  DeviceFigures figures;  // sources read "calibration <file>"
  struct GemmPoint {
    int64_t m = 0, n = 0, k = 0;
    double seconds = 0;
    // Products of that shape in one op, as attention's heads are: one call, its batch split among
    // the threads (8 products of 32^3 took 4.8 us on one thread of a 2-vCPU Xeon, one 1.4).
    int64_t batch = 1;
  };
  // Square and skinny shapes, small to large; batches of small squares.
  std::vector<GemmPoint> gemm_curve;
  // Elementwise traffic from in-cache to beyond the caches: an fp32 Add's bytes (read +
  // written, as the IR counts them) and its time. memory_bandwidth is the largest point's rate.
  struct BandwidthPoint {
    double bytes = 0;
    double seconds = 0;
  };
  std::vector<BandwidthPoint> bandwidth_curve;  // ascending bytes
  // Weights are read once per run, so whether they are still in a cache depends on all the
  // weights a run reads: chains of weight-bound MatMuls (2 rows), each point the run's weight
  // bytes and the chain's kernel time (its ops' own times; on a compiled device the run less
  // its fixed cost and one dispatch per op). Empty in older profiles.
  std::vector<BandwidthPoint> weight_curve;  // ascending bytes
  // The same for spatial convolutions' weights: chains of 3x3 convolutions of 512 channels on
  // 2x2 images (a late layer at a small input), each point the run's weight bytes and the
  // chain's kernel time, as above. Past the caches they get through their weights at well under
  // the MatMuls' rate (their blocked weights, read tap by tap). Empty in older profiles.
  std::vector<BandwidthPoint> conv_weight_curve;  // ascending bytes
  // A late layer's convolution that computes while its weights stream past the caches: a
  // chain of 3x3 convolutions of 512 channels on 7x7 images (49 output rows), its GEMM FLOPs,
  // one convolution's weight bytes, the chain's (the run's) and one convolution's kernel time.
  // How much of the weights' time its compute hides (CostModel) follows from it; where absent,
  // the longer of the two hides the other whole. Empty in older profiles.
  struct StreamedConvPoint {
    double flops = 0, weight_bytes = 0, run_weight_bytes = 0, seconds = 0;
  };
  std::vector<StreamedConvPoint> streamed_conv_points;
  // The same for fp32 matrix products: a chain of m x k by k x n products, each with weights of
  // its own, their bytes together past the caches (the run's weight bytes), and one product's
  // kernel time. On a 2-vCPU Xeon, one core, 32x512 by 512x512 products took 112-127 us with
  // their weights in L2 and 135-140 streaming 16 MiB, in two of three alternations. Empty in
  // older profiles.
  struct StreamedProductPoint {
    int64_t m = 0, k = 0, n = 0;
    double run_weight_bytes = 0, seconds = 0;
  };
  std::vector<StreamedProductPoint> streamed_product_points;
  // Depthwise convolutions (one channel per group), whose time is not a GEMM's: kernel times by
  // FLOPs, MobileNet-like shapes, one curve per layout the kernel reads and writes
  // (depthwise_layout_key: the CPU's channels-last chains make a reorder in or out, or none).
  // Empty in older profiles and on compiled devices.
  struct WorkPoint {
    double flops = 0;
    double seconds = 0;
  };
  std::map<std::string, std::vector<WorkPoint>> depthwise_curves;
  // Spatial convolutions (kernels larger than 1x1, not depthwise) where they are not the GEMM's
  // kernels: times by one convolution's GEMM FLOPs, its fixed cost included, measured in chains
  // as models have them (ResNet's 3x3 ones, tens of output rows or more). XLA runs them through
  // Eigen's spatial convolution, packing image patches on every call, not through its dots.
  // Empty in older profiles and on the CPU backend, whose oneDNN convolutions share its GEMM
  // kernels (and whose lone NCHW timings include reorders priced apart).
  std::vector<WorkPoint> conv_curve;  // ascending FLOPs
  // A convolution's reorder of an NCHW input into the layout its kernel computes in, and of its
  // output back, by the activation's bytes: 1x1 Convs timed with the side NCHW less the same
  // with it channels-last. Empty in older profiles and where no kernel reorders.
  std::vector<BandwidthPoint> reorder_in_curve, reorder_out_curve;
  // What reading a matrix product's output costs the op that reads it first beyond reading a
  // tensor an elementwise op wrote, by the tensor's bytes (ascending): a MatMul then Negs in a
  // chain, the first Neg's kernel time less the second's, 0 where it was no slower (a tensor
  // past the caches is read as slowly either way). The product writes in blocks, partitioned
  // among the threads otherwise than an elementwise kernel reads, with its weights streamed
  // through the caches meanwhile: on a 2-vCPU Xeon a Neg of a 128x1024 product's output took
  // 26 us, the Neg after it 13. Empty in older profiles and on compiled devices.
  std::vector<BandwidthPoint> product_output_read_curve;
  // What writing a tensor that a matrix product reads costs the op that writes it beyond
  // writing one an elementwise op reads, by the tensor's bytes (ascending): a Neg between two
  // MatMuls less the first Neg after a MatMul alone, 0 where it was no slower. The product's
  // threads read the tensor on their own cores, and the next run's writer takes the lines back
  // (on a 2-vCPU Xeon, a Neg of 64x128 floats took 5.2 us between two products, 2.1 before a
  // Neg). Empty in older profiles and on compiled devices.
  std::vector<BandwidthPoint> product_input_write_curve;
  // What a tensor costs to pass between a kernel that runs on one thread and one that splits
  // its output in ranges among all the threads (ThreadSplit), by the tensor's bytes
  // (ascending): the part the other cores read, or wrote, moves between the cores' caches. Each
  // point is a chain of 4 ops of one split then 4 of the other, less the mean of 8 of each
  // alone, 0 where it was no slower (on a 2-vCPU Xeon, 128 KiB cost 30 us going from one thread
  // to both, 9.6 coming back). `spread`: from one thread to all; `gather`: from all to one.
  // Empty in older profiles, on one thread and on compiled devices.
  std::vector<BandwidthPoint> cross_core_spread_curve, cross_core_gather_curve;
  std::map<std::string, double> op_seconds;  // op_signature -> median seconds per call
  // Executor costs that are not a kernel's (absent in profiles written before they were
  // measured: then a view costs nothing and a subgraph run only its ops):
  // - the step of a view (Reshape, Squeeze...: no kernel runs, the executor still takes a step);
  Figure view_overhead;
  // - one run of a Loop body or an If branch beyond its ops' own times (the body's inputs,
  //   constants and outputs, the condition, the carried values).
  Figure subgraph_run_overhead;
  // - a Loop's iteration beyond its body's ops (its iteration number and condition made, the
  //   condition read, carried values passed on, scan slices kept and stacked); a profile without
  //   it prices an iteration as a subgraph run.
  Figure loop_iteration_overhead;
  // How far the machine's speed moved while it was calibrated: a 256^3 product timed at the
  // calibration's start, three times between benchmarks and at its end, the slowest over the
  // fastest less 1 (0.27: one took 27% longer than another). Its figures carry that much of the
  // machine's phase, so that a plan predicted faster by less is not told apart from the one it
  // beats (PlanningProblem::split_margin). Absent in older profiles.
  Figure speed_drift;
  // That product's time: the median of its five timings. `tandem run --cluster` times it again
  // on the device after its runs and says how far the machine's speed has moved since. Absent in
  // older profiles.
  Figure speed_reference;
  // A device with memory of its own: the fixed time of one copy between it and its host, as a
  // plan's run pays it (calibrate/runtime_costs.h; the PJRT CPU plugin: 1.9 us on the 2-vCPU VM,
  // where 3 Adds fed from 4 inputs ran 7-8 us slower than from one). The cost model prices each
  // input moved in and each output moved out with it (the host link's latency). Absent in older
  // profiles and on a CPU, whose host link is its hand-off between workers.
  Figure host_link_latency;
  // In-cache rates of the vector op types whose work the IR counts as one FLOP per element
  // (Tanh, Erf, Sigmoid, Exp, Gelu: transcendental functions), vector_op_key -> IR-counted FLOP/s,
  // kernel time less the dispatch overhead. Ops of these types run at their own rate rather
  // than at the vector peak.
  std::map<std::string, double> vector_op_rates;
  // Kernel times of the kinds whose CPU kernels run in loops of their own, below the memory
  // curve's and the vector peak's rates (a Transpose, Concat, Slice, Gather, EmbeddingBag, Pad,
  // Resize, NonZero, TopK, NonMaxSuppression; a bias Add, a Softmax, a LayerNormalization), by
  // rated_elements, at three sizes (16 KiB to 1 MiB of fp32): op type -> points in ascending
  // elements. An op of such a type takes at least its kind's time for its elements. Empty in
  // older profiles and on compiled devices (XLA fuses them into its loops).
  // A kind that works along rows (row_length) costs per row as well as per element (a Softmax of
  // 32768 floats took 21.7 us in rows of 256 and 48.9 in rows of 16, on one thread of a 2-vCPU
  // Xeon, linear in the rows between): it is timed at both lengths, each point with its `row`.
  struct ElementPoint {
    double elements = 0;
    double seconds = 0;
    double row = 0;  // the rows' length for a kind that works along rows; else 0
  };
  std::map<std::string, std::vector<ElementPoint>> op_element_curves;
  // Copies in short runs, which cost per run rather than per element (a Gather of one column of
  // a detector's 3234x91 scores took 12 us, priced 1 by its elements; a Concat of 3234 rows of
  // four floats 65 us, priced 2): a Gather's and a Concat's kernel time by the contiguous runs
  // they copy (copy_runs), runs of one element, at three sizes: op type -> points in ascending
  // runs. An op of such a type takes at least its kind's time for its runs. Empty in older
  // profiles and on compiled devices.
  struct RunPoint {
    double runs = 0;
    double seconds = 0;
  };
  std::map<std::string, std::vector<RunPoint>> op_run_curves;
  // What an op of each type costs when its work is negligible (small instances in a chain
  // through the executor: the executor's step and the kernel's fixed costs, such as a oneDNN
  // primitive's entry), op type -> seconds. The dispatch figure (figures.launch_overhead) is
  // the mean over a mix of kinds; an op of a type measured here costs its own. Views are
  // `view_overhead`'s. Empty in older profiles and on compiled devices.
  std::map<std::string, double> op_overheads;
  // Copies between host memory and the device. A CPU has no device copy: this is host
  // memcpy bandwidth, the figure a host-to-host-memory link gets.
  Figure host_link_bandwidth;
  // Everything measured, as `tandem calibrate` prints it: conv shapes, in-cache rates...
  struct Measurement {
    std::string name;  // "gemm 1024x1024x1024", "elementwise bandwidth 48 KiB"
    double value = 0;
    std::string unit;    // "FLOP/s", "B/s", "s"
    std::string method;  // how it was measured
  };
  std::vector<Measurement> measurements;
};

// "nchw-nchw", "nhwc-nchw", "nchw-nhwc" or "nhwc-nhwc": a depthwise curve's layouts, in then out.
std::string depthwise_layout_key(bool input_channels_last, bool output_channels_last);

// A node's kind in vector_op_rates: its op type, and "Gelu:tanh" for a Gelu of the tanh
// approximation, another kernel (2.5x the erf one's time on a 2-vCPU Xeon).
std::string vector_op_key(const Node& node);

// What an op_element_curves curve counts: the elements of the node's first output, which these
// kernels' loops write one by one (a 2x Resize computes four outputs per input); the first
// input's where the output's size depends on the data (a NonZero scans its input) or is its
// reduction (a GlobalAveragePool reads each plane to write one value, a TopK each row to write
// its k); an EmbeddingBag's elements read (its indices times a table row's), as its bags may
// hold one row or hundreds; a NonMaxSuppression's box pairs compared where none is suppressed.
// 0 when they are not static.
double rated_elements(const Node& node, const Graph& graph);

// The length of the rows a Softmax, LogSoftmax (along the last axis) or LayerNormalization
// normalizes, or a GlobalAveragePool averages (its planes), in elements; 0 for other ops,
// another axis and shapes that are not static.
double row_length(const Node& node, const Graph& graph);

// What an op_run_curves curve counts: the contiguous runs a copy op moves, a Gather's one per
// index and outer row (its run the dims after the axis), a Concat's one per input and outer row
// (each input's run its dims from the axis on). 0 for other ops and shapes that are not static.
double copy_runs(const Node& node, const Graph& graph);

// A key that identifies an op's work exactly: op type, input and output dtypes and shapes,
// attributes (tensors by content hash, subgraphs by their ops).
std::string op_signature(const Node& node, const Graph& graph);

// JSON files, versioned; read_profile throws InputError (subject: the file) on bad input.
CalibrationProfile read_profile(const std::string& path);
void write_profile(const std::string& path, const CalibrationProfile& profile);

}  // namespace tandem
