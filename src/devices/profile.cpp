#include "devices/profile.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "ir/error.h"

namespace tandem {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "tandem-profile";
constexpr int kVersion = 1;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// FNV-1a: stable across runs and machines, unlike std::hash.
uint64_t fnv1a(const void* data, size_t size, uint64_t hash = 14695981039346656037ull) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

std::string type_signature(const TensorType& type) {
  return std::string(dtype_name(type.dtype)) + "[" + shape_str(type.shape) + "]";
}

template <typename T>
std::string list_signature(const std::vector<T>& items) {
  std::string text = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ",";
    if constexpr (std::is_same_v<T, std::string>) {
      text += items[i];
    } else {
      text += number(static_cast<double>(items[i]));
    }
  }
  return text + "]";
}

std::string graph_signature(const Graph& graph) {
  std::string nodes;
  for (const Node& node : graph.nodes) nodes += op_signature(node, graph) + ";";
  char text[32];
  std::snprintf(text, sizeof text, "graph#%016llx",
                static_cast<unsigned long long>(fnv1a(nodes.data(), nodes.size())));
  return text;
}

std::string attribute_signature(const Attribute& attribute) {
  return std::visit(
      [](const auto& item) -> std::string {
        using T = std::decay_t<decltype(item)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>) {
          return number(static_cast<double>(item));
        } else if constexpr (std::is_same_v<T, std::string>) {
          return item;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          char hash[24];
          std::snprintf(hash, sizeof hash, "#%016llx",
                        static_cast<unsigned long long>(fnv1a(item.raw(), item.nbytes())));
          return type_signature({item.dtype(), item.shape()}) + hash;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<Graph>>) {
          return item ? graph_signature(*item) : "graph#none";
        } else {
          return list_signature(item);
        }
      },
      attribute);
}

