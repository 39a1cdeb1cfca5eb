#include "calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/kernel_registry.h"
#include "calibrate/bench_graph.h"
#include "calibrate/host.h"
#include "calibrate/microbench.h"
#include "calibrate/runtime_costs.h"
#include "ir/op_schema.h"
#include "util/statistics.h"

namespace tandem::calibrate {
namespace {

constexpr size_t kFp32 = static_cast<size_t>(Precision::kFp32);

// "1024x1024x1024": shapes in measurement names.
std::string joined(std::initializer_list<int64_t> sizes) {
  std::string text;
  for (int64_t size : sizes) {
    if (!text.empty()) text += 'x';
    text += std::to_string(size);
  }
  return text;
}

// "48 KiB", "192 MiB": sizes in measurement names.
std::string binary_size(double bytes) {
  const auto whole = static_cast<int64_t>(bytes);
  return whole >= (int64_t{1} << 20) ? std::to_string(whole >> 20) + " MiB"
                                     : std::to_string(whole >> 10) + " KiB";
}

struct GemmShape {
  int64_t m, n, k;
  int64_t batch = 1;
};

// "gemm 512x512x512", "gemm 8 of 32x32x32".
std::string gemm_name(int64_t batch, int64_t m, int64_t n, int64_t k) {
  return "gemm " + (batch > 1 ? std::to_string(batch) + " of " : std::string()) + joined({m, n, k});
}

struct ConvShape {
  int64_t batch, channels, height, width, filters, kernel, stride;
};

// Square sizes trace the efficiency curve from dispatch-bound to peak; skinny ones are the
// shapes models have, and the cost model prices a product near one as far off the squares as it
// ran (a batch of a few rows, a transformer's 32, 64 and 256 tokens by its widths, tall thin
// products); batches of small squares, attention's heads (8 and 32 of them), run as one call.
// On one thread of a 2-vCPU Xeon, 64-row products ran at 171-177 GFLOP/s where squares of their
// FLOPs ran at 195-200; 32-row ones at 160-167 where 64-row ones ran at 170-171.
std::vector<GemmShape> gemm_shapes(bool quick) {
  if (quick) {
    return {{32, 32, 32},  {64, 64, 64},   {128, 128, 128}, {256, 256, 256},
            {1, 256, 256}, {16, 512, 256}, {64, 64, 64, 8}};
  }
  return {{32, 32, 32},     {64, 64, 64},     {128, 128, 128},    {256, 256, 256},
          {384, 384, 384},  {512, 512, 512},  {768, 768, 768},    {1024, 1024, 1024},
          {1, 1024, 1024},  {16, 1024, 1024}, {128, 3072, 768},   {128, 768, 3072},
          {256, 512, 512},  {256, 1024, 256}, {256, 256, 1024},   {256, 1536, 384},
          {256, 384, 1536}, {64, 256, 256},   {64, 1024, 256},    {64, 256, 1024},
          {32, 256, 256},   {32, 1024, 256},  {32, 256, 1024},    {4096, 64, 64},
          {256, 256, 4096}, {32, 32, 32, 8},  {64, 64, 64, 8},    {128, 128, 128, 8},
          {32, 32, 32, 32}, {64, 64, 64, 32}, {128, 128, 128, 32}};
}

// A ResNet stem, 3x3 body convs from 56x56 down to the 2x2 images of a late layer at a small
// input (few output rows, many channels), and a 1x1 bottleneck, on the CPU backend. Recorded,
// not used by the cost model: alone, with their weights in cache, even the 2x2 ones run near the
// GEMM curve (docs/BENCHMARKS.md), so a model's slow late layers are its weights' streaming, not
// the convolutions' shape.
std::vector<ConvShape> conv_shapes(bool quick) {
  if (quick) return {{1, 16, 32, 32, 16, 3, 1}, {2, 128, 2, 2, 128, 3, 1}};
  return {{1, 3, 224, 224, 64, 7, 2},  {1, 64, 56, 56, 64, 3, 1}, {1, 128, 28, 28, 128, 3, 1},
          {1, 256, 14, 14, 256, 3, 1}, {1, 512, 7, 7, 512, 3, 1}, {2, 256, 4, 4, 256, 3, 1},
          {2, 512, 2, 2, 512, 3, 1},   {1, 256, 56, 56, 64, 1, 1}};
}

// The convolution curve's chains, spatial kernels only (a 1x1 convolution is a GEMM: XLA makes
// it a dot) and tens of output rows or more: ResNet's 3x3 body convs from 56x56 down to 7x7,
// the same FLOPs over few channels and large images or many channels and small ones (2x slower
// on few channels: a product 16 columns wide), small ones, and a stem's 3 channels. A
// convolution of a few rows (a late layer's 2x2 images) is bound by its weights, as the conv
// weight curve measures: on this curve its FLOPs would price an early layer's as slow.
std::vector<ConvPairShape> conv_pair_shapes(bool quick) {
  if (quick) return {{1, 16, 32, 32, 16, 3}, {2, 32, 8, 8, 32, 3}};
  return {{1, 64, 56, 56, 64, 3}, {1, 128, 28, 28, 128, 3}, {1, 256, 14, 14, 256, 3},
          {1, 512, 7, 7, 512, 3}, {2, 16, 32, 32, 16, 3},   {2, 64, 8, 8, 64, 3},
          {1, 16, 16, 16, 16, 3}, {2, 3, 64, 64, 16, 3}};
}

// Depthwise convolutions as MobileNets and SSDLite have them, from a late 4x4 layer to a first
// 112x112 one, 3x3 and 5x5, stride 1 and 2.
std::vector<ConvLayerShape> depthwise_shapes(bool quick) {
  if (quick) return {{2, 32, 16, 16, 3, 1}, {1, 64, 56, 56, 3, 1}};
  return {{1, 128, 4, 4, 3, 1},  {2, 32, 16, 16, 3, 1},  {1, 16, 112, 112, 3, 2},
          {1, 88, 28, 28, 3, 1}, {1, 576, 7, 7, 5, 1},   {1, 240, 14, 14, 5, 1},
          {1, 64, 56, 56, 3, 1}, {1, 32, 112, 112, 3, 1}};
}

// Elements per Add operand, from in-L1 to well past the last-level cache (the largest is
// 64 MiB per operand; 192 MiB of traffic). Two more where the cores' L2 ends: on a 2-vCPU Xeon
// (2 MiB of L2 each) 3 MiB of traffic moved at 205 GB/s and 12 MiB at 59, and between them
// the curve priced gpt's 2x128x2048 elementwise ops (6 MiB) at 110 GB/s, which ran at 60-70.
std::vector<int64_t> bandwidth_sizes(bool quick) {
  if (quick) return {int64_t{4} << 10, int64_t{64} << 10, int64_t{4} << 20};
  return {int64_t{4} << 10,   int64_t{16} << 10,  int64_t{64} << 10,
          int64_t{256} << 10, int64_t{384} << 10, int64_t{512} << 10,
          int64_t{1} << 20,   int64_t{4} << 20,   int64_t{16} << 20};
}

// Weight chains: (edge of the square weights, MatMuls), from 1 MiB of weights per run to 64 MiB.
// Convolutions per chain for the conv weight curve (9 MiB of weights each): from in the
// last-level cache to past it.
std::vector<int> conv_weight_chains(bool quick) {
  if (quick) return {1, 2};
  return {1, 2, 4, 7};
}

std::vector<std::pair<int64_t, int>> weight_chains(bool quick) {
  if (quick) return {{256, 4}, {512, 4}};
  return {{256, 4}, {512, 4}, {1024, 4}, {1024, 8}, {1024, 16}};
}

Repetition repetition_for(const CalibrationOptions& options) {
  return options.quick ? Repetition{5, 50, 0.03} : Repetition{7, 1000, 0.6};
}

double reference_seconds(Device& device, const Repetition& repetition) {
  constexpr int64_t kSide = 256;
  OpBench bench(device, single_op_graph("MatMul", {{{DType::kFloat32, {kSide, kSide}}},
                                                   {{DType::kFloat32, {kSide, kSide}}, true}}));
  return bench.run_seconds(repetition);
}

std::string median_note(const Repetition& repetition) {
  return "median of >= " + std::to_string(repetition.min_runs) +
         " runs (of the runs at full speed, after more, where another process contended)";
}

// A measured figure; its source names the profile and how it was measured.
Figure measured(double value, const CalibrationOptions& options, const std::string& method) {
  Figure figure;
  figure.value = value;
  figure.source = "calibration " + options.profile_path + ": " + method;
  return figure;
}

class Suite {
 public:
  Suite(Device& device, const CalibrationOptions& options, CalibrationProfile& profile)
      : device_(device),
        options_(options),
        profile_(profile),
        repetition_(repetition_for(options)),
        chooses_layouts_(dynamic_cast<cpu::CpuDevice*>(&device) != nullptr) {}

