// Resize (opsets 13, 18, 19): its attributes, output sizes and sampling coordinates
// (tensor_resize.h), its schema and cost.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/error.h"
#include "ir/ops/tensor_ops.h"
#include "ir/ops/tensor_resize.h"

namespace tandem {
namespace {

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw InputError(node.label() + ": " + message);
}

// The attribute `name` must not appear before `since`.
void require_opset(const Node& node, int opset, std::string_view name, int since) {
  if (opset < since && node.has(name)) {
    fail(node, "attribute '" + std::string(name) + "' needs opset " + std::to_string(since) +
                   " (the model has opset " + std::to_string(opset) + ")");
  }
}

ResizeMode parse_mode(const Node& node) {
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear") return ResizeMode::kLinear;
  if (mode == "cubic") return ResizeMode::kCubic;
  fail(node, "unknown mode '" + mode + "' (nearest, linear or cubic)");
}

ResizeCoordinates parse_coordinates(const Node& node, int opset) {
  const std::string mode = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (mode == "half_pixel") return ResizeCoordinates::kHalfPixel;
  if (mode == "pytorch_half_pixel") return ResizeCoordinates::kPytorchHalfPixel;
  if (mode == "align_corners") return ResizeCoordinates::kAlignCorners;
  if (mode == "asymmetric") return ResizeCoordinates::kAsymmetric;
  if (mode == "tf_crop_and_resize") return ResizeCoordinates::kTfCropAndResize;
  if (mode == "half_pixel_symmetric") {
    if (opset < 19)
      fail(node, "coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19");
    return ResizeCoordinates::kHalfPixelSymmetric;
  }
  fail(node, "unknown coordinate_transformation_mode '" + mode + "'");
}

ResizeNearest parse_nearest(const Node& node) {
  const std::string mode = node.attr_string("nearest_mode", "round_prefer_floor");
  if (mode == "round_prefer_floor") return ResizeNearest::kRoundPreferFloor;
  if (mode == "round_prefer_ceil") return ResizeNearest::kRoundPreferCeil;
  if (mode == "floor") return ResizeNearest::kFloor;
  if (mode == "ceil") return ResizeNearest::kCeil;
  fail(node, "unknown nearest_mode '" + mode + "'");
}

ResizeAspect parse_aspect(const Node& node) {
  const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") return ResizeAspect::kStretch;
  if (policy == "not_larger") return ResizeAspect::kNotLarger;
  if (policy == "not_smaller") return ResizeAspect::kNotSmaller;
  fail(node, "unknown keep_aspect_ratio_policy '" + policy + "'");
}

// A 1-D input's element count (kDynamicDim when not known).
int64_t list_length(const ValueInfo& info) { return info.shape[0]; }

}  // namespace