// Reads one profile file, naming the field of anything it rejects.
class ProfileReader {
 public:
  explicit ProfileReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(path_, "field '" + field + "': " + what);
  }

  const json& member(const json& object, const std::string& key, const std::string& field) const {
    auto found = object.find(key);
    if (found == object.end()) fail(field, "missing");
    return *found;
  }

  // An optional map of op type -> points {<work>: positive, seconds: positive}.
  template <typename Point>
  void read_kind_curves(const json& root, const std::string& key, const std::string& work,
                        std::map<std::string, std::vector<Point>>& curves) const {
    if (!root.contains(key)) return;
    const json& kinds = object_at(root, key, key);
    for (const auto& [op_type, points] : kinds.items()) {
      const std::string field = key + "[\"" + op_type + "\"]";
      const json& array = array_at(kinds, op_type, field);
      std::vector<Point>& curve = curves[op_type];
      for (size_t i = 0; i < array.size(); ++i) {
        const std::string point = field + "[" + std::to_string(i) + "]";
        if (!array[i].is_object()) fail(point, "expected an object");
        curve.push_back({number_at(array[i], work, point + "." + work, true),
                         number_at(array[i], "seconds", point + ".seconds", true)});
        if constexpr (requires(Point p) { p.row; }) {
          if (array[i].contains("row"))
            curve.back().row = number_at(array[i], "row", point + ".row", true);
        }
      }
    }
  }

  double number_at(const json& object, const std::string& key, const std::string& field,
                   bool positive) const {
    const json& item = member(object, key, field);
    if (!item.is_number()) fail(field, "expected a number, got " + item.dump());
    const double value = item.get<double>();
    if (!std::isfinite(value) || value < 0 || (positive && value == 0)) {
      fail(field, std::string("must be ") + (positive ? "positive" : "zero or positive") +
                      ", got " + item.dump());
    }
    return value;
  }

  int64_t integer_at(const json& object, const std::string& key, const std::string& field,
                     int64_t minimum) const {
    const json& item = member(object, key, field);
    if (!item.is_number_integer() || item.get<int64_t>() < minimum) {
      fail(field, "expected an integer >= " + std::to_string(minimum) + ", got " + item.dump());
    }
    return item.get<int64_t>();
  }

  std::string string_at(const json& object, const std::string& key,
                        const std::string& field) const {
    const json& item = member(object, key, field);
    if (!item.is_string()) fail(field, "expected a string, got " + item.dump());
    return item.get<std::string>();
  }

  const json& object_at(const json& object, const std::string& key,
                        const std::string& field) const {
    const json& item = member(object, key, field);
    if (!item.is_object()) fail(field, "expected an object");
    return item;
  }

  const json& array_at(const json& object, const std::string& key, const std::string& field) const {
    const json& item = member(object, key, field);
    if (!item.is_array()) fail(field, "expected an array");
    return item;
  }

  // Absent figures stay unknown; a present one needs a source when it is known.
  Figure figure_at(const json& object, const std::string& key, const std::string& field) const {
    Figure figure;
    if (!object.contains(key)) return figure;
    const json& item = object_at(object, key, field);
    figure.value = number_at(item, "value", field + ".value", false);
    figure.source = string_at(item, "source", field + ".source");
    if (figure.known() && figure.source.empty()) fail(field + ".source", "empty");
    if (item.contains("note")) figure.note = string_at(item, "note", field + ".note");
    return figure;
  }

  // An array of {flops, seconds} points (depthwise and convolution curves).
  std::vector<CalibrationProfile::WorkPoint> work_points(const json& array,
                                                         const std::string& field) const {
    std::vector<CalibrationProfile::WorkPoint> points;
    for (size_t i = 0; i < array.size(); ++i) {
      const std::string point = field + "[" + std::to_string(i) + "]";
      if (!array[i].is_object()) fail(point, "expected an object");
      points.push_back({number_at(array[i], "flops", point + ".flops", true),
                        number_at(array[i], "seconds", point + ".seconds", true)});
    }
    return points;
  }

  CalibrationProfile read(const json& root) const {
    if (!root.is_object()) fail("(top level)", "expected an object");
    if (string_at(root, "format", "format") != kFormat) {
      fail("format", "expected \"" + std::string(kFormat) + "\"");
    }
    CalibrationProfile profile;
    profile.version = static_cast<int>(integer_at(root, "version", "version", 0));
    if (profile.version != kVersion) {
      fail("version", "version " + std::to_string(profile.version) +
                          " is not supported (this tandem reads version " +
                          std::to_string(kVersion) + ")");
    }
    profile.device_name = string_at(root, "device_name", "device_name");
    profile.kind = device_kind(string_at(root, "kind", "kind"));
    profile.threads = static_cast<int>(integer_at(root, "threads", "threads", 0));

    const json& figures = object_at(root, "figures", "figures");
    for (const char* group : {"matrix_flops", "vector_flops"}) {
      const std::string field = std::string("figures.") + group;
      const json& per_precision = object_at(figures, group, field);
      auto& target = std::string(group) == "matrix_flops" ? profile.figures.matrix_flops
                                                          : profile.figures.vector_flops;
      for (size_t p = 0; p < kPrecisionCount; ++p) {
        target[p] = figure_at(per_precision, std::string(precision_name(static_cast<Precision>(p))),
                              field + "." + std::string(precision_name(static_cast<Precision>(p))));
      }
    }
    profile.figures.memory_bytes = figure_at(figures, "memory_bytes", "figures.memory_bytes");
    profile.figures.memory_bandwidth =
        figure_at(figures, "memory_bandwidth", "figures.memory_bandwidth");
    profile.figures.launch_overhead =
        figure_at(figures, "launch_overhead", "figures.launch_overhead");
    profile.figures.step_overhead = figure_at(figures, "step_overhead", "figures.step_overhead");
    profile.figures.run_overhead = figure_at(figures, "run_overhead", "figures.run_overhead");
    profile.figures.handoff_latency =
        figure_at(figures, "handoff_latency", "figures.handoff_latency");
    profile.figures.price_per_hour = figure_at(figures, "price_per_hour", "figures.price_per_hour");
    profile.figures.matrix_tile =
        static_cast<int>(integer_at(figures, "matrix_tile", "figures.matrix_tile", 1));
    if (figures.contains("matrix_tile_source")) {
      profile.figures.matrix_tile_source =
          string_at(figures, "matrix_tile_source", "figures.matrix_tile_source");
    }
    profile.host_link_bandwidth = figure_at(root, "host_link_bandwidth", "host_link_bandwidth");
    profile.view_overhead = figure_at(root, "view_overhead", "view_overhead");
    profile.subgraph_run_overhead =
        figure_at(root, "subgraph_run_overhead", "subgraph_run_overhead");
    profile.loop_iteration_overhead =
        figure_at(root, "loop_iteration_overhead", "loop_iteration_overhead");
    profile.speed_drift = figure_at(root, "speed_drift", "speed_drift");
    profile.speed_reference = figure_at(root, "speed_reference", "speed_reference");
    profile.host_link_latency = figure_at(root, "host_link_latency", "host_link_latency");
    if (root.contains("vector_op_rates")) {
      const json& rates = object_at(root, "vector_op_rates", "vector_op_rates");
      for (const auto& [op_type, rate] : rates.items()) {
        profile.vector_op_rates[op_type] =
            number_at(rates, op_type, "vector_op_rates[\"" + op_type + "\"]", true);
      }
    }
    read_kind_curves(root, "op_element_curves", "elements", profile.op_element_curves);
    read_kind_curves(root, "op_run_curves", "runs", profile.op_run_curves);
    if (root.contains("op_overheads")) {
      const json& overheads = object_at(root, "op_overheads", "op_overheads");
      for (const auto& [op_type, seconds] : overheads.items()) {
        profile.op_overheads[op_type] =
            number_at(overheads, op_type, "op_overheads[\"" + op_type + "\"]", false);
      }
    }

    const json& curve = array_at(root, "gemm_curve", "gemm_curve");
    for (size_t i = 0; i < curve.size(); ++i) {
      const std::string field = "gemm_curve[" + std::to_string(i) + "]";
      if (!curve[i].is_object()) fail(field, "expected an object");
      CalibrationProfile::GemmPoint point;
      point.m = integer_at(curve[i], "m", field + ".m", 1);
      point.n = integer_at(curve[i], "n", field + ".n", 1);
      point.k = integer_at(curve[i], "k", field + ".k", 1);
      point.seconds = number_at(curve[i], "seconds", field + ".seconds", true);
      if (curve[i].contains("batch"))
        point.batch = integer_at(curve[i], "batch", field + ".batch", 1);
      profile.gemm_curve.push_back(point);
    }

    // Extra-time curves (`extra`) may hold zeros: the first read, the write or the hand-off
    // between cores was no slower at that size.
    struct Curve {
      const char* key;
      std::vector<CalibrationProfile::BandwidthPoint>* target;
      bool extra;
    };
    for (const auto& [key, target, extra] :
         {Curve{"bandwidth_curve", &profile.bandwidth_curve, false},
          Curve{"weight_curve", &profile.weight_curve, false},
          Curve{"conv_weight_curve", &profile.conv_weight_curve, false},
          Curve{"reorder_in_curve", &profile.reorder_in_curve, false},
          Curve{"reorder_out_curve", &profile.reorder_out_curve, false},
          Curve{"product_output_read_curve", &profile.product_output_read_curve, true},
          Curve{"product_input_write_curve", &profile.product_input_write_curve, true},
          Curve{"cross_core_spread_curve", &profile.cross_core_spread_curve, true},
          Curve{"cross_core_gather_curve", &profile.cross_core_gather_curve, true}}) {
      if (!root.contains(key)) continue;
      const json& bandwidth = array_at(root, key, key);
      for (size_t i = 0; i < bandwidth.size(); ++i) {
        const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
        if (!bandwidth[i].is_object()) fail(field, "expected an object");
        target->push_back({number_at(bandwidth[i], "bytes", field + ".bytes", true),
                           number_at(bandwidth[i], "seconds", field + ".seconds", !extra)});
      }
    }

    if (root.contains("depthwise_curves")) {
      const json& curves = object_at(root, "depthwise_curves", "depthwise_curves");
      for (const auto& [key, points] : curves.items()) {
        const std::string field = "depthwise_curves[\"" + key + "\"]";
        bool known = false;
        for (bool in : {false, true}) {
          for (bool out : {false, true}) known = known || key == depthwise_layout_key(in, out);
        }
        if (!known) fail(field, "expected nchw-nchw, nhwc-nchw, nchw-nhwc or nhwc-nhwc");
        profile.depthwise_curves[key] = work_points(array_at(curves, key, field), field);
      }
    }
    if (root.contains("streamed_conv_points")) {
      const json& points = array_at(root, "streamed_conv_points", "streamed_conv_points");
      for (size_t i = 0; i < points.size(); ++i) {
        const std::string field = "streamed_conv_points[" + std::to_string(i) + "]";
        if (!points[i].is_object()) fail(field, "expected an object");
        profile.streamed_conv_points.push_back(
            {number_at(points[i], "flops", field + ".flops", true),
             number_at(points[i], "weight_bytes", field + ".weight_bytes", true),
             number_at(points[i], "run_weight_bytes", field + ".run_weight_bytes", true),
             number_at(points[i], "seconds", field + ".seconds", true)});
      }
    }
    if (root.contains("streamed_product_points")) {
      const json& points = array_at(root, "streamed_product_points", "streamed_product_points");
      for (size_t i = 0; i < points.size(); ++i) {
        const std::string field = "streamed_product_points[" + std::to_string(i) + "]";
        if (!points[i].is_object()) fail(field, "expected an object");
        profile.streamed_product_points.push_back(
            {integer_at(points[i], "m", field + ".m", 1),
             integer_at(points[i], "k", field + ".k", 1),
             integer_at(points[i], "n", field + ".n", 1),
             number_at(points[i], "run_weight_bytes", field + ".run_weight_bytes", true),
             number_at(points[i], "seconds", field + ".seconds", true)});
      }
    }
    if (root.contains("conv_curve"))
      profile.conv_curve = work_points(array_at(root, "conv_curve", "conv_curve"), "conv_curve");

    const json& op_seconds = object_at(root, "op_seconds", "op_seconds");
    for (const auto& [signature, seconds] : op_seconds.items()) {
      profile.op_seconds[signature] =
          number_at(op_seconds, signature, "op_seconds[\"" + signature + "\"]", true);
    }

    if (root.contains("measurements")) {
      const json& measurements = array_at(root, "measurements", "measurements");
      for (size_t i = 0; i < measurements.size(); ++i) {
        const std::string field = "measurements[" + std::to_string(i) + "]";
        if (!measurements[i].is_object()) fail(field, "expected an object");
        profile.measurements.push_back(
            {string_at(measurements[i], "name", field + ".name"),
             number_at(measurements[i], "value", field + ".value", false),
             string_at(measurements[i], "unit", field + ".unit"),
             string_at(measurements[i], "method", field + ".method")});
      }
    }
    return profile;
  }

 private:
  DeviceKind device_kind(const std::string& name) const {
    if (name == "cpu") return DeviceKind::kCpu;
    if (name == "gpu") return DeviceKind::kGpu;
    if (name == "tpu") return DeviceKind::kTpu;
    fail("kind", "expected cpu, gpu or tpu, got \"" + name + "\"");
  }

  std::string path_;
};

