#include "cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "backends/registry.h"
#include "cost/gemm_shape.h"
#include "devices/presets.h"
#include "ir/op_schema.h"

namespace tandem {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// `node`'s index in `graph`; nullopt for a node of another graph (a subgraph's, a copy's), which
// has no place in `graph`'s per-node caches (std::less orders any two pointers).
std::optional<size_t> index_in(const Node& node, const Graph& graph) {
  const std::less<const Node*> before;
  const Node* first = graph.nodes.data();
  if (graph.nodes.empty() || before(&node, first) || !before(&node, first + graph.nodes.size()))
    return std::nullopt;
  return static_cast<size_t>(&node - first);
}

size_t index(Precision precision) { return static_cast<size_t>(precision); }

// Seconds of reading `bytes` of a product's weights at the rate of a run's `run_bytes` beyond
// reading them from the cache they alone fit in, as the GEMM curve's points (one weight, read
// every run) do: 0 where the run's weights fit there too.
double streamed_beyond_cache(const BandwidthCurve& weights, double bytes, double run_bytes) {
  if (!weights.measured() || bytes <= 0) return 0;
  return std::max(0.0, bytes / weights.rate(run_bytes) - bytes / weights.rate(bytes));
}

// The share of the shorter of `compute` and `weights` that a kernel which took `kernel` hid
// behind the other: 0 where it took their sum, 1 where it took no longer than the longer one.
double hidden_share(double compute, double weights, double kernel) {
  return std::clamp((compute + weights - kernel) / std::min(compute, weights), 0.0, 1.0);
}

// Seconds for `bytes` on a curve of extra times by bytes (ascending, some possibly 0): in
// proportion to the bytes below the first point and past the last (0 past a last point of 0),
// linear in log bytes between points.
double extra_seconds(const std::vector<CalibrationProfile::BandwidthPoint>& points, double bytes) {
  if (points.empty() || bytes <= 0) return 0;
  if (bytes <= points.front().bytes) return points.front().seconds * bytes / points.front().bytes;
  if (bytes >= points.back().bytes) return points.back().seconds * bytes / points.back().bytes;
  const auto above = std::upper_bound(points.begin(), points.end(), bytes,
                                      [](double b, const auto& point) { return b < point.bytes; });
  const auto below = above - 1;
  const double t = std::log(bytes / below->bytes) / std::log(above->bytes / below->bytes);
  return below->seconds + t * (above->seconds - below->seconds);
}

Precision precision_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return Precision::kFp64;
    case DType::kFloat16: return Precision::kFp16;
    case DType::kBFloat16: return Precision::kBf16;
    case DType::kInt8:
    case DType::kUInt8: return Precision::kInt8;
    default: return Precision::kFp32;  // fp32, and the integer and bool ops of vector units
  }
}

int64_t precision_bytes(Precision precision) {
  switch (precision) {
    case Precision::kFp64: return 8;
    case Precision::kFp32:
    case Precision::kTf32: return 4;
    case Precision::kBf16:
    case Precision::kFp16: return 2;
    case Precision::kInt8: return 1;
  }
  return 4;
}

// The dtype an op computes in: its first floating-point input's, else its first input's or
// output's (a Where's condition is bool, its data is not).
DType op_dtype(const Node& node, const Graph& graph) {
  DType first = DType::kUndefined;
  for (int in : node.inputs) {
    if (in < 0) continue;
    const DType dtype = graph.values[in].type.dtype;
    if (is_floating(dtype)) return dtype;
    if (first == DType::kUndefined) first = dtype;
  }
  if (first == DType::kUndefined && !node.outputs.empty() && node.outputs[0] >= 0) {
    first = graph.values[node.outputs[0]].type.dtype;
  }
  return first;
}

// Matrix units take floating-point and int8 operands; wider integers run on vector units.
bool matrix_dtype(DType dtype) {
  return is_floating(dtype) || dtype == DType::kInt8 || dtype == DType::kUInt8;
}

// A peak rate and the unit it belongs to; figure is null when the device publishes none.
struct Rate {
  const Figure* figure = nullptr;
  bool matrix_unit = false;
  Precision precision = Precision::kFp32;
};

Rate vector_rate(const DeviceFigures& figures, Precision precision) {
  if (figures.vector_flops[index(precision)].known()) {
    return {&figures.vector_flops[index(precision)], false, precision};
  }
  if (figures.vector_flops[index(Precision::kFp32)].known()) {
    return {&figures.vector_flops[index(Precision::kFp32)], false, Precision::kFp32};
  }
  return {};
}

Rate matrix_rate(DeviceKind kind, const DeviceFigures& figures, Precision precision, bool tf32) {
  const auto known = [&](Precision p) { return figures.matrix_flops[index(p)].known(); };
  if (precision == Precision::kFp32 && kind == DeviceKind::kGpu && tf32) {
    precision = Precision::kTf32;
  }
  // XLA's default precision runs an fp32 dot on the MXU as one bf16 pass.
  if (precision == Precision::kFp32 && kind == DeviceKind::kTpu && !known(Precision::kFp32)) {
    precision = Precision::kBf16;
  }
  // fp16 and bf16 share one rate on tensor cores and MXUs; a preset may publish only one.
  if (precision == Precision::kFp16 && !known(precision)) precision = Precision::kBf16;
  if (precision == Precision::kBf16 && !known(precision)) precision = Precision::kFp16;
  if (known(precision)) return {&figures.matrix_flops[index(precision)], true, precision};
  return vector_rate(figures, precision);
}

// Work on matrix units is done in whole tiles. TPUs pad to the MXU edge. A GPU preset gives its
// tensor-core multiple in fp16/bf16 elements (8 on H100, 64 on A100); cuBLAS wants the same
// bytes in other precisions: twice the elements in int8, half in tf32.
int64_t padding_granule(DeviceKind kind, const DeviceFigures& figures, const Rate& rate) {
  if (!rate.matrix_unit) return 1;
  const int64_t tile = std::max(figures.matrix_tile, 1);
  if (kind == DeviceKind::kGpu)
    return std::max<int64_t>(1, tile * 2 / precision_bytes(rate.precision));
  return tile;
}

// Replaces every figure the profile measured, marking its source as the calibration's; a figure
// the cluster file gives stays: the file's own figures are its author's word over any source.
void overlay(Figure& figure, const Figure& measured, const std::string& file) {
  if (!measured.known() || figure.source.starts_with("cluster file")) return;
  figure = measured;
  if (figure.source.rfind("calibration", 0) != 0) {
    figure.source = "calibration " + file + ": " + figure.source;
  }
}

void overlay(DeviceFigures& figures, const DeviceFigures& measured, const std::string& file) {
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    overlay(figures.matrix_flops[p], measured.matrix_flops[p], file);
    overlay(figures.vector_flops[p], measured.vector_flops[p], file);
  }
  overlay(figures.memory_bytes, measured.memory_bytes, file);
  overlay(figures.memory_bandwidth, measured.memory_bandwidth, file);
  overlay(figures.launch_overhead, measured.launch_overhead, file);
  overlay(figures.step_overhead, measured.step_overhead, file);
  overlay(figures.run_overhead, measured.run_overhead, file);
  overlay(figures.handoff_latency, measured.handoff_latency, file);
  overlay(figures.price_per_hour, measured.price_per_hour, file);
}

// Whether a Conv's kernel is larger than 1x1 (a 1x1 convolution is a plain GEMM).
bool spatial_kernel(const Node& node, const Graph& graph) {
  if (node.inputs.size() < 2 || node.inputs[1] < 0) return false;
  const Shape& w = graph.values[node.inputs[1]].type.shape;
  for (size_t axis = 2; axis < w.size(); ++axis) {
    if (w[axis] != 1) return true;
  }
  return false;
}

