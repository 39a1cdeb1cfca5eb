#include "ir/ops/linalg_window.h"

#include <algorithm>
#include <string>

#include "ir/error.h"
#include "ir/shape.h"

namespace tandem {
namespace {

// Bounds every stride, dilation, pad and kernel size so that window arithmetic cannot overflow.
constexpr int64_t kMaxWindowValue = int64_t{1} << 31;

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw InputError(node.label() + ": " + message);
}

std::vector<int64_t> per_axis_attr(const Node& node, std::string_view name, size_t count,
                                   int64_t fallback, int64_t min_value) {
  std::vector<int64_t> values = node.attr_ints(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count) {
    fail(node, "attribute '" + std::string(name) + "' has " + std::to_string(values.size()) +
                   " values, expected " + std::to_string(count));
  }
  for (int64_t v : values) {
    if (v < min_value || v > kMaxWindowValue) {
      fail(node,
           "attribute '" + std::string(name) + "' value " + std::to_string(v) + " is out of range");
    }
  }
  return values;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Attributes shared by both window kinds; pads are zeroed when auto_pad is set.
WindowGeometry common_geometry(const Node& node, size_t rank, const std::vector<int64_t>& kernel,
                               const std::string& auto_pad) {
  WindowGeometry g;
  g.kernel = kernel;
  for (int64_t k : kernel) {
    if (k != kDynamicDim && (k < 1 || k > kMaxWindowValue)) {
      fail(node, "kernel size " + std::to_string(k) + " is out of range");
    }
  }
  g.strides = per_axis_attr(node, "strides", rank, 1, 1);
  g.dilations = per_axis_attr(node, "dilations", rank, 1, 1);
  const std::vector<int64_t> pads = per_axis_attr(node, "pads", 2 * rank, 0, 0);
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    fail(node, "unknown auto_pad '" + auto_pad + "'");
  }
  const bool explicit_pads = auto_pad == "NOTSET";
  for (size_t i = 0; i < rank; ++i) {
    g.pads_begin.push_back(explicit_pads ? pads[i] : 0);
    g.pads_end.push_back(explicit_pads ? pads[rank + i] : 0);
  }
  g.output.assign(rank, kDynamicDim);
  return g;
}

}  // namespace

WindowGeometry resolve_window(const Node& node, const std::vector<int64_t>& input,
                              const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t rank = input.size();
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  WindowGeometry g = common_geometry(node, rank, kernel, auto_pad);
  for (size_t i = 0; i < rank; ++i) {
    if (input[i] < 0 || kernel[i] < 0) continue;
    const int64_t extent = g.extent(i);
    const int64_t stride = g.strides[i];
    if (same) {
      const int64_t out = ceil_div(input[i], stride);
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - input[i]);
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pads_end[i] = total - g.pads_begin[i];
      g.output[i] = out;
      continue;
    }
    const int64_t span = input[i] + g.pads_begin[i] + g.pads_end[i] - extent;
    if (span < 0) {
      fail(node, "window extent " + std::to_string(extent) + " exceeds the padded input size " +
                     std::to_string(input[i] + g.pads_begin[i] + g.pads_end[i]) +
                     " on spatial axis " + std::to_string(i));
    }
    int64_t out = ceil_mode ? ceil_div(span, stride) + 1 : span / stride + 1;
    // A window starting inside the end padding would see no input at all.
    if (ceil_mode && (out - 1) * stride >= input[i] + g.pads_begin[i]) --out;
    g.output[i] = out;
  }
  return g;
}

WindowGeometry resolve_transposed_window(const Node& node, const std::vector<int64_t>& input,
                                         const std::vector<int64_t>& kernel) {
  const size_t rank = input.size();
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  WindowGeometry g = common_geometry(node, rank, kernel, auto_pad);
  const std::vector<int64_t> output_padding = per_axis_attr(node, "output_padding", rank, 0, 0);
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  // Exporters write either the spatial sizes or the whole output shape.
  if (output_shape.size() == rank + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != rank) {
    fail(node, "attribute 'output_shape' has " + std::to_string(output_shape.size()) +
                   " values, expected " + std::to_string(rank));
  }
  for (int64_t v : output_shape) {
    if (v < 1 || v > kMaxElements)
      fail(node, "output_shape value " + std::to_string(v) + " is out of range");
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < rank; ++i) {
    if (input[i] < 0 || kernel[i] < 0) {
      if (!output_shape.empty()) g.output[i] = output_shape[i];
      continue;
    }
    if (input[i] > 0 && input[i] - 1 > kMaxElements / g.strides[i]) {
      fail(node, "transposed output size on spatial axis " + std::to_string(i) + " is too large");
    }
    const int64_t full = (input[i] - 1) * g.strides[i] + g.extent(i) + output_padding[i];
    if (!output_shape.empty() || same) {
      const int64_t out = output_shape.empty() ? input[i] * g.strides[i] : output_shape[i];
      const int64_t total = full - out;
      if (total < 0) {
        fail(node, "output size " + std::to_string(out) + " exceeds the transposed size " +
                       std::to_string(full) + " on spatial axis " + std::to_string(i));
      }
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pads_end[i] = total - g.pads_begin[i];
      g.output[i] = out;
      continue;
    }
    const int64_t out = full - g.pads_begin[i] - g.pads_end[i];
    if (out < 1) {
      fail(node, "pads crop the whole output on spatial axis " + std::to_string(i));
    }
    g.output[i] = out;
  }
  return g;
}

}  // namespace tandem