const char* kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kTpu: return "tpu";
  }
  return "cpu";
}

json figure_json(const Figure& figure) {
  json item = {{"value", figure.value}, {"source", figure.source}};
  if (!figure.note.empty()) item["note"] = figure.note;
  return item;
}

// Line and column of a byte offset, for parse errors.
std::string position(const std::string& text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

std::string depthwise_layout_key(bool input_channels_last, bool output_channels_last) {
  return std::string(input_channels_last ? "nhwc" : "nchw") + "-" +
         (output_channels_last ? "nhwc" : "nchw");
}

std::string vector_op_key(const Node& node) {
  if (node.op_type == "Gelu" && node.attr_string("approximate", "none") == "tanh")
    return "Gelu:tanh";
  return node.op_type;
}

namespace {

double box_pairs(const Node& node, const Graph& graph) {
  if (node.inputs.size() < 2 || node.inputs[0] < 0 || node.inputs[1] < 0) return 0;
  const Shape& boxes = graph.values[node.inputs[0]].type.shape;
  const Shape& scores = graph.values[node.inputs[1]].type.shape;
  if (boxes.size() != 3 || scores.size() != 3 || !is_static(boxes) || !is_static(scores)) return 0;
  const int64_t count = boxes[1];
  int64_t kept = count;
  if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
    const Value& cap = graph.values[node.inputs[2]];
    if (cap.is_constant() && cap.constant.numel() == 1)
      kept = std::clamp<int64_t>(cap.constant.to_int64s().at(0), 0, count);
  }
  // Candidate i is compared with min(i, kept) boxes.
  const double below_cap = static_cast<double>(kept) * static_cast<double>(kept - 1) / 2;
  const double past_cap = static_cast<double>(count - kept) * static_cast<double>(kept);
  return static_cast<double>(scores[0]) * static_cast<double>(scores[1]) * (below_cap + past_cap);
}

}  // namespace