// Ops whose IR FLOPs count one per element though each element costs a transcendental
// function (a polynomial or a table look-up and a division, tens of instructions).
bool transcendental(const std::string& op_type) {
  static const char* const kOps[] = {"Tanh",     "Erf", "Sigmoid", "Exp",  "Log", "Gelu",
                                     "Softplus", "Elu", "Selu",    "Celu", "Sin", "Cos"};
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* op) { return op_type == op; });
}

// A Loop's trip count when it is a constant; a larger one is a while loop's "no limit".
constexpr int64_t kMaxKnownTripCount = int64_t{1} << 31;
// What a Loop whose trip count is not known when costing is assumed to run: one pass of its
// body, as the IR's FLOPs and bytes count it.
constexpr double kAssumedTripCount = 1;

bool is_host(const Cluster& cluster, const std::string& id) {
  return std::any_of(cluster.hosts.begin(), cluster.hosts.end(),
                     [&](const HostSpec& host) { return host.id == id; });
}

}  // namespace

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::kCompute: return "compute";
    case Bound::kMemory: return "memory";
    case Bound::kOverhead: return "overhead";
  }
  return "overhead";
}

CostModel::CostModel(const Cluster& cluster, CostOptions options)
    : cluster_(cluster), options_(options) {
  std::map<std::string, std::shared_ptr<const CalibrationProfile>> by_file;
  for (size_t d = 0; d < cluster_.devices.size(); ++d) {
    const DeviceSpec& spec = cluster_.devices[d];
    std::shared_ptr<const CalibrationProfile> profile;
    std::string file = spec.profile;
    if (!file.empty()) {
      auto& loaded = by_file[file];
      if (!loaded) loaded = std::make_shared<const CalibrationProfile>(read_profile(file));
      profile = loaded;
    } else if (const DevicePreset* preset = PresetLibrary::instance().find_device(spec.preset);
               preset && preset->profile) {
      // A device that names no profile of its own is priced by its preset's, where it has one.
      profile = preset->profile;
      file = preset->profile_file;
    }
    add_device(static_cast<int>(d), std::move(profile), file);
  }
  build_indices();
}

CostModel::CostModel(const Cluster& cluster, const std::map<int, CalibrationProfile>& profiles,
                     CostOptions options)
    : cluster_(cluster), options_(options) {
  for (size_t d = 0; d < cluster_.devices.size(); ++d) {
    const auto found = profiles.find(static_cast<int>(d));
    add_device(static_cast<int>(d),
               found == profiles.end() ? nullptr
                                       : std::make_shared<const CalibrationProfile>(found->second),
               cluster_.devices[d].profile.empty() ? "(in memory)" : cluster_.devices[d].profile);
  }
  build_indices();
}

void CostModel::build_indices() {
  router_.emplace(cluster_);
  std::set<std::string, std::less<>> switches;
  for (const HostSpec& host : cluster_.hosts) {
    if (host.is_switch) switches.insert(host.id);
    if (host.profile.empty()) continue;
    // The host's CPU on every core: its main-memory rate is what its CPU devices share.
    const CalibrationProfile profile = read_profile(host.profile);
    const BandwidthCurve curve(profile.bandwidth_curve, profile.figures.launch_overhead.value);
    host_memory_bandwidth_[host.id] =
        curve.measured() ? curve.main_memory_rate() : profile.figures.memory_bandwidth.value;
  }
  // Each device's link to its host, found once (a cluster may have thousands of devices).
  std::map<std::pair<std::string_view, std::string_view>, int> link_between;
  for (size_t l = 0; l < cluster_.links.size(); ++l) {
    const LinkSpec& link = cluster_.links[l];
    link_between.emplace(std::pair<std::string_view, std::string_view>{link.from, link.to},
                         static_cast<int>(l));
  }
  host_link_.assign(cluster_.devices.size(), {-1, false});
  for (size_t d = 0; d < cluster_.devices.size(); ++d) {
    const DeviceSpec& spec = cluster_.devices[d];
    if (const auto up = link_between.find({spec.id, spec.host}); up != link_between.end()) {
      host_link_[d] = {up->second, true};
    } else if (const auto down = link_between.find({spec.host, spec.id});
               down != link_between.end()) {
      host_link_[d] = {down->second, false};
    }
  }
  to_switch_.assign(2 * cluster_.links.size(), false);
  for (size_t l = 0; l < cluster_.links.size(); ++l) {
    to_switch_[2 * l] = switches.count(cluster_.links[l].from) > 0;
    to_switch_[2 * l + 1] = switches.count(cluster_.links[l].to) > 0;
  }
  // Devices alike in everything op_time reads: candidates by preset and kind, then compared.
  const auto same_figure = [](const Figure& a, const Figure& b) {
    return a.value == b.value && a.source == b.source && a.note == b.note;
  };
  const auto same_figures = [&](const DeviceFigures& a, const DeviceFigures& b) {
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      if (!same_figure(a.matrix_flops[p], b.matrix_flops[p]) ||
          !same_figure(a.vector_flops[p], b.vector_flops[p]))
        return false;
    }
    return same_figure(a.memory_bytes, b.memory_bytes) &&
           same_figure(a.memory_bandwidth, b.memory_bandwidth) &&
           same_figure(a.launch_overhead, b.launch_overhead) &&
           same_figure(a.step_overhead, b.step_overhead) &&
           same_figure(a.run_overhead, b.run_overhead) &&
           same_figure(a.handoff_latency, b.handoff_latency) &&
           same_figure(a.price_per_hour, b.price_per_hour) && a.matrix_tile == b.matrix_tile &&
           a.matrix_tile_source == b.matrix_tile_source;
  };
  const auto twins = [&](int a, int b) {
    const DeviceSpec& x = cluster_.devices[a];
    const DeviceSpec& y = cluster_.devices[b];
    return x.kind == y.kind && x.backend == y.backend && x.plugin == y.plugin &&
           x.preset == y.preset && x.cores == y.cores && x.profile == y.profile &&
           devices_[a].profile == devices_[b].profile &&
           devices_[a].profile_file == devices_[b].profile_file &&
           same_figures(x.figures, y.figures);
  };
  std::map<std::pair<std::string, int>, std::vector<int>> by_preset;
  cost_twin_.assign(cluster_.devices.size(), 0);
  for (size_t d = 0; d < cluster_.devices.size(); ++d) {
    const DeviceSpec& spec = cluster_.devices[d];
    std::vector<int>& candidates = by_preset[{spec.preset, static_cast<int>(spec.kind)}];
    cost_twin_[d] = static_cast<int>(d);
    for (int first : candidates) {
      if (twins(first, static_cast<int>(d))) {
        cost_twin_[d] = first;
        break;
      }
    }
    if (cost_twin_[d] == static_cast<int>(d)) candidates.push_back(static_cast<int>(d));
  }
}