  // Every benchmark, between timings of one product (at the start, three between benchmarks,
  // at the end): on a VM other tenants can change the machine's speed by tens of percent within
  // minutes (a 512^3 GEMM took 1.01 ms in one calibration and 1.03-1.68 ms in the five minutes
  // after it), and the figures between them are then at different speeds.
  void run() {
    const double before = speed_reference("at the start");
    benchmarks();
    const double after = speed_reference("at the end");
    const double change = after / before;
    contention_log().speed_change = change;
    const auto [fastest, slowest] =
        std::minmax_element(reference_timings_.begin(), reference_timings_.end());
    // The planner's margin: how far the machine's speed moved, the middle of the calibration
    // included (a one-thread calibration timed 161.7 and 162.7 us first and last, 184-199
    // between).
    profile_.speed_drift =
        measured(*slowest / *fastest - 1,
                 "the speed reference's " + std::to_string(reference_timings_.size()) +
                     " timings through the calibration, the slowest over the fastest, less 1");
    profile_.speed_reference =
        measured(median(reference_timings_),
                 "a 256x256x256 fp32 MatMul run through the executor, the median of its " +
                     std::to_string(reference_timings_.size()) +
                     " timings through the calibration (at its start, between benchmarks and at "
                     "its end)");
  }

 private:
  // A 256^3 product's run time through the executor (dispatch and, on a compiled device, the
  // program's fixed cost included: the same every time).
  // Timed at the start, the end and between benchmarks: a quarter-second window of it lies
  // 10% from its median in a typical window on a shared VM (bench/machine_steadiness.py), so the
  // profile keeps the median of all of them as its speed.
  double speed_reference(const std::string& when) {
    const double seconds = reference_seconds(device_, repetition_);
    reference_timings_.push_back(seconds);
    record("speed reference " + when, seconds, "s",
           "a 256x256x256 fp32 MatMul run through the executor, timed at the calibration's start, "
           "between benchmarks and at its end, " +
               median_note());
    return seconds;
  }

  void benchmarks() {
    if (device_.compiled()) {
      // Every benchmark below runs as a program of its own: its fixed cost comes first, so
      // that the rates can leave it out. Compiled programs have no view steps or Loops.
      program_overhead();
      gemm_curve();
      speed_reference("after GEMMs");
      convolution_curve();
      bandwidth_curve();
      weight_curve();
      speed_reference("after weights");
      conv_weight_curve();
      streamed_conv_point();
      streamed_product_point();
      speed_reference("after streaming");
      compiled_depthwise_curve();
      vector_throughput();
      return;
    }
    // An accelerator's node timed alone waits for the device: that wait is measured first, so
    // that every kernel time below leaves it out.
    if (eager_accelerator()) dispatch_overhead();
    gemm_curve();
    speed_reference("after GEMMs");
    // oneDNN's convolutions run the CPU's GEMM kernels (and a lone one's time includes reorders
    // priced apart): recorded alone. Another eager backend's (cuDNN's) are a curve of their own.
    if (chooses_layouts_)
      convolutions();
    else
      convolution_curve();
    bandwidth_curve();
    if (!eager_accelerator()) dispatch_overhead();  // before the rates below, which exclude it
    weight_curve();
    speed_reference("after weights");
    conv_weight_curve();
    streamed_conv_point();
    streamed_product_point();
    speed_reference("after streaming");
    depthwise_curves();
    reorder_curves();
    product_output_reads();
    cross_core_handoffs();
    view_overhead();
    subgraph_run_overhead();
    loop_iteration_overhead();
    vector_throughput();
    element_curves();
    run_curves();
  }

  // An accelerator whose nodes run one by one (the CUDA backend's): a node timed alone waits for
  // the device, which a stream of its ops does not. A compiled one (PJRT) runs programs, whose
  // fixed cost program_overhead() measures instead.
  bool eager_accelerator() const {
    return profile_.kind != DeviceKind::kCpu && !device_.compiled();
  }

  Figure measured(double value, const std::string& method) const {
    return calibrate::measured(value, options_, method);
  }
  std::string median_note() const { return calibrate::median_note(repetition_); }

  // A benchmark's kernel time: on a compiled device the program's run, less what running any
  // program costs beyond one op's share (moving arguments in and results out, the launch).
  // When that fixed cost is most of the run, the difference is noise: no kernel time (nullopt),
  // and the benchmark is recorded but left out of the curves and peaks.
  std::optional<double> kernel_seconds(OpBench& bench) {
    const double run = without_wait(bench.node_seconds(repetition_));
    if (program_extra_ > 0 && run - program_extra_ < 0.5 * run) return std::nullopt;
    return run - program_extra_;
  }
  // A node's time alone less what an eager accelerator's node costs beyond its kernel; a
  // kernel near the size of that wait keeps a twentieth of its time rather than none.
  double without_wait(double seconds) const {
    return node_wait_ > 0 ? std::max(seconds - node_wait_, 0.05 * seconds) : seconds;
  }
  static constexpr const char* kSwamped =
      "whole program run: its fixed cost is most of it, so this size is left out of the curve";

  void record(const std::string& name, double value, const std::string& unit,
              const std::string& method) {
    profile_.measurements.push_back({name, value, unit, method});
    if (options_.progress) options_.progress(profile_.measurements.back());
  }

  // XLA's CPU plugin runs a product large enough to split across its threads on a pool whose
  // threads sleep between programs, and a program's first such product waits for them to wake:
  // on a 2-vCPU VM a 128^3 product took 50-137 us as a program of its own and 26-27 us more in
  // a chain of them. A model's program pays that wake once at most, and its other ops hide it
  // (bert and gpt at batch 2 were priced 55-125% slow with it in every product). A lone product
  // paid it in some seconds and not in others, so a lone product less a wake measured apart
  // came out at up to 4x the machine's peak (4096x64x64 at 1.2 TFLOP/s; 128^3 at 711 GFLOP/s
  // beside 256^3 at 290). So such a
  // product is timed as a model holds it: a chain of further products less the chain's first,
  // per further product, with at least 2 ms of them (8 at most) to outweigh the wake.
  static constexpr int64_t kThreadedProduct = int64_t{128} * 128 * 128;
  std::optional<double> chained_product_seconds(int64_t m, int64_t k, int64_t n, double best_rate) {
    constexpr double kFurtherWork = 2e-3;
    constexpr int kMostFurther = 8;
    const double flops = 2.0 * static_cast<double>(m * n * k);
    int further = best_rate > 0 ? static_cast<int>(std::ceil(kFurtherWork * best_rate / flops))
                                : kMostFurther;
    further = std::clamp(further, 1, kMostFurther);
    // Where the chain turns m x n back to m x k, a further product is half of a pair of shapes
    // of equal FLOPs (m x k x n and m x n x k): whole pairs only.
    if (n != k) further += further % 2;
    OpBench first(device_, product_chain(m, k, n, 1));
    OpBench chain(device_, product_chain(m, k, n, 1 + further));
    const double seconds = per_unit_difference(chain, first, further, repetition_);
    if (seconds <= 0) return std::nullopt;
    return seconds;
  }

  // An eager device's points are timed in rounds, each point once a round, and each takes the
  // median of its rounds: the 2-vCPU VM ran at two speeds about 10% apart for seconds at a time,
  // and points timed one after another took whichever they fell in (512^3 at 412 GFLOP/s beside
  // 256x512x512 at 454), which a product priced by the shapes near it inherits.
  static constexpr int kGemmRounds = 5;