double rated_elements(const Node& node, const Graph& graph) {
  if (node.op_type == "EmbeddingBag" && node.inputs.size() > 1 && node.inputs[0] >= 0 &&
      node.inputs[1] >= 0) {
    const Shape& table = graph.values[node.inputs[0]].type.shape;
    const Shape& indices = graph.values[node.inputs[1]].type.shape;
    if (!is_static(table) || !is_static(indices) || table.empty() || table[0] <= 0) return 0;
    return static_cast<double>(numel(indices)) * static_cast<double>(numel(table) / table[0]);
  }
  // A NonMaxSuppression compares each candidate box with those kept before it: as many pairs
  // as its boxes make, per batch and class, where nothing is suppressed (kept boxes capped by
  // a constant max_output_boxes_per_class).
  if (node.op_type == "NonMaxSuppression") return box_pairs(node, graph);
  // A GlobalAveragePool reads a plane for each value it writes, a TopK scans its rows for the
  // few it writes: their input's elements.
  const bool reduces = node.op_type == "GlobalAveragePool" || node.op_type == "TopK";
  for (const auto* ids : {reduces ? &node.inputs : &node.outputs, &node.inputs}) {
    if (ids->empty() || ids->front() < 0) continue;
    const Shape& shape = graph.values[ids->front()].type.shape;
    if (is_static(shape)) return static_cast<double>(numel(shape));
  }
  return 0;
}