void CostModel::add_device(int device, std::shared_ptr<const CalibrationProfile> profile,
                           const std::string& profile_file) {
  DeviceSpec& spec = cluster_.devices[device];
  DeviceModel model;
  if (profile) {
    model.profile_file = profile_file;
    overlay(spec.figures, profile->figures, model.profile_file);
    // The copy between the device and its host: a CPU's is host memory bandwidth.
    for (LinkSpec& link : cluster_.links) {
      const bool to_host = (link.from == spec.id && is_host(cluster_, link.to)) ||
                           (link.to == spec.id && is_host(cluster_, link.from));
      if (!to_host) continue;
      overlay(link.bandwidth_forward, profile->host_link_bandwidth, model.profile_file);
      overlay(link.bandwidth_backward, profile->host_link_bandwidth, model.profile_file);
      // A CPU's own link to host memory is the runtime's hand-off between workers; a device
      // with memory of its own, one copy's fixed time where its calibration measured it.
      const bool cpu_backend =
          spec.backend == BackendKind::kCpu || spec.backend == BackendKind::kNone;
      if (cpu_backend && link.implicit && link.kind == LinkKind::kHostMemory)
        overlay(link.latency, profile->figures.handoff_latency, model.profile_file);
      else if (!cpu_backend)
        overlay(link.latency, profile->host_link_latency, model.profile_file);
    }
    // The curves' points are kernel times of Adds and MatMuls: each less that kind's fixed cost,
    // which the op's overhead adds back.
    const auto fixed_cost = [&](const char* op_type) {
      const auto found = profile->op_overheads.find(op_type);
      return found != profile->op_overheads.end() ? found->second
                                                  : spec.figures.launch_overhead.value;
    };
    model.bandwidth = BandwidthCurve(profile->bandwidth_curve, fixed_cost("Add"));
    // Its times already exclude the dispatches.
    model.weights = BandwidthCurve(profile->weight_curve, 0);
    model.reorder_in = BandwidthCurve(profile->reorder_in_curve, 0);
    model.reorder_out = BandwidthCurve(profile->reorder_out_curve, 0);
    const auto by_bytes = [](const auto& a, const auto& b) { return a.bytes < b.bytes; };
    model.product_output_reads = profile->product_output_read_curve;
    std::sort(model.product_output_reads.begin(), model.product_output_reads.end(), by_bytes);
    model.product_input_writes = profile->product_input_write_curve;
    std::sort(model.product_input_writes.begin(), model.product_input_writes.end(), by_bytes);
    model.cross_core_spread = profile->cross_core_spread_curve;
    std::sort(model.cross_core_spread.begin(), model.cross_core_spread.end(), by_bytes);
    model.cross_core_gather = profile->cross_core_gather_curve;
    std::sort(model.cross_core_gather.begin(), model.cross_core_gather.end(), by_bytes);
    for (const auto& [layouts, points] : profile->depthwise_curves) {
      std::vector<WorkCurve::Point> work;
      for (const auto& point : points)
        work.push_back({point.flops, point.seconds - fixed_cost("Conv")});
      model.depthwise[layouts] = WorkCurve(std::move(work));
    }
    // Each kind's curve by its work (elements, runs), less that kind's fixed cost.
    const auto kind_curves = [&](const auto& curves, auto work_of,
                                 std::map<std::string, WorkCurve, std::less<>>& into) {
      for (const auto& [op_type, points] : curves) {
        std::vector<WorkCurve::Point> work;
        for (const auto& point : points)
          work.push_back({work_of(point), point.seconds - fixed_cost(op_type.c_str())});
        into[op_type] = WorkCurve(std::move(work));
      }
    };
    // A kind that works along rows: its longest rows' points are its curve, its shortest rows'
    // the short-row curve.
    std::map<std::string, std::vector<CalibrationProfile::ElementPoint>> longest_rows,
        shortest_rows;
    for (const auto& [op_type, points] : profile->op_element_curves) {
      double longest = 0, shortest = std::numeric_limits<double>::infinity();
      for (const auto& point : points) {
        longest = std::max(longest, point.row);
        shortest = std::min(shortest, point.row);
      }
      for (const auto& point : points) {
        if (point.row == longest) longest_rows[op_type].push_back(point);
        if (shortest > 0 && shortest < longest && point.row == shortest)
          shortest_rows[op_type].push_back(point);
      }
      if (shortest_rows.contains(op_type))
        model.short_rows[op_type] = {.row = shortest, .long_row = longest, .curve = {}};
    }
    const auto elements = [](const CalibrationProfile::ElementPoint& p) { return p.elements; };
    kind_curves(longest_rows, elements, model.element_curves);
    std::map<std::string, WorkCurve, std::less<>> short_row_curves;
    kind_curves(shortest_rows, elements, short_row_curves);
    for (auto& [op_type, curve] : short_row_curves) model.short_rows[op_type].curve = curve;
    kind_curves(
        profile->op_run_curves, [](const CalibrationProfile::RunPoint& p) { return p.runs; },
        model.run_curves);
    std::vector<WorkCurve::Point> convolutions;
    for (const auto& point : profile->conv_curve)
      convolutions.push_back({point.flops, point.seconds - fixed_cost("Conv")});
    model.convolutions = WorkCurve(std::move(convolutions));
    if (!profile->gemm_curve.empty()) {
      // `tandem calibrate` times fp32 GEMMs.
      const Rate fp32 = matrix_rate(spec.kind, spec.figures, Precision::kFp32, options_.tf32);
      model.matmul = MatmulEfficiency(profile->gemm_curve, fixed_cost("MatMul"),
                                      fp32.figure ? fp32.figure->value : 0, model.weights);
    }
    model.conv_weights = BandwidthCurve(profile->conv_weight_curve, 0);
    // A convolution computing while its weights stream: its kernel time against its compute and
    // its weights' time as priced, by how much less than their sum it took.
    const Rate fp32 = matrix_rate(spec.kind, spec.figures, Precision::kFp32, options_.tf32);
    for (const auto& point : profile->streamed_conv_points) {
      if (!model.conv_weights.measured() || (!model.convolutions.measured() && !fp32.figure)) break;
      const double compute = model.convolutions.measured()
                                 ? model.convolutions.seconds(point.flops)
                                 : model.matmul.seconds(point.flops, fp32.figure->value);
      const double weights = point.weight_bytes / model.conv_weights.rate(point.run_weight_bytes);
      const double kernel = point.seconds - fixed_cost("Conv");
      model.conv_weights_hidden = hidden_share(compute, weights, kernel);
    }
    // A product computing while its weights stream, the same way: its compute on the GEMM
    // curve (weights in cache) and its weights at the rate of the run's.
    for (const auto& point : profile->streamed_product_points) {
      if (!model.weights.measured() || !model.matmul.measured() || !fp32.figure) break;
      const double compute =
          model.matmul.seconds(GemmShape{1, point.m, point.n, point.k}, fp32.figure->value);
      const double weight_bytes = 4.0 * static_cast<double>(point.k) * static_cast<double>(point.n);
      const double weights =
          streamed_beyond_cache(model.weights, weight_bytes, point.run_weight_bytes);
      if (weights <= 0) break;
      const double kernel = point.seconds - fixed_cost("MatMul");
      model.product_weights_hidden = hidden_share(compute, weights, kernel);
    }
    model.profile = std::move(profile);
  }
  devices_.push_back(std::move(model));
}

double CostModel::run_weight_bytes(const Graph& graph, int device) const {
  const DeviceSpec& spec = cluster_.devices[device];
  const Backend& backend = backend_of(spec.backend);
  const bool copies = backend.product_weight_copies && backend.product_weight_copies(spec);
  const std::lock_guard<std::mutex> lock(cache_mutex_);
  WeightBytes& cached = weight_bytes_[&graph];
  if (cached.values != graph.values.size() || cached.nodes != graph.nodes.size()) {
    cached = {graph.values.size(), graph.nodes.size(), 0, 0};
    std::vector<int> product_readers(graph.values.size(), 0);
    for (const Node& node : graph.nodes) {
      if (!gemm_shape(node, graph)) continue;
      std::vector<int> read = graph.values_read(node);
      std::sort(read.begin(), read.end());
      read.erase(std::unique(read.begin(), read.end()), read.end());
      for (const int value : read) ++product_readers[value];
    }
    for (size_t v = 0; v < graph.values.size(); ++v) {
      const Value& value = graph.values[v];
      if (!value.is_constant()) continue;
      const double bytes = static_cast<double>(value.constant.nbytes());
      cached.bytes += bytes;
      cached.product_copies += std::max(product_readers[v] - 1, 0) * bytes;
    }
  }
  return cached.bytes + (copies ? cached.product_copies : 0);
}