  void gemm_curve() {
    struct Rounds {
      size_t point;
      std::unique_ptr<OpBench> bench;
      int64_t blocks;
      std::string name, method;
      std::vector<double> seconds;
    };
    std::vector<Rounds> eager;
    const int rounds = options_.quick ? 1 : kGemmRounds;
    const Repetition round{repetition_.min_runs, repetition_.max_runs,
                           repetition_.budget_seconds / rounds};
    double best_rate = 0;
    std::string best_name;
    for (const GemmShape& shape : gemm_shapes(options_.quick)) {
      // A compiled device times single products in chains of them (below); its batched ones
      // are priced by their FLOPs on its curve.
      if (shape.batch > 1 && device_.compiled()) continue;
      // A long product is timed in blocks (1024^3 ran 1.8x slower beside one spinning process,
      // its blocks of 128 rows not at all; on a quiet machine the blocks take within a few
      // percent of the whole). A batch is of small products, timed whole.
      const double flops = 2.0 * static_cast<double>(shape.batch * shape.m * shape.n * shape.k);
      // XLA's CPU plugin ran 128x3072x768 in four blocks of 768 columns at 86 GFLOP/s, whole
      // at 116: a compiled device's products are split by rows only.
      const GemmBlocks blocks =
          shape.batch > 1 ? GemmBlocks{}
                          : gemm_blocks(shape.m, shape.n, shape.k, best_rate, !device_.compiled());
      const GemmShape block{shape.m / blocks.rows, shape.n / blocks.columns,
                            shape.k / blocks.depth};
      const std::string name = gemm_name(shape.batch, shape.m, shape.n, shape.k);
      const std::string in_blocks =
          blocks.count() > 1 ? " of " + std::to_string(blocks.count()) + " blocks of " +
                                   joined({block.m, block.n, block.k}) + " each timed alone"
                             : std::string();
      std::optional<double> block_seconds;
      if (device_.compiled() && block.m * block.n * block.k >= kThreadedProduct) {
        block_seconds = chained_product_seconds(block.m, block.k, block.n, best_rate);
        if (!block_seconds) {
          record(name, 0, "FLOP/s", "a chain of products no slower than one: left out");
          continue;
        }
      } else if (device_.compiled()) {
        OpBench bench(device_,
                      single_op_graph("MatMul", {{{DType::kFloat32, {block.m, block.k}}},
                                                 {{DType::kFloat32, {block.k, block.n}}, true}}));
        block_seconds = kernel_seconds(bench);
        if (!block_seconds) {
          record(name, bench.cost().flops / bench.run_seconds(repetition_), "FLOP/s", kSwamped);
          continue;
        }
      } else {
        // Its input written by a Neg each run, as a model's is: the threads then fetch their
        // parts of it from the core that wrote it (a 64x128x128 product took 9.6 us on an input
        // left in their caches, 15.6 written by a Neg, 13.7-15.3 written by a product).
        auto bench = std::make_unique<OpBench>(
            device_, shape.batch > 1
                         ? batched_product_after_negs(shape.batch, block.m, block.k, block.n)
                         : product_after_neg(block.m, block.k, block.n));
        block_seconds = without_wait(bench->per_node_seconds(round).back());
        eager.push_back(
            {profile_.gemm_curve.size(),
             std::move(bench),
             blocks.count(),
             name,
             std::string(shape.batch > 1 ? "fp32 batched MatMul, A and B written by Negs each run"
                                         : "fp32 MatMul m x n x k, constant B, A written by a Neg "
                                           "each run") +
                 ", kernel time" + in_blocks + ", the median of " + std::to_string(rounds) +
                 " rounds (every shape once a round) of the " + calibrate::median_note(round),
             {*block_seconds}});
      }
      const double seconds = *block_seconds * static_cast<double>(blocks.count());
      profile_.gemm_curve.push_back({shape.m, shape.n, shape.k, seconds, shape.batch});
      const double rate = flops / seconds;
      if (device_.compiled()) {
        record(name, rate, "FLOP/s",
               "fp32 MatMul m x n x k, constant B, kernel time (from 128^3 up: a chain of them "
               "less its first product, per further product, the median of 3 such pairs)" +
                   in_blocks + ", " + median_note());
      }
      if (rate > best_rate) {
        best_rate = rate;
        best_name = name;
      }
    }
    for (int r = 1; r < rounds; ++r) {
      for (Rounds& point : eager)
        point.seconds.push_back(without_wait(point.bench->per_node_seconds(round).back()));
    }
    const auto rate_of = [](const CalibrationProfile::GemmPoint& point) {
      return 2.0 * static_cast<double>(point.batch * point.m * point.n * point.k) / point.seconds;
    };
    for (Rounds& point : eager) {
      CalibrationProfile::GemmPoint& figure = profile_.gemm_curve[point.point];
      figure.seconds = median(point.seconds) * static_cast<double>(point.blocks);
      record(point.name, rate_of(figure), "FLOP/s", point.method);
    }
    best_rate = 0;
    for (const CalibrationProfile::GemmPoint& point : profile_.gemm_curve) {
      if (rate_of(point) <= best_rate) continue;
      best_rate = rate_of(point);
      best_name = gemm_name(point.batch, point.m, point.n, point.k);
    }
    profile_.figures.matrix_flops[kFp32] =
        measured(best_rate, "best fp32 GEMM of the curve (" + best_name + ")");
  }

  void convolutions() {
    for (const ConvShape& shape : conv_shapes(options_.quick)) {
      const int64_t pad = shape.kernel / 2;
      OpBench bench(
          device_,
          single_op_graph(
              "Conv",
              {{{DType::kFloat32, {shape.batch, shape.channels, shape.height, shape.width}}},
               {{DType::kFloat32, {shape.filters, shape.channels, shape.kernel, shape.kernel}},
                true},
               {{DType::kFloat32, {shape.filters}}, true}},
              {{"kernel_shape", std::vector<int64_t>{shape.kernel, shape.kernel}},
               {"strides", std::vector<int64_t>{shape.stride, shape.stride}},
               {"pads", std::vector<int64_t>{pad, pad, pad, pad}}}));
      const std::string name = "conv " +
                               joined({shape.batch, shape.channels, shape.height, shape.width}) +
                               " -> " + std::to_string(shape.filters) + " k" +
                               std::to_string(shape.kernel) + " s" + std::to_string(shape.stride);
      const std::optional<double> seconds = kernel_seconds(bench);
      if (!seconds) {
        record(name, bench.cost().flops / bench.run_seconds(repetition_), "FLOP/s", kSwamped);
        continue;
      }
      record(name, bench.cost().flops / *seconds, "FLOP/s",
             "fp32 Conv with bias, constant weights, kernel time, " + median_note());
    }
  }

  // Convolutions as a model runs them, one after another: a chain of three pairs less a chain
  // of one, so that what a program does at its ends cancels (XLA's change to channels-last and
  // back, as much as a small convolution itself). Each point is a quarter of the difference at
  // one convolution's GEMM FLOPs, its fixed cost included.
  void convolution_curve() {
    constexpr int kMoreConvs = 4;
    for (const ConvPairShape& shape : conv_pair_shapes(options_.quick)) {
      OpBench shorter(device_, conv_pair_chain(shape, 1));
      OpBench longer(device_, conv_pair_chain(shape, 1 + kMoreConvs / 2));
      const double more = longer.run_seconds(repetition_) - shorter.run_seconds(repetition_);
      const double flops =
          2.0 * static_cast<double>(shape.batch * shape.height * shape.width * shape.channels *
                                    shape.filters * shape.kernel * shape.kernel);
      const std::string name = "conv chain " +
                               joined({shape.batch, shape.channels, shape.height, shape.width}) +
                               " -> " + std::to_string(shape.filters) + " -> " +
                               std::to_string(shape.channels) + " k" + std::to_string(shape.kernel);
      const std::string method =
          "fp32 Convs with bias, constant weights, pairs of them (there and back) in a chain: "
          "a chain of three pairs less a chain of one, FLOPs / a quarter of that time, " +
          median_note();
      if (more <= 0) {
        record(name, 0, "FLOP/s", method + " (no slower than one pair: left out)");
        continue;
      }
      const double seconds = more / kMoreConvs;
      profile_.conv_curve.push_back({flops, seconds});
      record(name, flops / seconds, "FLOP/s", method);
    }
    std::sort(profile_.conv_curve.begin(), profile_.conv_curve.end(),
              [](const auto& a, const auto& b) { return a.flops < b.flops; });
  }

  // Bytes as the IR counts them (each input read once, the output written once), so the
  // rates divide the same bytes the cost model will.
  void bandwidth_curve() {
    std::string method;
    double rate = 0;
    for (int64_t elements : bandwidth_sizes(options_.quick)) {
      if (device_.compiled() && elements <= kAddsBetweenProducts) {
        compiled_add_point(elements);
        continue;
      }
      const TensorType operand{DType::kFloat32, {elements}};
      OpBench bench(device_, single_op_graph("Add", {{operand}, {operand}}));
      const std::string name = "elementwise bandwidth " + binary_size(bench.cost().bytes);
      const std::optional<double> seconds = kernel_seconds(bench);
      if (!seconds) {
        record(name, bench.cost().bytes / bench.run_seconds(repetition_), "B/s", kSwamped);
        continue;
      }
      profile_.bandwidth_curve.push_back({bench.cost().bytes, *seconds});
      rate = bench.cost().bytes / *seconds;
      method = "fp32 Add of two " + binary_size(static_cast<double>(elements) * 4) +
               " tensors, bytes read + written / kernel time, " + median_note();
      record(name, rate, "B/s", method);
    }
    // The largest operands are past the caches: main memory.
    profile_.figures.memory_bandwidth = measured(rate, method);
  }

  // What each of `units` ops adds to a compiled device's chain: `with`'s run less `without`'s
  // (the same chain without them), per op, the median of 3 such pairs.
  double per_unit_difference(OpBench& with, OpBench& without, int units,
                             const Repetition& repetition) {
    std::vector<double> differences;
    for (int pair = 0; pair < 3; ++pair) {
      differences.push_back((with.run_seconds(repetition) - without.run_seconds(repetition)) /
                            units);
    }
    return median(differences);
  }