double row_length(const Node& node, const Graph& graph) {
  const bool softmax = node.op_type == "Softmax" || node.op_type == "LogSoftmax";
  const bool pool = node.op_type == "GlobalAveragePool";
  if ((!softmax && !pool && node.op_type != "LayerNormalization") || node.inputs.empty() ||
      node.inputs[0] < 0)
    return 0;
  const Shape& shape = graph.values[node.inputs[0]].type.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  // A pool's rows are its planes: the dims after batch and channels.
  int64_t axis = pool ? 2 : node.attr_int("axis", -1);
  if (rank == 0 || !is_static(shape) || axis < -rank || axis >= rank) return 0;
  if (axis < 0) axis += rank;
  // A Softmax along an inner axis runs down columns, another loop.
  if (softmax && axis != rank - 1) return 0;
  return static_cast<double>(numel(Shape(shape.begin() + axis, shape.end())));
}

double copy_runs(const Node& node, const Graph& graph) {
  if (node.op_type != "Gather" && node.op_type != "Concat") return 0;
  const auto axis_of = [&](size_t rank) {
    const int64_t axis = node.attr_int("axis", 0);
    const auto signed_rank = static_cast<int64_t>(rank);
    return axis < -signed_rank || axis >= signed_rank ? int64_t{-1}
                                                      : (axis < 0 ? axis + signed_rank : axis);
  };
  if (node.op_type == "Gather") {
    if (node.outputs.empty() || node.outputs[0] < 0 || node.inputs.empty() || node.inputs[0] < 0)
      return 0;
    const Shape& data = graph.values[node.inputs[0]].type.shape;
    const Shape& out = graph.values[node.outputs[0]].type.shape;
    const int64_t axis = axis_of(data.size());
    if (axis < 0 || !is_static(data) || !is_static(out)) return 0;
    const int64_t run = numel(Shape(data.begin() + axis + 1, data.end()));
    return run > 0 ? static_cast<double>(numel(out) / run) : 0;
  }
  double runs = 0;
  for (int id : node.inputs) {
    if (id < 0) continue;
    const Shape& shape = graph.values[id].type.shape;
    const int64_t axis = axis_of(shape.size());
    if (axis < 0 || !is_static(shape)) return 0;
    runs += static_cast<double>(numel(Shape(shape.begin(), shape.begin() + axis)));
  }
  return runs;
}