// Per node of `graph`: the bytes of its inputs and output that a compiled program keeps inside
// one loop (values between two elementwise ops, read by nothing else).
std::vector<double> bytes_inside_loops_by_node(const Graph& graph) {
  std::vector<double> by_node(graph.nodes.size(), 0);
  std::vector<int> producer(graph.values.size(), -1), readers(graph.values.size(), 0);
  std::vector<int> only_reader(graph.values.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int out : graph.nodes[n].outputs)
      if (out >= 0) producer[out] = static_cast<int>(n);
    for (int in : graph.values_read(graph.nodes[n])) {
      ++readers[in];
      only_reader[in] = static_cast<int>(n);
    }
  }
  for (int out : graph.outputs) readers[out] += 1;  // the caller reads it from memory
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const int from = producer[v], to = only_reader[v];
    if (from < 0 || to < 0 || readers[v] != 1 || !is_elementwise(graph.nodes[from]) ||
        !is_elementwise(graph.nodes[to]) || !is_static(graph.values[v].type.shape))
      continue;
    const double bytes = static_cast<double>(numel(graph.values[v].type.shape)) *
                         static_cast<double>(dtype_size(graph.values[v].type.dtype));
    by_node[from] += bytes;  // not written
    by_node[to] += bytes;    // not read back
  }
  return by_node;
}

// Who wrote each value of a graph: its node, whether that node is a matrix product, and, for a
// view's output, the value whose memory it shares (back to the op that wrote it).
struct Writers {
  explicit Writers(const Graph& graph)
      : graph(graph), producer(graph.values.size(), -1), product(graph.nodes.size(), false) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      product[i] = gemm_shape(graph.nodes[i], graph).has_value();
      for (int out : graph.nodes[i].outputs)
        if (out >= 0) producer[out] = static_cast<int>(i);
    }
  }
  int memory_of(int value) const {
    while (producer[value] >= 0 && is_view(graph.nodes[producer[value]]) &&
           !graph.nodes[producer[value]].inputs.empty() &&
           graph.nodes[producer[value]].inputs[0] >= 0)
      value = graph.nodes[producer[value]].inputs[0];
    return value;
  }
  const Graph& graph;
  std::vector<int> producer;  // per value, -1 for a graph input or constant
  std::vector<bool> product;  // per node
};

// Per node of `graph`: the bytes of its inputs that a matrix product wrote (through views) and
// that it, not itself a product or a view, is the first in the graph's order to read.
std::vector<double> product_output_bytes_by_node(const Graph& graph) {
  const Writers writers(graph);
  std::vector<double> by_node(graph.nodes.size(), 0);
  std::vector<bool> read(graph.values.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (is_view(graph.nodes[i])) continue;
    for (int in : graph.values_read(graph.nodes[i])) {
      const int source = writers.memory_of(in);
      const int from = writers.producer[source];
      if (from < 0 || read[source] || !writers.product[from]) continue;
      read[source] = true;
      const TensorType& type = graph.values[in].type;
      if (!writers.product[i] && is_static(type.shape)) by_node[i] += type_bytes(type);
    }
  }
  return by_node;
}

// Per node of `graph`, not itself a product or a view: the bytes of its outputs that a matrix
// product reads, directly or through views.
std::vector<double> product_input_bytes_by_node(const Graph& graph) {
  const Writers writers(graph);
  std::vector<double> by_node(graph.nodes.size(), 0);
  std::vector<bool> counted(graph.values.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!writers.product[i]) continue;
    for (int in : graph.values_read(graph.nodes[i])) {
      const int source = writers.memory_of(in);
      const int from = writers.producer[source];
      if (from < 0 || counted[source]) continue;
      counted[source] = true;
      const TensorType& type = graph.values[source].type;
      if (!is_view(graph.nodes[from]) && !writers.product[from] && is_static(type.shape))
        by_node[from] += type_bytes(type);
    }
  }
  return by_node;
}

// Per node of `graph`: how far back each of its inputs was last touched, as the bytes of the
// distinct tensors touched since (its own included; constants too, which share the caches), for
// each input that an op of the graph wrote or read before it (constants left out: weights have
// their own curve). A tensor is touched by the ops that write or read it (a view's output is
// its input's memory, and a view touches nothing). The calibration's bandwidth curve times an
// op run again and again, whose inputs were last touched one run of it before: its own bytes
// back. In a model an input may come from further back (a residual, a tensor read after larger
// ops), past the cache the op's bytes alone fit in. Stack distances at tensor granularity: a
// Fenwick tree over node indices holds each tensor's bytes at its latest touch.
std::vector<std::vector<InputDistance>> input_distances_by_node(const Graph& graph) {
  const Writers writers(graph);
  const size_t count = graph.nodes.size();
  std::vector<std::vector<InputDistance>> by_node(count);
  std::vector<double> tree(count + 1, 0);
  const auto add = [&](size_t at, double bytes) {
    for (size_t i = at + 1; i <= count; i += i & (~i + 1)) tree[i] += bytes;
  };
  const auto below = [&](size_t end) {  // bytes held at nodes [0, end)
    double sum = 0;
    for (size_t i = end; i > 0; i -= i & (~i + 1)) sum += tree[i];
    return sum;
  };
  std::vector<int> latest(graph.values.size(), -1);
  const auto bytes_of = [&](int memory) {
    const Value& value = graph.values[static_cast<size_t>(memory)];
    if (value.is_constant()) return static_cast<double>(value.constant.nbytes());
    return is_static(value.type.shape) ? type_bytes(value.type) : 0.0;
  };
  for (size_t i = 0; i < count; ++i) {
    const Node& node = graph.nodes[i];
    if (is_view(node)) continue;
    std::vector<int> touched;
    for (int in : graph.values_read(node)) {
      const int memory = writers.memory_of(in);
      if (std::find(touched.begin(), touched.end(), memory) != touched.end()) continue;
      touched.push_back(memory);
      if (latest[memory] >= 0 && !graph.values[memory].is_constant())
        by_node[i].push_back(
            {bytes_of(memory), below(i) - below(static_cast<size_t>(latest[memory]))});
    }
    for (int out : node.outputs)
      if (out >= 0) touched.push_back(out);
    for (int memory : touched) {
      const double bytes = bytes_of(memory);
      if (latest[memory] >= 0) add(static_cast<size_t>(latest[memory]), -bytes);
      add(i, bytes);
      latest[memory] = static_cast<int>(i);
    }
  }
  return by_node;
}

template <typename Figure>
Figure CostModel::per_node_figure(std::map<const Graph*, NodeFigures<Figure>>& cache,
                                  const Node& node, const Graph& graph,
                                  std::vector<Figure> (*compute)(const Graph&)) const {
  const std::optional<size_t> n = index_in(node, graph);
  if (!n) return {};
  const std::lock_guard<std::mutex> lock(cache_mutex_);
  NodeFigures<Figure>& cached = cache[&graph];
  if (cached.values != graph.values.size() || cached.nodes != graph.nodes.size() ||
      cached.by_node.size() != graph.nodes.size())
    cached = {graph.values.size(), graph.nodes.size(), compute(graph)};
  return cached.by_node[*n];
}