  // A small Add as a program of its own took 5 us in some seconds and 18 in others on XLA's
  // CPU plugin (2-vCPU VM), and that floor priced each of bert's 32 KiB elementwise ops at
  // 15-18 us, where the model ran them in a few. So on a compiled device an Add of up to 256K
  // elements is timed between products, as a model has it: a chain of 8 products each followed
  // by the Add, less the chain without them, per Add, the median of 3 such pairs.
  static constexpr int64_t kAddsBetweenProducts = int64_t{256} << 10;
  void compiled_add_point(int64_t elements) {
    constexpr int kUnits = 8;
    OpBench with(device_, product_add_chain(elements, kUnits, true));
    OpBench without(device_, product_add_chain(elements, kUnits, false));
    const double bytes = with.graph().nodes[1].cost.bytes;
    const std::string name = "elementwise bandwidth " + binary_size(bytes);
    const std::string method =
        "fp32 Add of " + std::to_string(elements) +
        " elements and a constant after a product, a chain of " + std::to_string(kUnits) +
        " less the products alone, per Add, the median of 3 such pairs, " + median_note();
    const double seconds = per_unit_difference(with, without, kUnits, repetition_);
    if (seconds <= 0) {
      record(name, 0, "B/s", method + " (no slower than without: left out)");
      return;
    }
    profile_.bandwidth_curve.push_back({bytes, seconds});
    record(name, bytes / seconds, "B/s", method);
  }

  // The IR counts real FLOPs for arithmetic and normalizations but one op per element for
  // transcendental functions, so the vector figure is the best rate of ops it counts
  // faithfully. The transcendental ops are timed too: their rates (kernel time less the
  // dispatch overhead) go to `vector_op_rates`, which the cost model uses for their types.
  void vector_throughput() {
    // 64 KiB per tensor: in cache. A compiled device's program costs tens of microseconds
    // whatever it does, so its tiles are 16 times larger (1 MiB: in the last-level cache). An
    // eager accelerator's kernel over 64 KiB is its launch and the wait for it (a LayerNorm of 16K
    // floats took 18 us on an H200, "7 GFLOP/s", which priced bert's 2x128x384 at 2.2x its
    // measured time): its tiles are 16 MiB, still in an H200's 60 MB L2.
    const int64_t rows = eager_accelerator()  ? 16384
                         : device_.compiled() ? 1024
                                              : 64,
                  columns = 256;
    const TensorType tile{DType::kFloat32, {rows, columns}};
    const TensorType row{DType::kFloat32, {columns}};
    struct Candidate {
      std::string op;
      Graph graph;
      bool counts_flops;
    };
    std::vector<Candidate> candidates;
    candidates.push_back({"Mul", single_op_graph("Mul", {{tile}, {tile}}), true});
    candidates.push_back({"LayerNormalization",
                          single_op_graph("LayerNormalization", {{tile}, {row, true}, {row, true}},
                                          {{"axis", int64_t{-1}}}),
                          true});
    candidates.push_back({"Softmax", single_op_graph("Softmax", {{tile}}), true});
    // Each named by its vector_op_key: the tanh approximation of Gelu is another kernel (2.5x
    // the erf one's time on a 2-vCPU Xeon).
    std::vector<Graph> transcendental;
    for (const char* op : {"Tanh", "Erf", "Sigmoid", "Exp", "Gelu"})
      transcendental.push_back(single_op_graph(op, {{tile}}));
    transcendental.push_back(
        single_op_graph("Gelu", {{tile}}, {{"approximate", std::string("tanh")}}));
    for (Graph& graph : transcendental) {
      std::string key = vector_op_key(graph.nodes.front());
      candidates.push_back({std::move(key), std::move(graph), false});
    }
    // An eager accelerator's kernel times have left their launch out already (without_wait).
    const double dispatch = eager_accelerator() ? 0.0 : profile_.figures.launch_overhead.value;
    double best_rate = 0;
    std::string best_op;
    for (Candidate& candidate : candidates) {
      OpBench bench(device_, std::move(candidate.graph));
      const std::optional<double> kernel = kernel_seconds(bench);
      if (!kernel) {
        record("vector fp32 (" + candidate.op + ")",
               bench.cost().flops / bench.run_seconds(repetition_), "FLOP/s", kSwamped);
        continue;
      }
      const double seconds = *kernel;
      const double rate = bench.cost().flops / seconds;
      record("vector fp32 (" + candidate.op + ")", rate, "FLOP/s",
             "fp32 " + candidate.op + " over " + joined({rows, columns}) +
                 " in-cache elements, FLOPs as the IR counts them" +
                 (candidate.counts_flops ? "" : " (one per element)") + " / kernel time, " +
                 median_note());
      if (!candidate.counts_flops && seconds > dispatch) {
        profile_.vector_op_rates[candidate.op] = bench.cost().flops / (seconds - dispatch);
      }
      if (candidate.counts_flops && rate > best_rate) {
        best_rate = rate;
        best_op = candidate.op;
      }
    }
    profile_.figures.vector_flops[kFp32] =
        measured(best_rate, "best in-cache fp32 elementwise or normalization rate (" + best_op +
                                "), FLOPs as the IR counts them / kernel time, " + median_note());
  }

  // Kinds whose kernels run in loops of their own run below the memory curve's and the vector
  // peak's rates (a detector's 3234-element NonZero took 9 µs, priced 1 µs by its bytes; a
  // bias Add over 8192 elements 4–7 µs, priced 1.3): each kind's kernel time at three sizes,
  // by the elements it writes (rated_elements).
  // The kinds that work along rows, timed in rows of 256 there, again in rows of 16: their cost
  // per row.
  void element_curves() {
    const auto keep = [&](const std::string& op_type, double elements, double seconds,
                          const Graph& graph) {
      profile_.op_element_curves[op_type].push_back(
          {elements, seconds, row_length(graph.nodes.front(), graph)});
    };
    kind_curves({4096, 32768, 262144}, element_kind_graphs, rated_elements, "elements",
                "kernel time, elements written (a NonZero: read), ", keep);
    constexpr int64_t kShortRow = 16;
    kind_curves(
        {4096, 32768, 262144},
        [](int64_t elements) { return row_kind_graphs(elements, kShortRow); }, rated_elements,
        "elements in rows of " + std::to_string(kShortRow), "kernel time, elements written, ",
        keep);
  }

  // Copies in short runs cost per run, which the element curves' long runs do not show: each
  // kind's kernel time at three counts of one-element runs (copy_runs).
  void run_curves() {
    kind_curves({1024, 8192, 65536}, run_kind_graphs, copy_runs, "runs",
                "kernel time, one-element runs copied, ",
                [&](const std::string& op_type, double runs, double seconds, const Graph&) {
                  profile_.op_run_curves[op_type].push_back({runs, seconds});
                });
  }

  // Each kind's kernel time at three sizes of the graphs `make` gives, by the work `count`
  // rates them at (in `unit`), points out of order measured again; each point, with its bench's
  // graph, to `keep`.
  template <typename Make, typename Count, typename Keep>
  void kind_curves(std::initializer_list<int64_t> sizes, Make make, Count count,
                   const std::string& unit, const std::string& method, Keep keep) {
    std::map<std::string, std::vector<std::unique_ptr<OpBench>>> benches;
    for (const int64_t size : sizes) {
      for (KindGraph& kind : make(size))
        benches[kind.op_type].push_back(std::make_unique<OpBench>(device_, std::move(kind.graph)));
    }
    for (const auto& [op_type, kind_benches] : benches) {
      std::vector<double> work, seconds;
      for (const auto& bench : kind_benches) {
        work.push_back(count(bench->graph().nodes.front(), bench->graph()));
        seconds.push_back(without_wait(bench->node_seconds(repetition_)));
      }
      settle_curve(work, seconds, [&](size_t i) {
        return without_wait(kind_benches[i]->node_seconds(repetition_));
      });
      for (size_t i = 0; i < kind_benches.size(); ++i) {
        keep(op_type, work[i], seconds[i], kind_benches[i]->graph());
        record(op_type + " of " + std::to_string(static_cast<int64_t>(work[i])) + " " + unit,
               seconds[i], "s", method + median_note());
      }
    }
  }