ResizeAttributes resize_attributes(const Node& node, int opset, size_t rank) {
  for (const char* name : {"axes", "keep_aspect_ratio_policy", "antialias"}) {
    require_opset(node, opset, name, 18);
  }
  ResizeAttributes a;
  a.mode = parse_mode(node);
  a.coordinates = parse_coordinates(node, opset);
  a.nearest = parse_nearest(node);
  a.aspect = parse_aspect(node);
  a.cubic_coeff_a = node.attr_float("cubic_coeff_a", -0.75f);
  if (!std::isfinite(a.cubic_coeff_a)) fail(node, "cubic_coeff_a must be finite");
  const int64_t exclude = node.attr_int("exclude_outside", 0);
  if (exclude != 0 && exclude != 1) fail(node, "exclude_outside must be 0 or 1");
  a.exclude_outside = exclude == 1;
  a.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
  const int64_t antialias = node.attr_int("antialias", 0);
  if (antialias != 0 && antialias != 1) fail(node, "antialias must be 0 or 1");
  // Antialiasing only changes linear and cubic filters (the spec: nearest ignores it).
  if (antialias == 1 && a.mode != ResizeMode::kNearest) {
    fail(node, "antialias=1 is not supported (resize with antialias=0, or pre-filter the input)");
  }
  const auto r = static_cast<int64_t>(rank);
  if (node.has("axes")) {
    const std::vector<int64_t> axes = node.attr_ints("axes");
    if (axes.empty()) fail(node, "attribute 'axes' is empty");
    std::vector<bool> seen(rank, false);
    for (int64_t axis : axes) {
      if (axis < -r || axis >= r) {
        fail(node,
             "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
      }
      const int64_t d = axis < 0 ? axis + r : axis;
      if (seen[d]) fail(node, "axes contain axis " + std::to_string(d) + " twice");
      seen[d] = true;
      a.axes.push_back(d);
    }
  } else {
    for (int64_t d = 0; d < r; ++d) a.axes.push_back(d);
  }
  return a;
}

ResizeGeometry resize_geometry(const Node& node, const ResizeAttributes& a, const Shape& input,
                               const Tensor* roi, const Tensor* scales, const Tensor* sizes) {
  const size_t rank = input.size();
  const size_t count = a.axes.size();
  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if (scales && sizes) fail(node, "only one of scales and sizes may be given");
  if (!scales && !sizes) fail(node, "one of scales and sizes must be given");
  ResizeGeometry g;
  g.output = input;
  g.scales.assign(rank, 1.0f);
  g.roi_start.assign(rank, 0.0f);
  g.roi_end.assign(rank, 1.0f);
  const Tensor& given = scales ? *scales : *sizes;
  if (static_cast<size_t>(given.numel()) != count) {
    fail(node, std::string(scales ? "scales" : "sizes") + " has " + std::to_string(given.numel()) +
                   " values, expected " + std::to_string(count) +
                   (count == rank ? " (one per axis of X)" : " (one per entry of axes)"));
  }
  if (roi && roi->numel() > 0) {
    const std::vector<double> values = roi->to_doubles();
    if (values.size() != 2 * count) {
      fail(node, "roi has " + std::to_string(values.size()) + " values, expected " +
                     std::to_string(2 * count));
    }
    for (double v : values) {
      if (!std::isfinite(v) || std::abs(v) > 1e6) fail(node, "roi values must be finite");
    }
    for (size_t i = 0; i < count; ++i) {
      g.roi_start[a.axes[i]] = static_cast<float>(values[i]);
      g.roi_end[a.axes[i]] = static_cast<float>(values[count + i]);
    }
  }
  if (scales) {
    const std::vector<double> values = scales->to_doubles();
    for (size_t i = 0; i < count; ++i) {
      const int64_t d = a.axes[i];
      const auto scale = static_cast<float>(values[i]);
      if (!(scale > 0.0f) || !std::isfinite(scale)) {
        fail(node, "scale " + std::to_string(values[i]) + " must be positive and finite");
      }
      g.scales[d] = scale;
      if (input[d] < 0) {
        g.output[d] = kDynamicDim;
        continue;
      }
      // float arithmetic, as ONNX shape inference and ONNX Runtime compute it.
      const float size = std::floor(static_cast<float>(input[d]) * scale);
      if (size > static_cast<float>(kMaxElements)) {
        fail(node,
             "scale " + std::to_string(scale) + " makes axis " + std::to_string(d) + " too large");
      }
      g.output[d] = static_cast<int64_t>(size);
    }
    return g;
  }
  const std::vector<int64_t> values = sizes->to_int64s();
  bool all_known = true;
  for (size_t i = 0; i < count; ++i) {
    const int64_t d = a.axes[i];
    const int64_t size = values[i];
    if (size < 0 || size > kMaxElements) {
      fail(node,
           "size " + std::to_string(size) + " for axis " + std::to_string(d) + " is out of range");
    }
    if (input[d] == 0 && size != 0) {
      fail(node,
           "cannot resize the empty axis " + std::to_string(d) + " to " + std::to_string(size));
    }
    g.output[d] = size;
    if (input[d] < 0) {
      all_known = false;
      g.scales[d] = 0.0f;  // known only at run time
    } else {
      g.scales[d] = input[d] == 0 ? 1.0f : static_cast<float>(size) / static_cast<float>(input[d]);
    }
  }
  if (a.aspect == ResizeAspect::kStretch) return g;
  if (!all_known) {
    for (int64_t d : a.axes) g.output[d] = kDynamicDim;
    return g;
  }
  float scale = a.aspect == ResizeAspect::kNotLarger ? std::numeric_limits<float>::max() : 0.0f;
  for (int64_t d : a.axes) {
    if (input[d] == 0) {
      fail(node, "keep_aspect_ratio_policy cannot keep the aspect ratio of empty axis " +
                     std::to_string(d));
    }
    scale = a.aspect == ResizeAspect::kNotLarger ? std::min(scale, g.scales[d])
                                                 : std::max(scale, g.scales[d]);
  }
  for (int64_t d : a.axes) {
    const float size = std::round(scale * static_cast<float>(input[d]));
    if (size > static_cast<float>(kMaxElements)) {
      fail(node, "keep_aspect_ratio_policy makes axis " + std::to_string(d) + " too large");
    }
    g.scales[d] = scale;
    g.output[d] = static_cast<int64_t>(size);
  }
  return g;
}

float resize_source_coordinate(ResizeCoordinates mode, float x, float scale, int64_t out_len,
                               int64_t in_len, float roi_start, float roi_end) {
  const auto out = static_cast<float>(out_len);
  const auto in = static_cast<float>(in_len);
  switch (mode) {
    case ResizeCoordinates::kHalfPixel: return (x + 0.5f) / scale - 0.5f;
    case ResizeCoordinates::kHalfPixelSymmetric: {
      const float adjustment = out / (scale * in);
      const float offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5f) / scale - 0.5f;
    }
    case ResizeCoordinates::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case ResizeCoordinates::kAlignCorners: return out_len == 1 ? 0.0f : x * (in - 1) / (out - 1);
    case ResizeCoordinates::kAsymmetric: return x / scale;
    case ResizeCoordinates::kTfCropAndResize:
      return out_len > 1 ? roi_start * (in - 1) + (x * (roi_end - roi_start) * (in - 1)) / (out - 1)
                         : static_cast<float>(0.5 * (roi_start + roi_end) * (in - 1));
  }
  return 0.0f;
}