double CostModel::bytes_inside_loops(const Node& node, const Graph& graph) const {
  return per_node_figure(loop_bytes_, node, graph, bytes_inside_loops_by_node);
}

double CostModel::product_output_bytes_read(const Node& node, const Graph& graph) const {
  return per_node_figure(product_output_bytes_, node, graph, product_output_bytes_by_node);
}

std::vector<InputDistance> CostModel::input_distances(const Node& node, const Graph& graph) const {
  return per_node_figure(input_distances_, node, graph, input_distances_by_node);
}

double CostModel::product_input_bytes_written(const Node& node, const Graph& graph) const {
  return per_node_figure(product_input_bytes_, node, graph, product_input_bytes_by_node);
}

template <typename Figure, typename Compute>
Figure CostModel::backend_figure(BackendCache<Figure>& cache, const Node& node, const Graph& graph,
                                 const Backend& backend, Compute compute) const {
  const std::optional<size_t> n = index_in(node, graph);
  if (!n) return {};
  const std::lock_guard<std::mutex> lock(cache_mutex_);
  BackendFigures<Figure>& cached = cache[{&graph, backend.kind}];
  if (cached.values != graph.values.size() || cached.nodes != graph.nodes.size() ||
      cached.by_node.size() != graph.nodes.size())
    cached = {graph.values.size(), graph.nodes.size(), compute(graph)};
  return cached.by_node[*n];
}

namespace {

// Per node of `graph` that `splits` declares: the bytes of its same-sized inputs that a node
// declared the other way wrote (through views), it splitting (spread) or on one thread (gather).
std::vector<CrossCoreBytes> cross_core_bytes_by_node(const Graph& graph,
                                                     const std::vector<ThreadSplit>& splits) {
  const Writers writers(graph);
  std::vector<CrossCoreBytes> by_node(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ThreadSplit to = splits[i];
    if (to == ThreadSplit::kUndeclared) continue;  // declared: its output's shape is static
    const int64_t elements =
        numel(graph.values[static_cast<size_t>(graph.nodes[i].outputs[0])].type.shape);
    std::vector<int> counted;  // memories: a tensor read twice (Mul(x, x)) moves once
    for (int in : graph.values_read(graph.nodes[i])) {
      const int memory = writers.memory_of(in);
      if (std::find(counted.begin(), counted.end(), memory) != counted.end()) continue;
      counted.push_back(memory);
      const int from = writers.producer[memory];
      if (from < 0 || splits[from] == ThreadSplit::kUndeclared || splits[from] == to) continue;
      const TensorType& type = graph.values[in].type;
      if (!is_static(type.shape) || numel(type.shape) != elements) continue;
      (to == ThreadSplit::kOutputRanges ? by_node[i].spread : by_node[i].gather) +=
          type_bytes(type);
    }
  }
  return by_node;
}

}  // namespace

CrossCoreBytes CostModel::cross_core_bytes(const Node& node, const Graph& graph, int device) const {
  const Backend& backend = backend_of(cluster_.devices[device].backend);
  if (!backend.thread_splits) return {};
  return backend_figure(cross_cores_, node, graph, backend, [&](const Graph& g) {
    return cross_core_bytes_by_node(g, backend.thread_splits(g));
  });
}

ActivationLayout CostModel::activation_layout(const Node& node, const Graph& graph,
                                              int device) const {
  const Backend& backend = backend_of(cluster_.devices[device].backend);
  if (!backend.activation_layouts) return {};
  return backend_figure(layouts_, node, graph, backend, backend.activation_layouts);
}

OpTime CostModel::op_time(const Node& node, const Graph& graph, int device) const {
  const bool weights_curve = devices_.at(device).weights.measured();
  return op_time_in(node, graph, device, weights_curve ? run_weight_bytes(graph, device) : 0);
}

OpTime CostModel::op_time_in(const Node& node, const Graph& graph, int device,
                             double weight_bytes) const {
  const DeviceSpec& spec = cluster_.devices.at(device);
  if (!can_run(spec, node, graph)) {
    OpTime time;
    time.seconds = kInfinity;
    time.source = "cannot run on " + spec.id;
    return time;
  }
  const DeviceModel& model = devices_[device];
  if (model.profile && !model.profile->op_seconds.empty()) {
    const auto found = model.profile->op_seconds.find(op_signature(node, graph));
    if (found != model.profile->op_seconds.end()) {
      OpTime time = roofline(node, graph, device, weight_bytes);
      time.seconds = found->second;
      time.source = "measured op in " + model.profile_file;
      return time;
    }
  }
  if (is_view(node)) {
    // No kernel runs; the executor's step for it is measured by a calibration.
    OpTime time;
    time.source = "view, no kernel";
    if (model.profile && model.profile->view_overhead.known()) {
      time.seconds = time.overhead_seconds = model.profile->view_overhead.value;
      time.source = "calibration " + model.profile_file + ": view step";
    }
    return time;
  }
  if (node.domain.empty() && (node.op_type == "Loop" || node.op_type == "If")) {
    return control_flow(node, graph, device, weight_bytes);
  }
  return roofline(node, graph, device, weight_bytes);
}

OpTime CostModel::control_flow(const Node& node, const Graph& graph, int device,
                               double weight_bytes) const {
  const DeviceModel& model = devices_[device];
  const auto constant = [&](size_t input) -> const Tensor* {
    if (node.inputs.size() <= input || node.inputs[input] < 0) return nullptr;
    const Value& value = graph.values[node.inputs[input]];
    return value.is_constant() ? &value.constant : nullptr;
  };
  // The ops of one run of a subgraph.
  const auto ops_of = [&](const Graph& subgraph) {
    OpTime sum;
    for (const Node& inner : subgraph.nodes) {
      // The body's weights are the enclosing run's: it reads them on every iteration.
      const OpTime op = op_time_in(inner, subgraph, device, weight_bytes);
      sum.seconds += op.seconds;
      sum.compute_seconds += op.compute_seconds;
      sum.memory_seconds += op.memory_seconds;
      sum.overhead_seconds += op.overhead_seconds;
      sum.main_memory_seconds += op.main_memory_seconds;
      sum.weight_seconds += op.weight_seconds;
    }
    return sum;
  };

  OpTime body;
  double runs = 1;
  std::string how;
  if (node.op_type == "If") {
    const auto then_branch = node.attr_graph("then_branch");
    const auto else_branch = node.attr_graph("else_branch");
    const OpTime then_ops = then_branch ? ops_of(*then_branch) : OpTime{};
    const OpTime else_ops = else_branch ? ops_of(*else_branch) : OpTime{};
    if (const Tensor* condition = constant(0); condition && condition->numel() == 1) {
      const bool taken = condition->to_int64s().at(0) != 0;
      body = taken ? then_ops : else_ops;
      how = taken ? "If: then branch (constant condition)" : "If: else branch (constant condition)";
    } else {
      // Unknown until run time: the costlier branch, so that a plan is not optimistic.
      const bool then_costlier = then_ops.seconds >= else_ops.seconds;
      body = then_costlier ? then_ops : else_ops;
      how = std::string("If: the costlier branch (") + (then_costlier ? "then" : "else") + ")";
    }
  } else {
    const auto loop_body = node.attr_graph("body");
    if (loop_body) body = ops_of(*loop_body);
    const Tensor* trip_count = constant(0);
    const Tensor* condition = constant(1);
    const int64_t trips =
        trip_count && trip_count->numel() == 1 ? trip_count->to_int64s().at(0) : -1;
    if (condition && condition->numel() == 1 && condition->to_int64s().at(0) == 0) {
      runs = 0;
      how = "Loop: condition false on entry, no iteration";
    } else if (trips >= 0 && trips <= kMaxKnownTripCount) {
      runs = static_cast<double>(trips);
      how = "Loop: body x " + std::to_string(trips) + " (constant trip count)";
    } else {
      runs = kAssumedTripCount;
      how = "Loop: body x 1 (trip count unknown, one iteration assumed)";
    }
  }
  // The node's own step, then each run of the subgraph: its executor's setup and its ops.
  double per_run = 0;
  if (model.profile) {
    const CalibrationProfile& profile = *model.profile;
    per_run = node.op_type == "Loop" && profile.loop_iteration_overhead.known()
                  ? profile.loop_iteration_overhead.value
                  : profile.subgraph_run_overhead.value;
  }
  OpTime time;
  time.overhead_seconds =
      figures(device).launch_overhead.value + runs * (per_run + body.overhead_seconds);
  time.compute_seconds = runs * body.compute_seconds;
  time.memory_seconds = runs * body.memory_seconds;
  time.main_memory_seconds = runs * body.main_memory_seconds;
  time.weight_seconds = runs * body.weight_seconds;
  time.seconds = figures(device).launch_overhead.value + runs * (per_run + body.seconds);
  if (time.overhead_seconds >= std::max(time.compute_seconds, time.memory_seconds)) {
    time.bound = Bound::kOverhead;
  } else {
    time.bound = time.compute_seconds >= time.memory_seconds ? Bound::kCompute : Bound::kMemory;
  }
  time.source = how;
  return time;
}