  // Ops whose work is negligible: what remains is the executor's step, the kernel's entry
  // and its fixed costs (argument checks, small allocations, thread-pool wake-ups).
  void dispatch_overhead() {
    constexpr int kRepeats = 8;
    OpBench bench(device_, tiny_op_mix(kRepeats));
    const size_t nodes = bench.graph().nodes.size();
    const double seconds = bench.run_seconds(repetition_) / static_cast<double>(nodes);
    const std::string method = "a chain of " + std::to_string(nodes) +
                               " small ops of 14 kinds on 4x16 tensors, run through the "
                               "executor, run time / ops, " +
                               median_note();
    record("dispatch per op", seconds, "s", method);
    profile_.figures.launch_overhead = measured(seconds, method);
    if (eager_accelerator()) {
      // Each of these nodes timed alone took its launch and the wait for the device (12.9 us
      // on an H200, against 6.8 per op in a stream): the mean of those is the wait.
      const std::vector<double> alone = bench.per_node_seconds(repetition_);
      if (!alone.empty()) {
        node_wait_ =
            std::accumulate(alone.begin(), alone.end(), 0.0) / static_cast<double>(alone.size());
        record("node wait", node_wait_, "s",
               "the mean time of the chain's nodes each timed alone to the end of its kernel, "
               "left out of every kernel time below, " +
                   median_note());
      }
    }
    // Each kind's own cost: a node's kernel time plus the executor's step (a run's time per op
    // less the kernels' mean), the median over the nodes of that kind in two mixes. A oneDNN
    // primitive's entry costs microseconds where an elementwise loop's costs a fraction of one.
    std::map<std::string, std::vector<double>> costs;
    add_node_costs(bench, seconds, costs);
    OpBench layers(device_, tiny_layer_mix(kRepeats));
    add_node_costs(
        layers, layers.run_seconds(repetition_) / static_cast<double>(layers.graph().nodes.size()),
        costs);
    for (auto& [op_type, node_costs] : costs) {
      const double overhead = median(node_costs);
      profile_.op_overheads[op_type] = overhead;
      record("op overhead (" + op_type + ")", overhead, "s",
             "small ops in chains on 4x16 and 1x16x4x4 tensors, the executor's step (run time "
             "per op less the mean kernel time) + the kernel time, median over " +
                 std::to_string(node_costs.size()) + " nodes of the kind, " + median_note());
    }
  }

  // Each node's kernel time plus the executor's step, by op type (views left out: theirs is
  // the view step).
  void add_node_costs(OpBench& bench, double seconds_per_op,
                      std::map<std::string, std::vector<double>>& costs) {
    std::vector<double> kernels = bench.per_node_seconds(repetition_);
    if (kernels.empty()) return;
    // On an accelerator a kind's cost in a stream is the stream's per-op time, more or less by
    // how much longer than the mix's mean its node took alone.
    for (double& kernel : kernels) kernel = without_wait(kernel);
    double kernel_sum = 0;
    for (double kernel : kernels) kernel_sum += kernel;
    const double step =
        std::max(0.0, seconds_per_op - kernel_sum / static_cast<double>(kernels.size()));
    const std::vector<Node>& nodes = bench.graph().nodes;
    for (size_t n = 0; n < nodes.size(); ++n) {
      const OpSchema* schema = OpRegistry::instance().find(nodes[n].op_type);
      if (schema && !schema->output_aliases_input)
        costs[nodes[n].op_type].push_back(step + kernels[n]);
    }
  }

  // A compiled device runs a graph as one program: a program of one tiny op costs the launch
  // and moving its arguments in and its result out (the step overhead); each further op of a
  // program costs its share of the launch, which XLA's fusion makes small (the per-op figure).
  void program_overhead() {
    constexpr int kRepeats = 8;
    const TensorType tiny{DType::kFloat32, {4, 16}};
    OpBench single(device_, single_op_graph("Add", {{tiny}, {tiny}}));
    const double step = single.run_seconds(repetition_);
    OpBench mix(device_, tiny_op_mix(kRepeats));
    const size_t nodes = mix.graph().nodes.size();
    const double per_op =
        std::max(0.0, (mix.run_seconds(repetition_) - step) / static_cast<double>(nodes - 1));
    const std::string step_method =
        "a program of one 4x16 Add, arguments moved in and the "
        "result out, run time (larger operands of the benchmarks "
        "are kept on the device), " +
        median_note();
    const std::string op_method = "a program of a chain of " + std::to_string(nodes) +
                                  " small ops of 14 kinds on 4x16 tensors, (run time less one "
                                  "program step) / further ops, " +
                                  median_note();
    record("program step", step, "s", step_method);
    record("dispatch per op", per_op, "s", op_method);
    profile_.figures.step_overhead = measured(step, step_method);
    profile_.figures.launch_overhead = measured(per_op, op_method);
    program_extra_ = std::max(0.0, step - per_op);
  }

  // A chain's kernel time: on an eager device the sum of its ops' typical kernel times. Each
  // takes under a millisecond, so a stall beside a busy process hits some ops of some runs and
  // each op's median (or 10th percentile) leaves it out; a whole run of several milliseconds
  // was stalled every time (seven 9 MiB convolutions came out at half their quiet rate). On a
  // compiled device, whose program has no per-op times, the run less its fixed cost and one
  // dispatch per op.
  double chain_kernel_seconds(OpBench& bench, int ops) {
    const std::vector<double> kernels = bench.per_node_seconds(repetition_);
    if (!kernels.empty()) {
      double sum = 0;
      for (double kernel : kernels) sum += without_wait(kernel);
      return sum;
    }
    return bench.run_seconds(repetition_) - program_extra_ -
           profile_.figures.launch_overhead.value * ops;
  }
  static constexpr const char* kChainTime =
      "the chain's kernel time (each op's own; a compiled device's run less its fixed cost and "
      "one dispatch per op)";

  // Chains run to time how fast a run's weights are read: each point, the chain's weight bytes
  // by its kernel time less each op's fixed cost (the cost model adds that once, as the op's
  // overhead: in the rate too, it priced an MLP's 512 KiB products at 8.4 us where they ran in
  // 4.8), points out of order measured again.
  struct WeightChain {
    Graph graph;
    int ops;
    double bytes;
    std::string method;
  };
  void weight_chain_curve(const std::string& name, const std::string& op_type,
                          std::vector<WeightChain> chains,
                          std::vector<CalibrationProfile::BandwidthPoint>& curve) {
    // A CPU's kernel times include the kind's fixed cost; an accelerator's leave out its launch
    // (without_wait), a compiled device's its dispatch (chain_kernel_seconds).
    const auto fixed = profile_.op_overheads.find(op_type);
    const double fixed_seconds =
        eager_accelerator() || device_.compiled() || fixed == profile_.op_overheads.end()
            ? 0.0
            : fixed->second;
    std::vector<std::unique_ptr<OpBench>> benches;
    std::vector<double> bytes, seconds;
    const auto streaming = [&](size_t i) {
      return chain_kernel_seconds(*benches[i], chains[i].ops) - chains[i].ops * fixed_seconds;
    };
    for (WeightChain& chain : chains) {
      benches.push_back(std::make_unique<OpBench>(device_, std::move(chain.graph)));
      bytes.push_back(chain.bytes);
      seconds.push_back(streaming(benches.size() - 1));
    }
    settle_curve(bytes, seconds, streaming);
    for (size_t i = 0; i < chains.size(); ++i) {
      if (seconds[i] <= 0) continue;
      curve.push_back({bytes[i], seconds[i]});
      record(name + " " + binary_size(bytes[i]), bytes[i] / seconds[i], "B/s",
             chains[i].method + ", weight bytes / " + kChainTime +
                 (fixed_seconds > 0 ? " less each " + op_type + "'s fixed cost" : "") + ", " +
                 median_note());
    }
  }

  // Weights are read once per run: a chain of MatMuls of 2 rows by square weights (bound by
  // reading the weights), run again and again, from a run's weights in L2 to past the
  // last-level cache. The rate is the run's weight bytes over the chain's kernel time.
  void weight_curve() {
    std::vector<WeightChain> chains;
    for (const auto& [size, count] : weight_chains(options_.quick)) {
      chains.push_back({weight_chain(size, count), count,
                        4.0 * static_cast<double>(size * size * count),
                        std::to_string(count) + " fp32 MatMuls of 2x" + std::to_string(size) +
                            " by " + joined({size, size}) + " constant weights in a chain"});
    }
    weight_chain_curve("weight streaming", "MatMul", std::move(chains), profile_.weight_curve);
  }

  // The weight curve again with a late layer's convolutions in place of the MatMuls: their
  // blocked weights are read tap by tap, and past the caches they stream at a fraction of the
  // MatMuls' rate. The rate includes the convolutions' compute (a small part: 8 output rows).
  void conv_weight_curve() {
    std::vector<WeightChain> chains;
    for (int count : conv_weight_chains(options_.quick)) {
      chains.push_back({conv_weight_chain(count), count, 4.0 * 512 * 512 * 9 * count,
                        std::to_string(count) +
                            " fp32 3x3 Convs of 2x512x2x2 by 512x512x3x3 constant weights in a "
                            "chain"});
    }
    weight_chain_curve("conv weight streaming", "Conv", std::move(chains),
                       profile_.conv_weight_curve);
  }

  // The longest chain of those convolutions again on 1x512x7x7 tensors, where computing takes
  // about as long as the weights' stream: how much of one the other hides. On a 2-vCPU Xeon,
  // ResNet-18's last 3x3 convolutions (GEMM time 510 us, weights 310 us at the run's rate) took
  // 660-700 us, between the longer of the two and their sum.
  void streamed_conv_point() {
    constexpr int64_t kSide = 7, kChannels = 512;
    const int count = conv_weight_chains(options_.quick).back();
    OpBench bench(device_, conv_weight_chain(count, 1, kSide));
    const double seconds = chain_kernel_seconds(bench, count) / count;
    const double flops = 2.0 * kSide * kSide * kChannels * kChannels * 9;
    const double weight_bytes = 4.0 * kChannels * kChannels * 9;
    if (seconds <= 0) return;
    profile_.streamed_conv_points.push_back({flops, weight_bytes, weight_bytes * count, seconds});
    record("streamed convolution", flops / seconds, "FLOP/s",
           std::to_string(count) +
               " fp32 3x3 Convs of 1x512x7x7 by 512x512x3x3 constant weights in a chain, GEMM "
               "FLOPs / " +
               kChainTime + " per Conv, " + median_note());
  }