ResizeSample resize_sample(const ResizeAttributes& attributes, int64_t j, float scale, int64_t out,
                           int64_t in, float roi_start, float roi_end) {
  const auto last = static_cast<float>(in - 1);
  float x = resize_source_coordinate(attributes.coordinates, static_cast<float>(j), scale, out, in,
                                     roi_start, roi_end);
  if (attributes.coordinates == ResizeCoordinates::kTfCropAndResize && !(x >= 0.0f && x <= last)) {
    return {true, 0, 0.0f};
  }
  // Every mode maps into [-1, in]; bounding x keeps the integer conversion defined.
  if (!(x >= -4.0f)) x = -4.0f;
  if (!(x <= last + 4.0f)) x = last + 4.0f;
  const float floor_x = std::floor(x);
  return {false, static_cast<int64_t>(floor_x), x - floor_x};
}

bool resize_nearest_rounds_up(ResizeNearest nearest, float ratio) {
  if (!(ratio > 0.0f)) return false;
  switch (nearest) {
    case ResizeNearest::kRoundPreferFloor: return ratio > 0.5f;
    case ResizeNearest::kRoundPreferCeil: return ratio >= 0.5f;
    case ResizeNearest::kFloor: return false;
    case ResizeNearest::kCeil: return true;
  }
  return false;
}

uint64_t resize_fill_bits(DType dtype, float value) {
  uint64_t bits = 0;
  auto store = [&]<typename T>(T v) { std::memcpy(&bits, &v, sizeof(T)); };
  auto integer = [&]<typename T>() {
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    const double t = std::trunc(double{value});
    if (std::isnan(t)) {
      store(T{0});
    } else if (t >= hi) {
      store(std::numeric_limits<T>::max());
    } else if (t <= lo) {
      store(std::numeric_limits<T>::min());
    } else {
      store(static_cast<T>(t));
    }
  };
  switch (dtype) {
    case DType::kFloat32: store(value); break;
    case DType::kFloat64: store(double{value}); break;
    case DType::kFloat16: store(float_to_half(value)); break;
    case DType::kBFloat16: store(float_to_bfloat16(value)); break;
    case DType::kInt8: integer.operator()<int8_t>(); break;
    case DType::kUInt8: integer.operator()<uint8_t>(); break;
    case DType::kInt16: integer.operator()<int16_t>(); break;
    case DType::kInt32: integer.operator()<int32_t>(); break;
    case DType::kInt64: integer.operator()<int64_t>(); break;
    case DType::kBool: store(static_cast<uint8_t>(value != 0.0f)); break;
    default: break;
  }
  return bits;
}