// The measured in-cache rate of a transcendental op type: its own, else the slowest measured
// transcendental's; 0 when none was measured (or not fp32, the precision they are timed in).
double CostModel::vector_op_rate(const DeviceModel& model, const Node& node,
                                 Precision precision) const {
  if (!model.profile || precision != Precision::kFp32 || !node.domain.empty()) return 0;
  const auto& rates = model.profile->vector_op_rates;
  const auto found = rates.find(vector_op_key(node));
  if (found != rates.end()) return found->second;
  if (!transcendental(node.op_type)) return 0;
  double slowest = 0;
  for (const auto& [op_type, rate] : rates) {
    if (transcendental(op_type) && (slowest == 0 || rate < slowest)) slowest = rate;
  }
  return slowest;
}

// Linear in the rows between the two lengths timed, and past them (a Softmax of 32768 floats on
// one thread of a 2-vCPU Xeon: 48.9 us in rows of 16, 35.6 in rows of 32, 21.7 in rows of 256,
// 20.4 in rows of 1024; 34.4 and 20.3 by the line through 16 and 256).
double CostModel::short_rows_seconds(const DeviceModel& model, const Node& node, const Graph& graph,
                                     double elements) {
  const auto kind = model.short_rows.find(node.op_type);
  if (kind == model.short_rows.end() || !kind->second.curve.measured()) return 0;
  const double row = row_length(node, graph);
  if (row <= 0) return 0;
  const auto& [short_row, long_row, curve] = kind->second;
  const double per_row_share = (1 / row - 1 / long_row) / (1 / short_row - 1 / long_row);
  // A short row never runs faster: where a noisy timing said so, no cost per row.
  const double short_rows_extra = std::max(
      0.0, curve.seconds(elements) - model.element_curves.at(node.op_type).seconds(elements));
  return per_row_share * short_rows_extra;
}