  // Products that compute while their weights stream past the caches: 32-row products (a
  // transformer's at a small batch) by 512x512 weights of their own, 16 MiB in all. On a
  // 2-vCPU Xeon, one core, they took 135-140 us each against 112-127 with their weights in L2
  // (26 us more for the weights at the run's rate than from L2): the compute hid little of it.
  void streamed_product_point() {
    constexpr int64_t kRows = 32, kSize = 512;
    constexpr int kCount = 16;
    OpBench bench(device_, weight_chain(kSize, kCount, kRows));
    const double seconds = chain_kernel_seconds(bench, kCount) / kCount;
    if (seconds <= 0) return;
    const double weight_bytes = 4.0 * kSize * kSize;
    profile_.streamed_product_points.push_back(
        {kRows, kSize, kSize, weight_bytes * kCount, seconds});
    record("streamed product", 2.0 * kRows * kSize * kSize / seconds, "FLOP/s",
           std::to_string(kCount) + " fp32 MatMuls of " + joined({kRows, kSize}) + " by " +
               joined({kSize, kSize}) + " constant weights in a chain, " + kChainTime +
               " per MatMul, " + median_note());
  }

  // Each depthwise shape in the four layouts the CPU's kernels may read and write (its reorders
  // in and out of channels-last chains cost as much as the convolution), kernel times; on
  // another eager backend, which keeps the ONNX layout, in that one.
  void depthwise_curves() {
    // Each takes microseconds: a tenth of a second of runs is thousands of samples.
    const Repetition repetition = options_.quick ? repetition_ : Repetition{7, 500, 0.1};
    const std::vector<bool> layouts =
        chooses_layouts_ ? std::vector<bool>{false, true} : std::vector<bool>{false};
    struct Point {
      std::unique_ptr<OpBench> bench;
      std::string name;
    };
    constexpr size_t kConv = 1;  // after the Conv or Neg that writes its input
    for (bool in : layouts) {
      for (bool out : layouts) {
        const std::string key = depthwise_layout_key(in, out);
        std::vector<Point> points;
        std::vector<double> flops, seconds;
        const auto time = [&](const Point& point) {
          return point.bench->per_node_seconds(repetition).at(kConv);
        };
        for (const ConvLayerShape& shape : depthwise_shapes(options_.quick)) {
          Point point{std::make_unique<OpBench>(device_, depthwise_in_layout(shape, in, out)),
                      "depthwise " +
                          joined({shape.batch, shape.channels, shape.height, shape.width}) + " k" +
                          std::to_string(shape.kernel) + " s" + std::to_string(shape.stride) + " " +
                          key};
          flops.push_back(point.bench->graph().nodes[kConv].cost.flops);
          seconds.push_back(time(point));
          points.push_back(std::move(point));
        }
        settle_curve(flops, seconds, [&](size_t i) { return time(points[i]); });
        for (size_t i = 0; i < points.size(); ++i) {
          if (seconds[i] <= 0) continue;  // not observed: no point (a profile's times are positive)
          profile_.depthwise_curves[key].push_back({flops[i], seconds[i]});
          record(points[i].name, flops[i] / seconds[i], "FLOP/s",
                 "fp32 depthwise Conv with bias, " + key +
                     " (input: after a 1x1 Conv for nhwc, a Neg for nchw; output: before a 1x1 "
                     "Conv for nhwc), kernel time, " +
                     median_note());
        }
      }
    }
  }

  // XLA keeps a chain of convolutions channels-last, and a depthwise convolution between two
  // 1x1 ones (as MobileNet has them) costs a fraction of its time as a program of its own,
  // whose layout changes at both ends: on a 2-vCPU VM mobilenet_v3_small's eleven took 0.2-0.4
  // ms in the model, and 240x14x14 5x5 alone 309 us. Each point is a chain of 1x1
  // convolutions each followed by the depthwise one, less the same chain without them, per
  // depthwise convolution: the median of 3 such pairs.
  void compiled_depthwise_curve() {
    constexpr int kUnits = 4;
    const Repetition repetition = options_.quick ? repetition_ : Repetition{7, 300, 0.1};
    const std::string key = depthwise_layout_key(false, false);
    struct Point {
      std::unique_ptr<OpBench> with, without;
      std::string name;
    };
    std::vector<Point> points;
    std::vector<double> flops, seconds;
    const auto time = [&](const Point& point) {
      return per_unit_difference(*point.with, *point.without, kUnits, repetition);
    };
    for (const ConvLayerShape& shape : depthwise_shapes(options_.quick)) {
      if (shape.stride != 1) continue;  // a chain keeps its image
      Point point{std::make_unique<OpBench>(device_, pointwise_chain(shape, kUnits, true)),
                  std::make_unique<OpBench>(device_, pointwise_chain(shape, kUnits, false)),
                  "depthwise " + joined({shape.batch, shape.channels, shape.height, shape.width}) +
                      " k" + std::to_string(shape.kernel) + " s1 in a chain"};
      flops.push_back(point.with->graph().nodes[1].cost.flops);
      seconds.push_back(time(point));
      points.push_back(std::move(point));
    }
    settle_curve(flops, seconds, [&](size_t i) { return time(points[i]); });
    for (size_t i = 0; i < points.size(); ++i) {
      const std::string method =
          "fp32 depthwise Conv with bias after a 1x1 Conv, " + std::to_string(kUnits) +
          " such pairs in a chain less the 1x1 Convs alone, per depthwise Conv, the median of 3 "
          "such differences, " +
          median_note();
      if (seconds[i] <= 0) {
        record(points[i].name, 0, "FLOP/s", method + " (no slower than without: left out)");
        continue;
      }
      profile_.depthwise_curves[key].push_back({flops[i], seconds[i]});
      record(points[i].name, flops[i] / seconds[i], "FLOP/s", method);
    }
  }

  // An extra time for handling `bytes` once more (a reorder, a first read, a hand-off between
  // cores), by `measure`: the difference of two timings, either of which a stall can hit (beside
  // a spinning process, 6-22 ms for 64 KiB to 1.5 MiB, where quiet calibrations measured 3-40
  // us). No such extra moves the bytes slower than a 64th of main memory's rate: the slowest
  // measured quiet on the 2-vCPU VM, a hand-off between cores, was 10x faster than that. A
  // slower point is measured again, twice at most, and keeps its fastest timing; nullopt where
  // it stays a stall (left out of the curve, counted as unsettled).
  std::optional<double> plausible_extra(double bytes, const std::function<double()>& measure) {
    double seconds = measure();
    if (profile_.bandwidth_curve.empty()) return seconds;
    const auto& past_caches = profile_.bandwidth_curve.back();
    const double slowest = 64 * bytes * past_caches.seconds / past_caches.bytes;
    for (int again = 0; again < 2 && seconds > slowest; ++again) {
      seconds = std::min(seconds, measure());
      ++contention_log().remeasured;
    }
    if (seconds <= slowest) return seconds;
    ++contention_log().unsettled;
    return std::nullopt;
  }
  static constexpr const char* kStalled =
      " (a stall: slower than moving the bytes at a 64th of main memory's rate after two more "
      "timings; left out)";