std::string op_signature(const Node& node, const Graph& graph) {
  std::string text = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
  const auto value_list = [&](const std::vector<int>& ids) {
    std::string list = "(";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) list += ",";
      list += ids[i] < 0 ? "-" : type_signature(graph.values[ids[i]].type);
    }
    return list + ")";
  };
  // Outputs follow from inputs, attributes and constant inputs (a Slice's starts): listing
  // them tells apart ops whose constant inputs differ.
  text += value_list(node.inputs) + "->" + value_list(node.outputs);
  text += "{";
  bool first = true;
  for (const auto& [name, attribute] : node.attributes) {
    text += (first ? "" : ",") + name + "=" + attribute_signature(attribute);
    first = false;
  }
  return text + "}";
}

CalibrationProfile read_profile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError(path, "cannot open the profile");
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path, "not valid JSON at " + position(text, e.byte == 0 ? 0 : e.byte - 1) +
                               " (a calibration profile is written by `tandem calibrate`)");
  } catch (const json::exception& e) {  // out_of_range: a number beyond a double
    throw InputError(path, std::string("not valid JSON: ") + e.what());
  }
  return ProfileReader(path).read(root);
}

void write_profile(const std::string& path, const CalibrationProfile& profile) {
  json figures;
  for (const char* group : {"matrix_flops", "vector_flops"}) {
    const auto& source = std::string(group) == "matrix_flops" ? profile.figures.matrix_flops
                                                              : profile.figures.vector_flops;
    json per_precision = json::object();
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      if (source[p].known())
        per_precision[std::string(precision_name(static_cast<Precision>(p)))] =
            figure_json(source[p]);
    }
    figures[group] = per_precision;
  }
  const std::pair<const char*, const Figure*> scalars[] = {
      {"memory_bytes", &profile.figures.memory_bytes},
      {"memory_bandwidth", &profile.figures.memory_bandwidth},
      {"launch_overhead", &profile.figures.launch_overhead},
      {"step_overhead", &profile.figures.step_overhead},
      {"run_overhead", &profile.figures.run_overhead},
      {"handoff_latency", &profile.figures.handoff_latency},
      {"price_per_hour", &profile.figures.price_per_hour}};
  for (const auto& [name, figure] : scalars) {
    if (figure->known()) figures[name] = figure_json(*figure);
  }
  figures["matrix_tile"] = profile.figures.matrix_tile;
  if (!profile.figures.matrix_tile_source.empty()) {
    figures["matrix_tile_source"] = profile.figures.matrix_tile_source;
  }

  json curve = json::array();
  for (const auto& point : profile.gemm_curve) {
    curve.push_back({{"m", point.m}, {"n", point.n}, {"k", point.k}, {"seconds", point.seconds}});
    if (point.batch > 1) curve.back()["batch"] = point.batch;
  }
  json bandwidth = json::array();
  for (const auto& point : profile.bandwidth_curve) {
    bandwidth.push_back({{"bytes", point.bytes}, {"seconds", point.seconds}});
  }
  const auto points_json = [](const std::vector<CalibrationProfile::BandwidthPoint>& points) {
    json array = json::array();
    for (const auto& point : points)
      array.push_back({{"bytes", point.bytes}, {"seconds", point.seconds}});
    return array;
  };
  const json weights = points_json(profile.weight_curve);
  json measurements = json::array();
  for (const auto& row : profile.measurements) {
    measurements.push_back(
        {{"name", row.name}, {"value", row.value}, {"unit", row.unit}, {"method", row.method}});
  }
  json root = {{"format", kFormat},
               {"version", profile.version},
               {"device_name", profile.device_name},
               {"kind", kind_name(profile.kind)},
               {"threads", profile.threads},
               {"figures", figures},
               {"gemm_curve", curve},
               {"bandwidth_curve", bandwidth},
               {"op_seconds", profile.op_seconds},
               {"measurements", measurements}};
  if (profile.host_link_bandwidth.known()) {
    root["host_link_bandwidth"] = figure_json(profile.host_link_bandwidth);
  }
  if (!profile.weight_curve.empty()) root["weight_curve"] = weights;
  if (!profile.conv_weight_curve.empty())
    root["conv_weight_curve"] = points_json(profile.conv_weight_curve);
  if (!profile.streamed_conv_points.empty()) {
    json points = json::array();
    for (const auto& point : profile.streamed_conv_points)
      points.push_back({{"flops", point.flops},
                        {"weight_bytes", point.weight_bytes},
                        {"run_weight_bytes", point.run_weight_bytes},
                        {"seconds", point.seconds}});
    root["streamed_conv_points"] = points;
  }
  if (!profile.streamed_product_points.empty()) {
    json points = json::array();
    for (const auto& point : profile.streamed_product_points)
      points.push_back({{"m", point.m},
                        {"k", point.k},
                        {"n", point.n},
                        {"run_weight_bytes", point.run_weight_bytes},
                        {"seconds", point.seconds}});
    root["streamed_product_points"] = points;
  }
  if (!profile.reorder_in_curve.empty())
    root["reorder_in_curve"] = points_json(profile.reorder_in_curve);
  if (!profile.reorder_out_curve.empty())
    root["reorder_out_curve"] = points_json(profile.reorder_out_curve);
  if (!profile.product_output_read_curve.empty())
    root["product_output_read_curve"] = points_json(profile.product_output_read_curve);
  if (!profile.product_input_write_curve.empty())
    root["product_input_write_curve"] = points_json(profile.product_input_write_curve);
  if (!profile.cross_core_spread_curve.empty())
    root["cross_core_spread_curve"] = points_json(profile.cross_core_spread_curve);
  if (!profile.cross_core_gather_curve.empty())
    root["cross_core_gather_curve"] = points_json(profile.cross_core_gather_curve);
  if (profile.view_overhead.known()) root["view_overhead"] = figure_json(profile.view_overhead);
  if (profile.subgraph_run_overhead.known()) {
    root["subgraph_run_overhead"] = figure_json(profile.subgraph_run_overhead);
  }
  if (profile.loop_iteration_overhead.known())
    root["loop_iteration_overhead"] = figure_json(profile.loop_iteration_overhead);
  if (profile.speed_drift.known()) root["speed_drift"] = figure_json(profile.speed_drift);
  if (profile.speed_reference.known())
    root["speed_reference"] = figure_json(profile.speed_reference);
  if (profile.host_link_latency.known())
    root["host_link_latency"] = figure_json(profile.host_link_latency);
  if (!profile.vector_op_rates.empty()) root["vector_op_rates"] = profile.vector_op_rates;
  const auto kind_curves_json = [&](const auto& curves, const char* key, const char* work,
                                    auto work_of) {
    if (curves.empty()) return;
    json kinds = json::object();
    for (const auto& [op_type, points] : curves) {
      json array = json::array();
      for (const auto& point : points) {
        array.push_back({{work, work_of(point)}, {"seconds", point.seconds}});
        if constexpr (requires { point.row; }) {
          if (point.row > 0) array.back()["row"] = point.row;
        }
      }
      kinds[op_type] = std::move(array);
    }
    root[key] = std::move(kinds);
  };
  kind_curves_json(profile.op_element_curves, "op_element_curves", "elements",
                   [](const CalibrationProfile::ElementPoint& p) { return p.elements; });
  kind_curves_json(profile.op_run_curves, "op_run_curves", "runs",
                   [](const CalibrationProfile::RunPoint& p) { return p.runs; });
  if (!profile.op_overheads.empty()) root["op_overheads"] = profile.op_overheads;
  const auto work_points_json = [](const std::vector<CalibrationProfile::WorkPoint>& points) {
    json array = json::array();
    for (const auto& point : points)
      array.push_back({{"flops", point.flops}, {"seconds", point.seconds}});
    return array;
  };
  if (!profile.depthwise_curves.empty()) {
    json curves = json::object();
    for (const auto& [key, points] : profile.depthwise_curves)
      curves[key] = work_points_json(points);
    root["depthwise_curves"] = std::move(curves);
  }
  if (!profile.conv_curve.empty()) root["conv_curve"] = work_points_json(profile.conv_curve);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw InputError(path, "cannot write the profile");
  file << root.dump(2) << "\n";
  if (!file.flush()) throw InputError(path, "cannot write the profile");
}

}  // namespace tandem