namespace tensor_ops {
namespace {

// Fails unless input i is a 1-D tensor of one of `dtypes`.
void require_list(const InferContext& ctx, size_t i, const char* what,
                  std::initializer_list<DType> dtypes, const char* expected) {
  const ValueInfo& info = ctx.input(i);
  if (std::find(dtypes.begin(), dtypes.end(), info.dtype) == dtypes.end()) {
    ctx.fail(std::string(what) + " must be " + expected + ", got " +
             std::string(dtype_name(info.dtype)));
  }
  if (info.shape.size() != 1) ctx.fail(std::string(what) + " must be a 1-D tensor");
}

std::vector<InferredOutput> infer_resize(const InferContext& ctx) {
  const ValueInfo& x = ctx.input(0);
  if (x.shape.empty()) ctx.fail("X must have rank >= 1");
  const ResizeAttributes a = resize_attributes(ctx.node(), ctx.opset(), x.shape.size());
  const bool has_roi = ctx.has_input(1);
  if (has_roi) {
    require_list(ctx, 1, "roi", {DType::kFloat16, DType::kFloat32, DType::kFloat64},
                 "float16, float32 or float64");
  }
  if (a.coordinates == ResizeCoordinates::kTfCropAndResize &&
      (!has_roi || list_length(ctx.input(1)) == 0)) {
    ctx.fail("coordinate_transformation_mode 'tf_crop_and_resize' needs the roi input");
  }
  const bool has_scales = ctx.has_input(2);
  const bool has_sizes = ctx.has_input(3);
  if (has_scales) require_list(ctx, 2, "scales", {DType::kFloat32}, "float32");
  if (has_sizes) require_list(ctx, 3, "sizes", {DType::kInt64}, "int64");
  const int64_t scales_length = has_scales ? list_length(ctx.input(2)) : 0;
  const int64_t sizes_length = has_sizes ? list_length(ctx.input(3)) : 0;
  if (scales_length > 0 && sizes_length > 0) ctx.fail("only one of scales and sizes may be given");
  if (scales_length == 0 && sizes_length == 0) ctx.fail("one of scales and sizes must be given");
  const size_t count = a.axes.size();
  for (const auto& [length, name] : {std::pair{scales_length, "scales"}, {sizes_length, "sizes"}}) {
    if (length > 0 && static_cast<size_t>(length) != count) {
      ctx.fail(std::string(name) + " has " + std::to_string(length) + " values, expected " +
               std::to_string(count));
    }
  }
  InferredOutput out{x.dtype, x.shape, {}};
  // The list that decides the sizes, when its contents are known.
  const Tensor* scales = scales_length != 0 ? ctx.input_value(2) : nullptr;
  const Tensor* sizes = sizes_length != 0 ? ctx.input_value(3) : nullptr;
  if (!scales && !sizes) {
    for (int64_t d : a.axes) out.shape[d] = kDynamicDim;
    return {out};
  }
  // roi matters only to tf_crop_and_resize; other modes ignore it, as ONNX Runtime does.
  const Tensor* roi =
      a.coordinates == ResizeCoordinates::kTfCropAndResize ? ctx.input_value(1) : nullptr;
  const ResizeGeometry g = resize_geometry(ctx.node(), a, x.shape, roi, scales, sizes);
  out.shape = g.output;
  if (is_static(out.shape)) checked_numel(ctx, out.shape);
  return {out};
}

// Nearest moves bytes; linear and cubic take a multiply and an add per tap, with 2 (linear) or 4
// (cubic) taps on every resized axis.
OpCost resize_cost(const Node& node, std::span<const TensorType> inputs,
                   std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode != "linear" && mode != "cubic") {
    cost.flops = 0;
    return cost;
  }
  double taps = 1;
  if (!inputs.empty() && !outputs.empty() && inputs[0].shape.size() == outputs[0].shape.size()) {
    for (size_t d = 0; d < inputs[0].shape.size(); ++d) {
      const int64_t in = inputs[0].shape[d];
      const int64_t out = outputs[0].shape[d];
      if (in < 0 || out < 0 || in != out) taps *= mode == "linear" ? 2 : 4;
    }
  }
  double elements = 1;
  if (!outputs.empty()) {
    for (int64_t d : outputs[0].shape) elements *= d < 0 ? 1.0 : static_cast<double>(d);
  }
  cost.flops = elements * 2 * taps;
  return cost;
}

}  // namespace

void register_resize_ops(OpRegistry& registry) {
  registry.add(make_schema("Resize", 1, 4, infer_resize, resize_cost));
}

}  // namespace tensor_ops
}  // namespace tandem