  // A convolution with an NCHW side converts it to and from the layout oneDNN computes in: as
  // much as the convolution itself for few channels on a large image (16 channels at 160x160:
  // 1x1 Conv 56 us channels-last both sides, 241 us writing NCHW). Each point: a 1x1 Conv with
  // that side NCHW less the same with both sides channels-last, by the activation's bytes; an
  // NCHW input written just before, by a Neg, as a model's is. The Conv's other side has few
  // channels, so that its compute is small beside the reorder: with as many on both sides, the
  // difference of two ~100 us convolutions priced 256x14x14's reorder at 3.4 to 15.9 us in six
  // calibrations within twenty minutes (it took 12-19 us, 2-vCPU Xeon).
  void reorder_curves() {
    if (!chooses_layouts_) return;  // no other kernel reorders
    const Repetition repetition = options_.quick ? repetition_ : Repetition{7, 500, 0.1};
    const std::vector<std::pair<int64_t, int64_t>> shapes =
        options_.quick
            ? std::vector<std::pair<int64_t, int64_t>>{{16, 32}}
            : std::vector<std::pair<int64_t, int64_t>>{{32, 16}, {16, 32}, {16, 160}, {24, 80},
                                                       {40, 40}, {64, 56}, {96, 28},  {256, 14}};
    constexpr int64_t kFewChannels = 16;
    for (const auto& [channels, side] : shapes) {
      // The reorder's side has `channels`, the other few.
      const auto conv_seconds = [&](bool input, bool in, bool out) {
        OpBench bench(device_, input ? pointwise_in_layout(channels, kFewChannels, side, in, out)
                                     : pointwise_in_layout(kFewChannels, channels, side, in, out));
        return bench.per_node_seconds(repetition).at(1);
      };
      const double bytes = 4.0 * static_cast<double>(channels * side * side);
      const std::string shape = joined({1, channels, side, side});
      for (const bool input : {true, false}) {
        const std::optional<double> extra = plausible_extra(bytes, [&] {
          return (input ? conv_seconds(true, false, true) : conv_seconds(false, true, false)) -
                 conv_seconds(input, true, true);
        });
        const std::string name = std::string("conv reorder ") + (input ? "in " : "out ") + shape;
        const std::string few = std::to_string(kFewChannels) + " channels";
        const std::string method =
            (input ? "a 1x1 Conv of " + shape + " to " + few + ", its input NCHW (written by a Neg)"
                   : "a 1x1 Conv of " + few + " to " + shape + ", its output NCHW") +
            ", less the same with both sides channels-last, bytes / time, " + median_note();
        if (!extra) {
          record(name, 0, "B/s", method + kStalled);
          continue;
        }
        const double seconds = *extra;
        if (seconds <= 0) {
          record(name, 0, "B/s", method + " (no slower: left out)");
          continue;
        }
        (input ? profile_.reorder_in_curve : profile_.reorder_out_curve)
            .push_back({bytes, seconds});
        record(name, bytes / seconds, "B/s", method);
      }
    }
    for (auto* curve : {&profile_.reorder_in_curve, &profile_.reorder_out_curve}) {
      std::sort(curve->begin(), curve->end(),
                [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    }
  }

  // The first op to read a matrix product's output reads it slower than the next one does (on
  // a 2-vCPU Xeon, a Neg of a 128x1024 product's output took 26 us, the Neg after it 13): each
  // point, the first bias Add's kernel time less the second's (a linear layer's Add, what reads
  // most products' outputs in models), by the tensor's bytes; 0 where it was no slower (a 4 MiB
  // output: past the caches either way).
  void product_output_reads() {
    const Repetition repetition = options_.quick ? repetition_ : Repetition{7, 500, 0.1};
    constexpr int64_t kDepth = 256, kWidth = 1024;
    const std::vector<int64_t> rows =
        options_.quick ? std::vector<int64_t>{128} : std::vector<int64_t>{16, 128, 384, 1024};
    if (device_.compiled()) return;  // no per-node times
    for (const int64_t m : rows) {
      OpBench bench(device_, product_then_reads(m, kDepth, kWidth));
      OpBench before_product(device_, product_reads_an_add(m, kDepth, kWidth));
      const double bytes = 4.0 * static_cast<double>(m * kWidth);
      // The first Add's kernel time, after a product and before an Add (the write's baseline):
      // its fastest over the read's timings, as a stall only ever slows a run.
      double first_read = 0;
      const std::optional<double> read = plausible_extra(bytes, [&] {
        const std::vector<double> kernels = bench.per_node_seconds(repetition);
        first_read = first_read > 0 ? std::min(first_read, kernels.at(1)) : kernels.at(1);
        return kernels.at(1) - kernels.at(2);
      });
      const std::string read_name = "first read of a product's output " + joined({m, kWidth});
      const std::string read_method =
          "a " + joined({m, kDepth, kWidth}) +
          " MatMul, then bias Adds in a chain: the first's kernel time less the second's (0 where "
          "no slower), " +
          median_note();
      if (!read) {
        record(read_name, 0, "s", read_method + kStalled);
        continue;  // the write's baseline is the same timing
      }
      profile_.product_output_read_curve.push_back({bytes, std::max(0.0, *read)});
      record(read_name, std::max(0.0, *read), "s", read_method);
      // The same Add again, its output now read by a product.
      const std::optional<double> write = plausible_extra(
          bytes, [&] { return before_product.per_node_seconds(repetition).at(1) - first_read; });
      const std::string write_name = "write of a product's input " + joined({m, kWidth});
      const std::string write_method =
          "the Add above with its output read by a " + joined({m, kWidth, kWidth}) +
          " MatMul: its kernel time less the Add's before an Add (0 where no slower), " +
          median_note();
      if (!write) {
        record(write_name, 0, "s", write_method + kStalled);
        continue;
      }
      profile_.product_input_write_curve.push_back({bytes, std::max(0.0, *write)});
      record(write_name, std::max(0.0, *write), "s", write_method);
    }
  }

  // A tensor passed between a kernel that runs on one thread and one that splits among the
  // threads moves between the cores' caches (on a 2-vCPU Xeon, an Erf-heavy Gelu of 32,768
  // floats took 26 us after a Relu, 7.7 after a Gelu). Timed at the sizes where a cheap kind
  // (Relu) still runs on one thread and a costly one (Erf) splits, as the backend declares
  // them: each point, 4 of one kind then 4 of the other, less the mean of 8 of each, whole runs
  // (the cost lands on whichever op next writes the lines the other core holds).
  void cross_core_handoffs() {
    // The CPU backend's device (the one whose kernels choose layouts) is the one that splits
    // by size; on one thread it hands nothing off.
    if (!chooses_layouts_ || cpu::cpu_threads() < 2) return;
    const Repetition repetition = options_.quick ? repetition_ : Repetition{7, 500, 0.1};
    const auto run_seconds = [&](const std::vector<std::string>& kinds, int64_t elements) {
      OpBench bench(device_, unary_chain(kinds, elements));
      return bench.run_seconds(repetition);
    };
    const auto four = [](const char* kind) { return std::vector<std::string>(4, kind); };
    const auto joined_kinds = [](std::vector<std::string> a, const std::vector<std::string>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    for (const int64_t elements : handoff_sizes(options_.quick)) {
      // The plain chains' mean, timed again beside each mixed chain: the fastest of its timings
      // is the baseline, so that a stall would have to catch every one of them to lower a point.
      double alone = std::numeric_limits<double>::infinity();
      const auto baseline = [&] {
        alone =
            std::min(alone, 0.5 * (run_seconds(joined_kinds(four("Relu"), four("Relu")), elements) +
                                   run_seconds(joined_kinds(four("Erf"), four("Erf")), elements)));
        return alone;
      };
      baseline();
      const double bytes = 4.0 * static_cast<double>(elements);
      for (const bool spread : {true, false}) {
        const std::optional<double> extra = plausible_extra(bytes, [&] {
          const double chain = spread
                                   ? run_seconds(joined_kinds(four("Relu"), four("Erf")), elements)
                                   : run_seconds(joined_kinds(four("Erf"), four("Relu")), elements);
          return chain - baseline();
        });
        const std::string name = std::string(spread ? "hand-off from one thread to all "
                                                    : "hand-off from all threads to one ") +
                                 std::to_string(elements);
        const std::string method =
            std::string("4 ") + (spread ? "Relu then 4 Erf" : "Erf then 4 Relu") + " on " +
            std::to_string(elements) +
            " floats, run time less the mean of 8 Relu's and 8 Erf's (the fastest of that mean's "
            "timings, one beside each mixed chain; 0 where no slower), " +
            median_note();
        if (!extra) {
          record(name, 0, "s", method + kStalled);
          continue;
        }
        (spread ? profile_.cross_core_spread_curve : profile_.cross_core_gather_curve)
            .push_back({bytes, std::max(0.0, *extra)});
        record(name, std::max(0.0, *extra), "s", method);
      }
    }
  }

  // The sizes, in floats, at which a Relu runs on one thread and an Erf splits among the
  // threads (cpu::thread_splits): powers of two and the largest such size tried; one in a quick
  // calibration.
  static std::vector<int64_t> handoff_sizes(bool quick) {
    std::vector<int64_t> sizes;
    int64_t largest = 0;
    for (int64_t power = int64_t{1} << 10; power <= (int64_t{1} << 20); power *= 2) {
      for (const int64_t elements : {power, power - power / 16}) {
        const std::vector<ThreadSplit> splits =
            cpu::thread_splits(unary_chain({"Relu", "Erf"}, elements));
        if (splits[0] != ThreadSplit::kOneThread || splits[1] != ThreadSplit::kOutputRanges)
          continue;
        if (elements == power) sizes.push_back(elements);
        largest = std::max(largest, elements);
      }
    }
    if (largest > 0 && (sizes.empty() || sizes.back() != largest)) sizes.push_back(largest);
    std::sort(sizes.begin(), sizes.end());
    if (quick && !sizes.empty()) return {sizes[sizes.size() / 2]};
    return sizes;
  }

  // A view runs no kernel, but the executor still takes a step for it.
  void view_overhead() {
    constexpr int kViews = 64;
    OpBench bench(device_, view_chain(kViews));
    const size_t nodes = bench.graph().nodes.size();
    const double seconds = bench.run_seconds(repetition_) / static_cast<double>(nodes);
    const std::string method = "a chain of " + std::to_string(nodes) +
                               " Reshapes (views, no kernel) run through the executor, run "
                               "time / ops, " +
                               median_note();
    record("view step", seconds, "s", method);
    profile_.view_overhead = measured(seconds, method);
  }

  // A Loop runs its body once per iteration: what an iteration costs beyond the body's ops.
  void subgraph_run_overhead() {
    constexpr int64_t kTrips = 64;
    OpBench bench(device_, counting_loop(kTrips));
    const double per_trip = bench.node_seconds(repetition_) / static_cast<double>(kTrips);
    // The body's ops: one small Add (a dispatch) and one Identity (a view step).
    const double ops = profile_.figures.launch_overhead.value + profile_.view_overhead.value;
    const double seconds = std::max(0.0, per_trip - ops);
    const std::string method =
        "a Loop of " + std::to_string(kTrips) +
        " iterations over a body of one 4x16 Add and one Identity, Loop time / iterations less "
        "one dispatch and one view step, " +
        median_note();
    record("subgraph run", seconds, "s", method);
    profile_.subgraph_run_overhead = measured(seconds, method);
  }

  // A Loop's iteration costs more than an If's branch run: its iteration number and condition
  // made, the condition read back, the carried values passed on, each scan slice kept and
  // stacked. Measured on an RNN cell as exporters write one, against the same cell's ops in a
  // chain (each priced apart).
  void loop_iteration_overhead() {
    constexpr int64_t kTrips = 16;
    OpBench loop(device_, rnn_loop(kTrips));
    OpBench chain(device_, rnn_chain(kTrips));
    const double difference = loop.run_seconds(repetition_) - chain.run_seconds(repetition_);
    // The Loop node's own step, and the body's two Identities (view steps) priced as its ops.
    const double steps = profile_.figures.launch_overhead.value +
                         2.0 * static_cast<double>(kTrips) * profile_.view_overhead.value;
    const double seconds = std::max(0.0, (difference - steps) / static_cast<double>(kTrips));
    const std::string method =
        "a Loop of " + std::to_string(kTrips) +
        " iterations of an RNN cell (2x64 state: MatMul, bias Add, Tanh; a scan output) less the "
        "cell's ops in a chain, one dispatch and the body's view steps, per iteration, " +
        median_note();
    record("loop iteration", seconds, "s", method);
    profile_.loop_iteration_overhead = measured(seconds, method);
  }

  Device& device_;
  const CalibrationOptions& options_;
  CalibrationProfile& profile_;
  const Repetition repetition_;
  // Whether the device's kernels keep activations in layouts of their own (the CPU's
  // channels-last chains, conv_layout.h); other backends keep the ONNX layout.
  const bool chooses_layouts_;
  double program_extra_ = 0;  // compiled devices: a program's fixed cost beyond one op's
  // An eager accelerator: what a node timed alone costs beyond its kernel (its launch, and the
  // host's wait for the device to finish it), which a stream of ops never waits for.
  double node_wait_ = 0;
  std::vector<double> reference_timings_;  // the speed reference's, in order
};

}  // namespace

GemmBlocks gemm_blocks(int64_t m, int64_t n, int64_t k, double rate, bool across_weights) {
  constexpr double kLongestRun = 1e-3;
  // Fewer rows run below the whole's rate: XLA's CPU plugin timed 128x3072x768 in blocks of 32
  // rows at half the rate of blocks of 64, which itself gives 1024^3 a fifth below 128's. A
  // transformer's 128-token product is split across its weights instead: on a 2-vCPU Xeon,
  // oneDNN ran 128x3072x768 as four blocks of 768 columns, or of 768 deep, within the noise of
  // the whole (2.4-3.3 ms), blocks of 384 or 192 up to a fifth slower.
  constexpr int64_t kFewestRows = 128, kFewestColumns = 512, kFewestDepth = 512;
  GemmBlocks blocks;
  if (rate <= 0) return blocks;
  const auto block_seconds = [&] {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) /
           static_cast<double>(blocks.count()) / rate;
  };
  const auto halve = [&](int64_t size, int64_t fewest, int64_t& count) {
    while (size % (2 * count) == 0 && size / (2 * count) >= fewest && block_seconds() > kLongestRun)
      count *= 2;
  };
  halve(m, kFewestRows, blocks.rows);
  if (!across_weights) return blocks;
  halve(n, kFewestColumns, blocks.columns);
  halve(k, kFewestDepth, blocks.depth);
  return blocks;
}

void measure_kernels(Device& device, const CalibrationOptions& options,
                     CalibrationProfile& profile) {
  Suite(device, options, profile).run();
}

CalibrationProfile calibrate_device(Device& device, DeviceKind kind, std::string device_name,
                                    double memory_bytes, const HostRoundTrip& round_trip,
                                    const CalibrationOptions& options) {
  CalibrationProfile profile;
  profile.kind = kind;
  profile.device_name = std::move(device_name);
  if (memory_bytes > 0) {
    profile.figures.memory_bytes = measured(memory_bytes, options, "reported by the backend");
  }
  measure_kernels(device, options, profile);
  const Repetition repetition = repetition_for(options);
  const DeviceRunCost run = measure_device_run_cost(device, repetition, median_note(repetition));
  profile.figures.run_overhead = measured(run.seconds, options, run.method);
  profile.measurements.push_back({"plan run", run.seconds, "s", run.method});
  if (options.progress) options.progress(profile.measurements.back());
  profile.host_link_latency = measured(run.copy_latency, options, run.copy_method);
  profile.measurements.push_back({"host link latency", run.copy_latency, "s", run.copy_method});
  if (options.progress) options.progress(profile.measurements.back());
  // A batch of inputs' size: a buffer past the allocator's mmap threshold is fresh pages on
  // every copy (the CPU plugin's 64 MiB round trip, 3.4 GiB/s, priced a Relu over a 0.6 MB
  // input at 466 us where it ran in 108-128; its 4 MiB one, 30 GiB/s, at 110).
  const size_t bytes = options.quick ? size_t{1} << 20 : size_t{4} << 20;
  const double seconds = typical_seconds(repetition, [&] { return round_trip(bytes); });
  const std::string method = "host to device and back of " + binary_size(bytes) +
                             ", 2 x bytes / time, " + median_note(repetition);
  const double bandwidth = 2.0 * static_cast<double>(bytes) / seconds;
  profile.host_link_bandwidth = measured(bandwidth, options, method);
  profile.measurements.push_back({"host link (round trip)", bandwidth, "B/s", method});
  if (options.progress) options.progress(profile.measurements.back());
  return profile;
}

double speed_reference_seconds(Device& device, double budget_seconds) {
  const Repetition full = repetition_for(CalibrationOptions{});
  return reference_seconds(device, {full.min_runs, full.max_runs, budget_seconds});
}

CalibrationProfile calibrate_cpu(const CalibrationOptions& options) {
  CalibrationProfile profile;
  profile.kind = DeviceKind::kCpu;
  profile.threads = cpu::cpu_threads();
  profile.device_name = "cpu: " + cpu_model_name() + ", " + std::to_string(profile.threads) +
                        (profile.threads == 1 ? " thread" : " threads");
  profile.figures.memory_bytes =
      measured(physical_memory_bytes(), options, "physical memory (sysconf)");
  cpu::CpuDevice device;
  {
    const cpu::TeamOnDistinctCores team;
    if (team.tried()) contention_log().team_on_distinct_cores = team.pinned();
    measure_kernels(device, options, profile);
  }

  const RuntimeCosts runtime = measure_runtime_costs(profile.threads, repetition_for(options),
                                                     median_note(repetition_for(options)));
  profile.figures.run_overhead = measured(runtime.run_overhead, options, runtime.run_method);
  profile.measurements.push_back({"plan run", runtime.run_overhead, "s", runtime.run_method});
  if (options.progress) options.progress(profile.measurements.back());
  profile.figures.handoff_latency =
      measured(runtime.handoff_latency, options, runtime.handoff_method);
  profile.measurements.push_back(
      {"hand-off per hop", runtime.handoff_latency, "s", runtime.handoff_method});
  if (options.progress) options.progress(profile.measurements.back());

  const size_t bytes = options.quick ? size_t{16} << 20 : size_t{64} << 20;
  const Repetition repetition = repetition_for(options);
  const std::string method = "no device copy on a CPU: host memcpy of " + binary_size(bytes) +
                             ", one thread, " + median_note(repetition);
  const double bandwidth = memcpy_bandwidth(bytes, repetition);
  profile.host_link_bandwidth = measured(bandwidth, options, method);
  profile.measurements.push_back({"host link (memcpy)", bandwidth, "B/s", method});
  if (options.progress) options.progress(profile.measurements.back());
  return profile;
}

}  // namespace tandem::calibrate