OpTime CostModel::roofline(const Node& node, const Graph& graph, int device,
                           double weight_bytes) const {
  const DeviceSpec& spec = cluster_.devices[device];
  const DeviceFigures& figures = spec.figures;
  const DeviceModel& model = devices_[device];
  const DType dtype = op_dtype(node, graph);
  const Precision precision = precision_of(dtype);
  OpTime time;
  std::string compute_source;
  double vector_flops = node.cost.flops;
  auto gemm = matrix_dtype(dtype) ? gemm_shape(node, graph) : std::nullopt;
  // An op the backend runs as a matrix product (XLA's EmbeddingBag): that product, and the
  // operand it builds for it written and read once.
  double built_bytes = 0;
  if (!gemm && matrix_dtype(dtype)) {
    if (const auto product = lowered_product(spec, node, graph)) {
      gemm = GemmShape{1, product->m, product->n, product->k};
      built_bytes = 2 * product->built_bytes;
    }
  }
  if (gemm) {
    const Rate rate = matrix_rate(spec.kind, figures, precision, options_.tf32);
    // What the IR counts beyond the product: bias, fused activation and residual.
    const double beyond_product = std::max(0.0, node.cost.flops - gemm->flops());
    if (node.op_type == "Conv" && precision == Precision::kFp32 && model.convolutions.measured() &&
        spatial_kernel(node, graph)) {
      // A device whose spatial convolutions are not its GEMM kernels, at their own measured
      // times (a 1x1 one is a GEMM: XLA makes it a dot).
      time.compute_seconds = model.convolutions.seconds(gemm->flops());
      compute_source = "calibration " + model.profile_file + ": convolutions";
      vector_flops = beyond_product;
    } else if (rate.figure) {
      const GemmShape work = padded(*gemm, padding_granule(spec.kind, figures, rate));
      time.compute_seconds = model.matmul.seconds(work, rate.figure->value);
      compute_source = model.matmul.measured() ? "calibration " + model.profile_file
                                               : source_of(*rate.figure, device);
      vector_flops = beyond_product;
    }
  }
  // The layouts a convolution's kernel reads and writes, asked once: its depthwise curve and
  // its reorders depend on them.
  const bool layout_priced =
      node.op_type == "Conv" && node.domain.empty() &&
      (!model.depthwise.empty() || model.reorder_in.measured() || model.reorder_out.measured());
  const ActivationLayout layout =
      layout_priced ? activation_layout(node, graph, device) : ActivationLayout{};
  // A reorder of a whole activation around the kernel: before or after it, not overlapped.
  const auto reorder_seconds_of = [&](bool reorders, int value, const BandwidthCurve& curve) {
    if (!reorders || !curve.measured() || value < 0) return 0.0;
    const TensorType& type = graph.values[value].type;
    if (!is_static(type.shape)) return 0.0;
    const double bytes =
        static_cast<double>(numel(type.shape)) * static_cast<double>(dtype_size(type.dtype));
    return bytes > 0 ? bytes / curve.rate(bytes) : 0.0;
  };
  const double reorder_seconds =
      layout_priced
          ? reorder_seconds_of(layout.reorders_input, node.inputs[0], model.reorder_in) +
                reorder_seconds_of(layout.reorders_output, node.outputs[0], model.reorder_out)
          : 0.0;
  if (precision == Precision::kFp32 && !model.depthwise.empty() && is_depthwise_conv(node, graph)) {
    const std::string key =
        depthwise_layout_key(layout.input_channels_last, layout.output_channels_last);
    if (const auto curve = model.depthwise.find(key);
        curve != model.depthwise.end() && curve->second.measured()) {
      time.compute_seconds = curve->second.seconds(node.cost.flops);
      compute_source = "calibration " + model.profile_file + ": depthwise convolutions " + key;
      vector_flops = 0;
    }
  }
  // A kind timed by elements (a LayerNormalization, a Softmax) takes its own time for as many
  // (below), arithmetic included: the IR's count of its FLOPs at the best in-cache rate of a
  // 64x256 tile priced bert's 2x128x384 LayerNorms at 37 us, where they ran in 21.
  if (node.domain.empty()) {
    const auto kind = model.element_curves.find(node.op_type);
    if (kind != model.element_curves.end() && kind->second.measured()) vector_flops = 0;
  }
  const Rate vector = vector_rate(figures, precision);
  const double op_rate = vector_op_rate(model, node, precision);
  if (op_rate > 0 && vector_flops > 0) {
    // A transcendental op at its own measured rate.
    time.compute_seconds += vector_flops / op_rate;
    if (compute_source.empty()) compute_source = "calibration " + model.profile_file;
  } else if (vector.figure && vector_flops > 0) {
    time.compute_seconds += vector_flops / vector.figure->value;
    if (compute_source.empty()) compute_source = source_of(*vector.figure, device);
  }
  std::string memory_source = source_of(figures.memory_bandwidth, device);
  // The IR counts every input; one read twice (gpt's Mul(x, x)) moves once.
  double constant_bytes = 0, repeated_bytes = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int in = node.inputs[i];
    if (in < 0) continue;
    const Value& value = graph.values[in];
    const double bytes = value.is_constant() ? static_cast<double>(value.constant.nbytes())
                         : is_static(value.type.shape) ? type_bytes(value.type)
                                                       : 0.0;
    if (std::find(node.inputs.begin(), node.inputs.begin() + i, in) != node.inputs.begin() + i)
      repeated_bytes += bytes;
    else if (value.is_constant())
      constant_bytes += bytes;
  }
  repeated_bytes = std::min(repeated_bytes, node.cost.bytes);
  constant_bytes = std::min(constant_bytes, node.cost.bytes - repeated_bytes);
  // A device that runs programs (a step overhead: XLA through PJRT) fuses a chain of
  // elementwise ops into one loop: the values between them never reach memory.
  double moved_bytes = node.cost.bytes - repeated_bytes + built_bytes;
  if (figures.step_overhead.known())
    moved_bytes -= std::min(bytes_inside_loops(node, graph), moved_bytes - constant_bytes);
  bool streamed_conv = false;
  if (model.bandwidth.measured()) {
    // Weights are read once per run: they move at the rate of reading all of a run's weights
    // (the cache they all fit in, or main memory). Other bytes (activations, written just
    // before) are the op's working set: they move at the rate of the cache they fit in.
    const double streamed = model.weights.measured() ? constant_bytes : 0;
    const double other_bytes = moved_bytes - streamed;
    // Of each part, main memory serves the share its rate is of the curve's rate (the whole
    // part past the caches, little of it in L1).
    const auto add = [&](double bytes, const BandwidthCurve& curve, double size) {
      const double rate = curve.rate(size);
      time.memory_seconds += bytes / rate;
      time.main_memory_seconds += bytes / rate * std::min(1.0, curve.main_memory_rate() / rate);
      return bytes / rate;
    };
    if (streamed > 0) {
      // A spatial convolution's weights stream at their own measured rate.
      streamed_conv =
          node.op_type == "Conv" && model.conv_weights.measured() && spatial_kernel(node, graph);
      time.weight_seconds = add(streamed, streamed_conv ? model.conv_weights : model.weights,
                                std::max(weight_bytes, constant_bytes));
    }
    if (other_bytes > 0) {
      // An eager device reads an input touched further back than the op's own bytes at the
      // rate of the cache that distance fits in, the rest at its own bytes' (a program's buffers
      // are XLA's to place).
      double seconds = 0, near_bytes = other_bytes;
      if (!figures.step_overhead.known()) {
        for (const InputDistance& input : input_distances(node, graph)) {
          if (input.distance <= moved_bytes) continue;
          const double bytes = std::min(input.bytes, near_bytes);
          near_bytes -= bytes;
          seconds += add(bytes, model.bandwidth, input.distance);
        }
      }
      seconds += add(near_bytes, model.bandwidth, moved_bytes);
      if (streamed == 0) time.weight_seconds = seconds * constant_bytes / other_bytes;
    }
    memory_source = "calibration " + model.profile_file;
  } else if (figures.memory_bandwidth.known()) {
    // A figure without a curve is main memory's.
    time.memory_seconds = time.main_memory_seconds = moved_bytes / figures.memory_bandwidth.value;
    time.weight_seconds = constant_bytes / figures.memory_bandwidth.value;
  }
  // A kind whose kernel runs in loops of its own takes no less than its measured time for as
  // many elements (a Transpose to channels-last, a NonZero, a bilinear Resize, a Softmax).
  // And a copy in short runs no less than its kind's time for as many runs.
  // The work is counted only where the kind has a curve: this runs for every node and device.
  const auto at_least = [&](double seconds, const std::string& by) {
    if (seconds > std::max(time.memory_seconds, time.compute_seconds)) {
      time.memory_seconds = seconds;
      memory_source = "calibration " + model.profile_file + ": " + node.op_type + " by " + by;
    }
  };
  if (node.domain.empty()) {
    if (const auto kind = model.element_curves.find(node.op_type);
        kind != model.element_curves.end() && kind->second.measured()) {
      const double elements = rated_elements(node, graph);
      at_least(kind->second.seconds(elements) + short_rows_seconds(model, node, graph, elements),
               "elements");
    }
    if (const auto kind = model.run_curves.find(node.op_type);
        kind != model.run_curves.end() && kind->second.measured())
      at_least(kind->second.seconds(copy_runs(node, graph)), "runs");
  }
  // The first read of a matrix product's output, slower than a warm one by what calibration
  // measured for its bytes.
  if (!model.product_output_reads.empty()) {
    const double bytes = product_output_bytes_read(node, graph);
    if (bytes > 0) time.memory_seconds += extra_seconds(model.product_output_reads, bytes);
  }
  // And the write of a tensor a product reads next, slower by what calibration measured.
  if (!model.product_input_writes.empty()) {
    const double bytes = product_input_bytes_written(node, graph);
    if (bytes > 0) time.memory_seconds += extra_seconds(model.product_input_writes, bytes);
  }
  // And a tensor passed between a kernel on one thread and one split among the threads, slower
  // by what calibration measured for its bytes in that direction.
  if (!model.cross_core_spread.empty() || !model.cross_core_gather.empty()) {
    const CrossCoreBytes bytes = cross_core_bytes(node, graph, device);
    time.memory_seconds += extra_seconds(model.cross_core_spread, bytes.spread) +
                           extra_seconds(model.cross_core_gather, bytes.gather);
  }
  time.overhead_seconds = figures.launch_overhead.value + reorder_seconds;
  const Figure* overhead_figure = &figures.launch_overhead;
  if (model.profile && node.domain.empty()) {
    const auto kind = model.profile->op_overheads.find(node.op_type);
    if (kind != model.profile->op_overheads.end()) {
      time.overhead_seconds = kind->second + reorder_seconds;
      overhead_figure = nullptr;
    }
  }
  // A spatial convolution's compute hides as much of its weights' stream (or that of it) as
  // calibration measured; the rest adds. Other ops, and a convolution's activations (in cache,
  // just written), the shorter whole.
  double work = std::max(time.compute_seconds, time.memory_seconds);
  if (streamed_conv)
    work += (1 - model.conv_weights_hidden) * std::min(time.compute_seconds, time.weight_seconds);
  else if (gemm && node.op_type != "Conv" && precision == Precision::kFp32 &&
           model.product_weights_hidden < 1 && constant_bytes > 0)
    work += (1 - model.product_weights_hidden) *
            std::min(time.compute_seconds,
                     streamed_beyond_cache(model.weights, constant_bytes,
                                           std::max(weight_bytes, constant_bytes)));
  // An eager accelerator runs a node's kernel while the host launches the next ones: a node
  // takes the longer of its launch and its kernel, not both (a compiled device's program
  // steps are priced apart).
  const bool overlapped =
      cluster_.devices[device].kind != DeviceKind::kCpu && !figures.step_overhead.known();
  time.seconds = overlapped ? std::max(work, time.overhead_seconds) : work + time.overhead_seconds;
  if (time.overhead_seconds >= work) {
    time.bound = Bound::kOverhead;
    time.source = overhead_figure
                      ? source_of(*overhead_figure, device)
                      : "calibration " + model.profile_file + ": " + node.op_type + " overhead";
  } else if (time.compute_seconds >= time.memory_seconds) {
    time.bound = Bound::kCompute;
    time.source = compute_source;
  } else {
    time.bound = Bound::kMemory;
    time.source = memory_source;
  }
  return time;
}

double CostModel::main_memory_bandwidth(int device) const {
  const DeviceModel& model = devices_.at(device);
  if (model.bandwidth.measured()) return model.bandwidth.main_memory_rate();
  return figures(device).memory_bandwidth.value;
}

double CostModel::speed_drift(int device) const {
  const DeviceModel& model = devices_.at(device);
  return model.profile && model.profile->speed_drift.known() ? model.profile->speed_drift.value : 0;
}

double CostModel::speed_reference(int device) const {
  const DeviceModel& model = devices_.at(device);
  return model.profile && model.profile->speed_reference.known()
             ? model.profile->speed_reference.value
             : 0;
}

double CostModel::host_memory_bandwidth(const std::string& host) const {
  if (const auto found = host_memory_bandwidth_.find(host); found != host_memory_bandwidth_.end())
    return found->second;
  double most = 0;
  for (size_t d = 0; d < cluster_.devices.size(); ++d) {
    if (cluster_.devices[d].host == host && cluster_.devices[d].kind == DeviceKind::kCpu)
      most = std::max(most, main_memory_bandwidth(static_cast<int>(d)));
  }
  return most;
}

std::string CostModel::source_of(const Figure& figure, int device) const {
  const DeviceSpec& spec = cluster_.devices[device];
  // "calibration <file>: <method>" -> "calibration <file>"; the method is in `tandem devices`.
  if (figure.source.rfind("calibration", 0) == 0) {
    return figure.source.substr(0, figure.source.find(": "));
  }
  // Figures the cluster file gives say so themselves.
  if (figure.source.rfind("cluster file", 0) != 0 && !spec.preset.empty()) {
    return "preset " + spec.preset;
  }
  return figure.source;
}

double CostModel::transfer_seconds(double bytes, int from_device, int to_device) const {
  if (from_device == to_device) return 0;
  return path_seconds(bytes, router_->path(from_device, to_device));
}

double CostModel::host_copy_seconds(double bytes, int device, bool to_device) const {
  const DeviceSpec& spec = cluster_.devices[device];
  if (spec.kind == DeviceKind::kCpu &&
      (spec.backend == BackendKind::kCpu || spec.backend == BackendKind::kNone))
    return 0;
  const auto [index, up] = host_link_[device];  // up: the link's forward is to the host
  if (index < 0) return 0;                      // a device with no link to a host of its own
  const LinkSpec& link = cluster_.links[static_cast<size_t>(index)];
  const Figure& bandwidth = up != to_device ? link.bandwidth_forward : link.bandwidth_backward;
  return bandwidth.known() ? link.latency.value + bytes / bandwidth.value : kInfinity;
}

double CostModel::path_seconds(double bytes, std::span<const Cluster::Hop> path) const {
  double seconds = 0;
  double latency = 0, bandwidth = kInfinity;  // of the stretch so far
  for (const Cluster::Hop& hop : path) {
    if (!relays(hop) && bandwidth == kInfinity) {
      seconds += hop_seconds(bytes, hop);  // a hop alone: store and forward
      continue;
    }
    const LinkSpec& link = cluster_.links.at(hop.link);
    const Figure& figure = hop.forward ? link.bandwidth_forward : link.bandwidth_backward;
    latency += link.latency.value;
    bandwidth = std::min(bandwidth, figure.known() ? figure.value : 0.0);
    if (relays(hop)) continue;  // on through the switch
    seconds += bandwidth > 0 ? latency + bytes / bandwidth : kInfinity;
    latency = 0, bandwidth = kInfinity;
  }
  if (bandwidth < kInfinity) seconds += bandwidth > 0 ? latency + bytes / bandwidth : kInfinity;
  return seconds;
}

std::vector<std::vector<double>> CostModel::transfer_seconds_from(
    int from_device, std::span<const double> sizes) const {
  const Router::Tree tree = router_->tree_from(from_device);
  const size_t states = tree.previous_state.size();
  // Along the tree from the device, as path_seconds goes along a path: per state the seconds
  // of the stretches closed so far (per size), and the open stretch's latency and bandwidth.
  std::vector<std::vector<double>> closed(sizes.size(), std::vector<double>(states, 0));
  std::vector<double> open_latency(states, 0), open_bandwidth(states, kInfinity);
  for (int current : tree.settled) {
    if (current == tree.start) continue;
    const int previous = tree.previous_state[current];
    const Cluster::Hop& hop = tree.previous_hop[current];
    if (!relays(hop) && open_bandwidth[previous] == kInfinity) {
      for (size_t s = 0; s < sizes.size(); ++s)
        closed[s][current] = closed[s][previous] + hop_seconds(sizes[s], hop);
      continue;
    }
    const LinkSpec& link = cluster_.links.at(hop.link);
    const Figure& figure = hop.forward ? link.bandwidth_forward : link.bandwidth_backward;
    const double latency = open_latency[previous] + link.latency.value;
    const double bandwidth =
        std::min(open_bandwidth[previous], figure.known() ? figure.value : 0.0);
    if (relays(hop)) {
      for (size_t s = 0; s < sizes.size(); ++s) closed[s][current] = closed[s][previous];
      open_latency[current] = latency;
      open_bandwidth[current] = bandwidth;
      continue;
    }
    for (size_t s = 0; s < sizes.size(); ++s) {
      closed[s][current] =
          closed[s][previous] + (bandwidth > 0 ? latency + sizes[s] / bandwidth : kInfinity);
    }
  }
  const int devices = static_cast<int>(cluster_.devices.size());
  std::vector<std::vector<double>> seconds(sizes.size(), std::vector<double>(devices, 0));
  for (int to = 0; to < devices; ++to) {
    if (to == from_device) continue;
    const int reached = tree.reached[to];
    for (size_t s = 0; s < sizes.size(); ++s) {
      double total = closed[s][reached];
      if (open_bandwidth[reached] < kInfinity)
        total += open_bandwidth[reached] > 0
                     ? open_latency[reached] + sizes[s] / open_bandwidth[reached]
                     : kInfinity;
      seconds[s][to] = total;
    }
  }
  return seconds;
}

double CostModel::hop_seconds(double bytes, const Cluster::Hop& hop) const {
  const LinkSpec& link = cluster_.links.at(hop.link);
  const Figure& bandwidth = hop.forward ? link.bandwidth_forward : link.bandwidth_backward;
  // As in routing: a direction without a bandwidth carries nothing.
  if (!bandwidth.known()) return kInfinity;
  return link.latency.value + bytes / bandwidth.value;
}

}  // namespace tandem
