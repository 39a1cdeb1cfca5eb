// Lowering rules: MatMul, Gemm, Conv, BatchNormalization and pooling.
#include <algorithm>
#include <limits>
#include <utility>

#include "backends/pjrt/lower_rules.h"
#include "ir/ops/linalg_window.h"

namespace tandem::pjrt {
namespace {

// `padding = dense<[[lo, hi], ...]> : tensor<Nx2xi64>`, one pair per dimension.
std::string padding_attribute(std::span<const std::pair<int64_t, int64_t>> pads) {
  std::string text = "padding = dense<[";
  for (size_t i = 0; i < pads.size(); ++i) {
    text += (i ? ", [" : "[") + std::to_string(pads[i].first) + ", " +
            std::to_string(pads[i].second) + "]";
  }
  return text + "]> : tensor<" + std::to_string(pads.size()) + "x2xi64>";
}

// Half-precision sums and normalizations run in float32, as the CPU kernels compute in wider
// types.
DType compute_type(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? DType::kFloat32 : dtype;
}

// `value` broadcast along axis 1 (channels) of `shape`.
HloValue per_channel(HloBuilder& b, const HloValue& value, const Shape& shape) {
  const int64_t channel_axis[] = {1};
  return b.broadcast_in_dim(value, shape, channel_axis);
}

// The window of a Conv or pool over `x`'s spatial axes, as shape inference resolved it.
WindowGeometry window_of(const Node& node, const Shape& x, const std::vector<int64_t>& kernel,
                         bool ceil_mode) {
  return resolve_window(node, std::vector<int64_t>(x.begin() + 2, x.end()), kernel, ceil_mode);
}

// End padding that makes the windows of `g` produce exactly `output` positions on `axis`:
// ceil_mode may need more than the pads give. Never negative: where the last window stops short
// of the end (a stride past the window), the unread tail changes nothing.
int64_t end_padding(const WindowGeometry& g, size_t axis, int64_t input, int64_t output) {
  const int64_t needed =
      (output - 1) * g.strides[axis] + g.extent(axis) - input - g.pads_begin[axis];
  return std::max<int64_t>(needed, 0);
}

// ONNX MatMul (numpy matmul): batch dims broadcast, 1-D operands promoted and squeezed back.
void lower_matmul(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  HloValue a = context.input(node, 0);
  HloValue w = context.input(node, 1);
  const TensorType& out = context.output_type(node, 0);
  if (a.shape.size() == 1) a = b.reshape(a, {1, a.shape[0]});
  if (w.shape.size() == 1) w = b.reshape(w, {w.shape[0], 1});
  const size_t rank = std::max(a.shape.size(), w.shape.size());
  Shape batch;
  for (size_t i = 0; i + 2 < rank; ++i) {
    const auto dim = [&](const Shape& s) {
      const size_t offset = rank - s.size();
      return i < offset ? int64_t{1} : s[i - offset];
    };
    batch.push_back(std::max(dim(a.shape), dim(w.shape)));
  }
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = w.shape.back();
  // One weight matrix for every batch (a linear layer over [batch, tokens, k]): one 2-D product
  // over all rows. Broadcasting the weights along the batch would materialise a copy per row
  // (ViT: 1.4 GB for one 768x2304 projection), and XLA runs batched products row by row.
  if (std::all_of(w.shape.begin(), w.shape.end() - 2, [](int64_t d) { return d == 1; })) {
    int64_t rows = 1;  // every dim of A but the last (k may be 0)
    for (size_t i = 0; i + 1 < a.shape.size(); ++i) rows *= a.shape[i];
    const HloValue product =
        b.op("dot_general", {b.reshape(a, {rows, k}), b.reshape(w, {k, n})}, out.dtype, {rows, n},
             "dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
             "rhs_contracting_dimensions = [0]>");
    context.set_output(node, 0, apply_fused_activation(b, node, b.reshape(product, out.shape)));
    return;
  }
  Shape a_shape = batch, w_shape = batch, result_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  w_shape.insert(w_shape.end(), {k, n});
  result_shape.insert(result_shape.end(), {m, n});
  a = b.broadcast_to(a, a_shape);
  w = b.broadcast_to(w, w_shape);
  std::string dims;
  for (size_t i = 0; i < batch.size(); ++i) dims += (i ? ", " : "") + std::to_string(i);
  const int64_t r = static_cast<int64_t>(batch.size());
  const HloValue product = b.op(
      "dot_general", {a, w}, out.dtype, result_shape,
      "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [" + dims +
          "], rhs_batching_dimensions = [" + dims + "], lhs_contracting_dimensions = [" +
          std::to_string(r + 1) + "], rhs_contracting_dimensions = [" + std::to_string(r) + "]>");
  context.set_output(node, 0, apply_fused_activation(b, node, b.reshape(product, out.shape)));
}

// `value` times `factor`; integers are scaled in float64 and truncated, as the CPU kernel does.
HloValue scaled(HloBuilder& b, const HloValue& value, double factor) {
  if (factor == 1) return value;
  if (is_floating(value.dtype)) {
    return b.binary("multiply", value, b.splat(value.dtype, value.shape, factor));
  }
  const HloValue wide = b.convert(value, DType::kFloat64);
  return b.convert(b.binary("multiply", wide, b.splat(DType::kFloat64, wide.shape, factor)),
                   value.dtype);
}

// Y = alpha * A' B' + beta * C, A' and B' transposed as transA and transB say.
void lower_gemm(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue a = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const int64_t a_contracting = node.attr_int("transA", 0) ? 0 : 1;
  // Constant weights stored [n, k] (transB, as torch exports nn.Linear) are transposed on the
  // host, once: the plugin packs a product's weights on every run, and packing them across
  // their rows made a 2-row product by 256x512 weights 5-6x slower than by the same weights
  // stored [k, n].
  const bool weights_transposed = node.attr_int("transB", 0) != 0;
  const bool transpose_on_host = weights_transposed && context.constant(node, 1) != nullptr;
  constexpr int64_t kSwapAxes[] = {1, 0};
  const HloValue w =
      transpose_on_host ? context.input_permuted(node, 1, kSwapAxes) : context.input(node, 1);
  const int64_t w_contracting = weights_transposed && !transpose_on_host ? 1 : 0;
  HloValue y = b.op("dot_general", {a, w}, out.dtype, out.shape,
                    "dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [" +
                        std::to_string(a_contracting) + "], rhs_contracting_dimensions = [" +
                        std::to_string(w_contracting) + "]>");
  y = scaled(b, y, node.attr_float("alpha", 1));
  const double beta = node.attr_float("beta", 1);
  if (context.has_input(node, 2) && beta != 0) {
    const HloValue c = b.broadcast_to(context.input(node, 2), out.shape);
    y = b.binary("add", y, scaled(b, c, beta));
  }
  context.set_output(node, 0, apply_fused_activation(b, node, y));
}

// Conv (1 to 3 spatial axes, groups, any padding) + bias + Tandem's fused residual (input 3,
// added before the activation) + fused activation.
// Whether the window is larger than the output in some spatial dim (a 3x3 kernel making a 2x2
// map): XLA's CPU backend swaps such a convolution's operands into a layout it runs with a
// naive loop nest, two orders of magnitude slower than its matrix kernels.
bool window_exceeds_output(const WindowGeometry& g, const Shape& y_channels_last) {
  for (size_t i = 0; i < g.kernel.size(); ++i) {
    if (g.kernel[i] > y_channels_last[i + 1]) return true;
  }
  return false;
}

// The padded channels-last input as seen by each kernel offset: one strided slice per offset,
// [N, output spatial..., C], in the row-major order of the kernel's spatial dims.
std::vector<HloValue> shifted_windows(HloBuilder& b, const HloValue& x_last,
                                      const WindowGeometry& g,
                                      std::span<const std::pair<int64_t, int64_t>> pads,
                                      const Shape& y_shape) {
  const size_t spatial = g.kernel.size();
  const int64_t channels = x_last.shape.back();
  std::vector<int64_t> low{0}, high{0};
  Shape padded{x_last.shape[0]};
  for (size_t i = 0; i < spatial; ++i) {
    low.push_back(pads[i].first);
    high.push_back(pads[i].second);
    padded.push_back(x_last.shape[i + 1] + pads[i].first + pads[i].second);
  }
  low.push_back(0);
  high.push_back(0);
  padded.push_back(channels);
  const std::vector<int64_t> interior(spatial + 2, 0);
  const HloValue input =
      b.op("pad", {x_last, b.scalar(x_last.dtype, 0)}, x_last.dtype, padded,
           "edge_padding_low = " + i64_array(low) + ", edge_padding_high = " + i64_array(high) +
               ", interior_padding = " + i64_array(interior));
  std::vector<HloValue> slices;
  std::vector<int64_t> offset(spatial, 0);
  Shape slice_shape = y_shape;
  slice_shape.back() = channels;
  for (bool more = true; more;) {
    std::vector<int64_t> start{0}, limit{y_shape[0]}, strides{1};
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t first = offset[i] * g.dilations[i];
      start.push_back(first);
      limit.push_back(first + (y_shape[i + 1] - 1) * g.strides[i] + 1);
      strides.push_back(g.strides[i]);
    }
    start.push_back(0);
    limit.push_back(channels);
    strides.push_back(1);
    slices.push_back(b.op("slice", {input}, input.dtype, slice_shape,
                          "start_indices = " + i64_array(start) + ", limit_indices = " +
                              i64_array(limit) + ", strides = " + i64_array(strides)));
    more = false;
    for (size_t i = spatial; i-- > 0;) {
      if (++offset[i] < g.kernel[i]) {
        more = true;
        break;
      }
      offset[i] = 0;
    }
  }
  return slices;
}

// A convolution as one matrix product (im2col): the windows concatenated along channels, times
// the weights flattened to [spatial... * I, O]. For windows larger than the output, where the
// patches are few.
HloValue patches_times_weights(HloBuilder& b, const HloValue& x_last, const HloValue& w_hwio,
                               const WindowGeometry& g,
                               std::span<const std::pair<int64_t, int64_t>> pads,
                               const Shape& y_shape) {
  const std::vector<HloValue> slices = shifted_windows(b, x_last, g, pads, y_shape);
  Shape patches_shape = slices.front().shape;
  patches_shape.back() *= static_cast<int64_t>(slices.size());
  const HloValue patches = b.op("concatenate", slices, x_last.dtype, patches_shape,
                                "dimension = " + std::to_string(g.kernel.size() + 1) + " : i64");
  int64_t positions = 1;
  for (size_t i = 0; i + 1 < y_shape.size(); ++i) positions *= y_shape[i];
  const int64_t outputs = y_shape.back();
  const HloValue rows = b.reshape(patches, {positions, patches_shape.back()});
  const HloValue weights = b.reshape(w_hwio, {patches_shape.back(), outputs});
  const HloValue product =
      b.op("dot_general", {rows, weights}, x_last.dtype, {positions, outputs},
           "dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
           "rhs_contracting_dimensions = [0]>");
  return b.reshape(product, y_shape);
}

// A depthwise convolution (one filter per channel) as a sum over kernel offsets of each shifted
// window times that offset's per-channel weights: elementwise work XLA fuses into one
// vectorised loop, where as a grouped convolution it expands the filter to dense C x C.
HloValue depthwise_as_sum(HloBuilder& b, const HloValue& x_last, const HloValue& w_hwio,
                          const WindowGeometry& g,
                          std::span<const std::pair<int64_t, int64_t>> pads, const Shape& y_shape) {
  const std::vector<HloValue> slices = shifted_windows(b, x_last, g, pads, y_shape);
  const int64_t channels = y_shape.back();
  const int64_t offsets = static_cast<int64_t>(slices.size());
  const HloValue weights = b.reshape(w_hwio, {offsets, channels});  // [K..., 1, C]
  const int64_t last = static_cast<int64_t>(y_shape.size()) - 1;
  HloValue sum;
  for (int64_t k = 0; k < offsets; ++k) {
    const HloValue row =
        b.reshape(b.op("slice", {weights}, weights.dtype, {1, channels},
                       "start_indices = " + i64_array(std::vector<int64_t>{k, 0}) +
                           ", limit_indices = " + i64_array(std::vector<int64_t>{k + 1, channels}) +
                           ", strides = " + i64_array(std::vector<int64_t>{1, 1})),
                  {channels});
    const HloValue term = b.binary("multiply", slices[static_cast<size_t>(k)],
                                   b.broadcast_in_dim(row, y_shape, std::vector<int64_t>{last}));
    sum = k == 0 ? term : b.binary("add", sum, term);
  }
  return sum;
}

// Computed channels-last, [N, spatial..., C] by [spatial..., I, O]: XLA's CPU backend runs
// convolutions of that layout with Eigen's kernels and others with a naive loop nest, an order
// of magnitude slower. It reads and makes channels-last forms (LowerContext), so a chain of
// convolutions, pooling and elementwise ops transposes only where another op reads it.
void lower_conv(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const Shape& x_shape = context.input_type(node, 0).shape;
  const TensorType& out = context.output_type(node, 0);
  const Shape& w_shape = context.input_type(node, 1).shape;
  const WindowGeometry g =
      window_of(node, x_shape, std::vector<int64_t>(w_shape.begin() + 2, w_shape.end()), false);
  const int64_t spatial_rank = static_cast<int64_t>(g.kernel.size());
  std::string spatial;
  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<int64_t> kernel_to_hwio;
  for (int64_t i = 0; i < spatial_rank; ++i) {
    spatial += std::to_string(i) + ", ";
    pads.emplace_back(g.pads_begin[static_cast<size_t>(i)], g.pads_end[static_cast<size_t>(i)]);
    kernel_to_hwio.push_back(i + 2);
  }
  kernel_to_hwio.insert(kernel_to_hwio.end(), {1, 0});
  const HloValue x_last = context.input_channels_last(node, 0);
  const HloValue w_hwio = context.input_permuted(node, 1, kernel_to_hwio);
  Shape y_shape{out.shape[0]};
  for (int64_t i = 0; i < spatial_rank; ++i) {
    y_shape.push_back(out.shape[static_cast<size_t>(i + 2)]);
  }
  y_shape.push_back(out.shape[1]);
  const std::vector<int64_t> ones(g.kernel.size(), 1);
  const int64_t group = node.attr_int("group", 1);
  const bool depthwise =
      group > 1 && group == x_shape[1] && group == out.shape[1] && is_floating(out.dtype);
  const HloValue y_last =
      group == 1 && window_exceeds_output(g, y_shape)
          ? patches_times_weights(b, x_last, w_hwio, g, pads, y_shape)
      : depthwise
          ? depthwise_as_sum(b, x_last, w_hwio, g, pads, y_shape)
          : b.op("convolution", {x_last, w_hwio}, out.dtype, y_shape,
                 "dimension_numbers = #stablehlo.conv<[b, " + spatial + "f]x[" + spatial +
                     "i, o]->[b, " + spatial + "f]>, window_strides = " + i64_array(g.strides) +
                     ", " + padding_attribute(pads) + ", lhs_dilation = " + i64_array(ones) +
                     ", rhs_dilation = " + i64_array(g.dilations) +
                     ", feature_group_count = " + std::to_string(node.attr_int("group", 1)) +
                     " : i64, batch_group_count = 1 : i64");
  HloValue y = y_last;
  if (context.has_input(node, 2)) {
    const int64_t channels[] = {spatial_rank + 1};
    y = b.binary("add", y, b.broadcast_in_dim(context.input(node, 2), y_shape, channels));
  }
  if (context.has_input(node, 3)) y = b.binary("add", y, context.input_channels_last(node, 3));
  context.set_output_channels_last(node, 0, apply_fused_activation(b, node, y));
}

// ConvTranspose as the convolution whose gradient it is: the input dilated by the strides
// (lhs_dilation) and padded by extent - 1 - pads_begin before and what makes the output size after
// (output_padding, output_shape and auto_pad are in the geometry's output), convolved with stride
// 1 by the kernel reversed spatially, its input and output channels exchanged within each group.
// Channels-last, as Conv. Padding that would be negative (pads beyond the kernel's extent) is
// cropped from the result instead.
void lower_conv_transpose(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const Shape& w_shape = context.input_type(node, 1).shape;
  const std::vector<int64_t> kernel(w_shape.begin() + 2, w_shape.end());
  const WindowGeometry g = resolve_transposed_window(
      node, std::vector<int64_t>(x.shape.begin() + 2, x.shape.end()), kernel);
  const int64_t spatial_rank = static_cast<int64_t>(kernel.size());
  const int64_t group = node.attr_int("group", 1);
  const int64_t in_per_group = w_shape[0] / group, out_per_group = w_shape[1];

  std::string spatial;
  std::vector<int64_t> to_channels_last{0}, to_channels_first{0, spatial_rank + 1};
  std::vector<int64_t> kernel_to_hwio, spatial_axes;  // W [Ci, Co/G, k...] -> [k..., Ci, Co/G]
  for (int64_t i = 0; i < spatial_rank; ++i) {
    spatial += std::to_string(i) + ", ";
    to_channels_last.push_back(i + 2);
    to_channels_first.push_back(i + 1);
    kernel_to_hwio.push_back(i + 2);
    spatial_axes.push_back(i);
  }
  to_channels_last.push_back(1);
  kernel_to_hwio.insert(kernel_to_hwio.end(), {0, 1});
  HloValue w = context.input_permuted(node, 1, kernel_to_hwio);
  if (group > 1) {
    // [k..., G, Ci/G, Co/G] -> [k..., Ci/G, G, Co/G]: group g's outputs are its Co/G features.
    Shape grouped(kernel.begin(), kernel.end());
    grouped.insert(grouped.end(), {group, in_per_group, out_per_group});
    std::vector<int64_t> swap = spatial_axes;
    swap.insert(swap.end(), {spatial_rank + 1, spatial_rank, spatial_rank + 2});
    Shape hwio(kernel.begin(), kernel.end());
    hwio.insert(hwio.end(), {in_per_group, group * out_per_group});
    w = b.reshape(b.transpose(b.reshape(w, grouped), swap), hwio);
  }
  w = b.op("reverse", {w}, w.dtype, w.shape, "dimensions = " + i64_array(spatial_axes));

  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<int64_t> crop_begin{0}, crop_end{out.shape[0]}, crop_strides(x.shape.size(), 1);
  Shape conv_shape{out.shape[0]};
  bool cropped = false;
  for (size_t i = 0; i < kernel.size(); ++i) {
    const int64_t dilated = (x.shape[i + 2] - 1) * g.strides[i] + 1;
    const int64_t low = g.extent(i) - 1 - g.pads_begin[i];
    const int64_t high = g.output[i] + g.extent(i) - 1 - dilated - low;
    pads.emplace_back(std::max<int64_t>(low, 0), std::max<int64_t>(high, 0));
    const int64_t size = dilated + pads.back().first + pads.back().second - g.extent(i) + 1;
    conv_shape.push_back(size);
    crop_begin.push_back(std::max<int64_t>(-low, 0));
    crop_end.push_back(crop_begin.back() + g.output[i]);
    cropped |= size != g.output[i];
  }
  conv_shape.push_back(out.shape[1]);
  crop_begin.push_back(0);
  crop_end.push_back(out.shape[1]);
  const std::vector<int64_t> ones(kernel.size(), 1);
  HloValue y_last =
      b.op("convolution", {b.transpose(x, to_channels_last), w}, out.dtype, conv_shape,
           "dimension_numbers = #stablehlo.conv<[b, " + spatial + "f]x[" + spatial + "i, o]->[b, " +
               spatial + "f]>, window_strides = " + i64_array(ones) + ", " +
               padding_attribute(pads) + ", lhs_dilation = " + i64_array(g.strides) +
               ", rhs_dilation = " + i64_array(g.dilations) + ", feature_group_count = " +
               std::to_string(group) + " : i64, batch_group_count = 1 : i64");
  if (cropped) {
    Shape shape;
    for (size_t d = 0; d < crop_begin.size(); ++d) shape.push_back(crop_end[d] - crop_begin[d]);
    y_last = b.op("slice", {y_last}, y_last.dtype, shape,
                  "start_indices = " + i64_array(crop_begin) + ", limit_indices = " +
                      i64_array(crop_end) + ", strides = " + i64_array(crop_strides));
  }
  HloValue y = b.transpose(y_last, to_channels_first);
  if (context.has_input(node, 2)) {
    y = b.binary("add", y, per_channel(b, context.input(node, 2), out.shape));
  }
  context.set_output(node, 0, apply_fused_activation(b, node, y));
}

// Inference: y = x * a + (bias - mean * a), a = scale / sqrt(var + epsilon), per channel.
void lower_batch_norm(LowerContext& context, const Node& node) {
  if (node.attr_int("training_mode", 0) != 0) {
    throw LoweringRefused("BatchNormalization in training mode");
  }
  HloBuilder& b = context.builder();
  const TensorType& out = context.output_type(node, 0);
  const DType type = compute_type(out.dtype);
  const auto channel_input = [&](size_t i) { return b.convert(context.input(node, i), type); };
  const HloValue scale = channel_input(1), bias = channel_input(2), mean = channel_input(3),
                 variance = channel_input(4);
  const HloValue epsilon = b.splat(type, variance.shape, node.attr_float("epsilon", 1e-5f));
  const HloValue factor =
      b.binary("multiply", scale, b.unary("rsqrt", b.binary("add", variance, epsilon)));
  const HloValue shift = b.binary("subtract", bias, b.binary("multiply", mean, factor));
  const HloValue x = b.convert(context.input(node, 0), type);
  const HloValue y = b.binary("add", b.binary("multiply", x, per_channel(b, factor, x.shape)),
                              per_channel(b, shift, x.shape));
  context.set_output(node, 0, b.convert(y, out.dtype));
  // Without training the running statistics pass through unchanged.
  context.set_output(node, 1, context.input(node, 3));
  context.set_output(node, 2, context.input(node, 4));
}

struct PoolWindow {
  WindowGeometry geometry;
  std::string attributes;  // reduce_window's window and padding attributes
};

// The reduce_window attributes of a MaxPool or AveragePool: batch and channel axes untouched,
// end padding stretched where ceil_mode adds a last window.
// With `channels_last`, for [N, spatial..., C] operands (x and y still channels-first shapes).
PoolWindow pool_window(const Node& node, const Shape& x, const Shape& y, bool channels_last) {
  PoolWindow window;
  window.geometry =
      window_of(node, x, node.attr_ints("kernel_shape"), node.attr_int("ceil_mode", 0) != 0);
  const WindowGeometry& g = window.geometry;
  std::vector<int64_t> dims{1, 1}, strides{1, 1}, dilations{1, 1};
  std::vector<std::pair<int64_t, int64_t>> pads{{0, 0}, {0, 0}};
  for (size_t i = 0; i < g.kernel.size(); ++i) {
    dims.push_back(g.kernel[i]);
    strides.push_back(g.strides[i]);
    dilations.push_back(g.dilations[i]);
    pads.emplace_back(g.pads_begin[i], end_padding(g, i, x[i + 2], y[i + 2]));
  }
  if (channels_last) {  // the channel axis (second, all ones) moves last
    for (auto* axes : {&dims, &strides, &dilations}) {
      axes->push_back((*axes)[1]);
      axes->erase(axes->begin() + 1);
    }
    pads.push_back(pads[1]);
    pads.erase(pads.begin() + 1);
  }
  const std::vector<int64_t> base_dilations(x.size(), 1);
  window.attributes =
      "window_dimensions = " + i64_array(dims) + ", window_strides = " + i64_array(strides) +
      ", base_dilations = " + i64_array(base_dilations) +
      ", window_dilations = " + i64_array(dilations) + ", " + padding_attribute(pads);
  return window;
}

HloValue reduce_window(HloBuilder& b, const HloValue& x, const Shape& shape,
                       const PoolWindow& window, std::string_view body_op, double init) {
  const HloValue operands[] = {x, b.scalar(x.dtype, init)};
  return b.op("reduce_window", operands, x.dtype, shape, window.attributes,
              b.binary_region(body_op, x.dtype));
}

// The smallest finite value of `dtype` (float's lowest, not -inf): where the CPU's MaxPool loop
// starts its search.
HloValue lowest_splat(HloBuilder& b, DType dtype, const Shape& shape) {
  double value = 0;
  switch (dtype) {
    case DType::kFloat32: value = std::numeric_limits<float>::lowest(); break;
    case DType::kFloat64: value = std::numeric_limits<double>::lowest(); break;
    case DType::kFloat16: value = -65504.0; break;
    case DType::kBFloat16: value = -3.3895313892515355e38; break;  // -(2 - 2^-7) * 2^127
    case DType::kInt8: value = std::numeric_limits<int8_t>::lowest(); break;
    case DType::kInt16: value = std::numeric_limits<int16_t>::lowest(); break;
    case DType::kInt32: value = std::numeric_limits<int32_t>::lowest(); break;
    case DType::kInt64: value = static_cast<double>(std::numeric_limits<int64_t>::lowest()); break;
    case DType::kUInt8: value = 0; break;
    default: throw LoweringRefused("MaxPool's Indices output of " + std::string(dtype_name(dtype)));
  }
  return b.splat(dtype, shape, value);
}

// An int64 `index` times a compile-time `factor`.
HloValue times(HloBuilder& b, const HloValue& index, int64_t factor) {
  if (factor == 1) return index;
  return b.binary("multiply", index,
                  b.splat(DType::kInt64, index.shape, static_cast<double>(factor)));
}

// MaxPool with its Indices output, as the CPU backend's loop computes both: each window's first
// element (in row-major order) greater than every earlier one, starting from the dtype's lowest
// finite value, so NaN and values at or below that lowest are never taken; a window taking none
// gives that lowest value and the index of its plane's first element. The search is a variadic
// reduce_window over (value, flat index into the whole input), padded with (lowest, int64 max),
// the larger value winning and a tie going to the lower index: a total order on pairs (no NaN is
// left among the values), so XLA may combine them in any order.
// With storage_order 1 the index is then rewritten column-major within its plane.
void lower_max_pool_with_indices(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const HloValue lowest = lowest_splat(b, x.dtype, x.shape);
  const HloValue never =
      b.splat(DType::kInt64, x.shape, static_cast<double>(std::numeric_limits<int64_t>::max()));
  const HloValue flat = b.reshape(
      b.op("iota", {}, DType::kInt64, {numel(x.shape)}, "iota_dimension = 0 : i64"), x.shape);
  const HloValue takeable = b.compare("GT", x, lowest);
  const HloValue operands[] = {
      b.select(takeable, x, lowest), b.select(takeable, flat, never), lowest_splat(b, x.dtype, {}),
      b.scalar(DType::kInt64, static_cast<double>(std::numeric_limits<int64_t>::max()))};
  const TensorType results[] = {{x.dtype, out.shape}, {DType::kInt64, out.shape}};
  const std::vector<HloValue> best =
      b.op_results("reduce_window", operands, results,
                   pool_window(node, x.shape, out.shape, /*channels_last=*/false).attributes,
                   arg_reduce_region(x.dtype, /*maximum=*/true, /*last=*/false));
  context.set_output(node, 0, best[0]);

  // The first element of each output's plane, for the windows that took nothing.
  int64_t plane = 1;
  for (size_t i = 2; i < x.shape.size(); ++i) plane *= x.shape[i];
  const auto iota = [&](int64_t axis) {
    return b.op("iota", {}, DType::kInt64, out.shape,
                "iota_dimension = " + std::to_string(axis) + " : i64");
  };
  const HloValue plane_start =
      b.binary("add", times(b, iota(0), x.shape[1] * plane), times(b, iota(1), plane));
  const HloValue none_taken = b.compare(
      "EQ", best[1],
      b.splat(DType::kInt64, out.shape, static_cast<double>(std::numeric_limits<int64_t>::max())));
  HloValue index = b.select(none_taken, plane_start, best[1]);
  if (node.attr_int("storage_order", 0) == 1 && x.shape.size() > 3) {
    // Row-major offset within the plane -> coordinates -> column-major offset.
    HloValue rest = b.binary("subtract", index, plane_start);
    HloValue column = plane_start;
    std::vector<HloValue> coordinates(x.shape.size());
    for (size_t axis = x.shape.size(); axis-- > 2;) {
      const HloValue size = b.splat(DType::kInt64, out.shape, static_cast<double>(x.shape[axis]));
      coordinates[axis] = b.binary("remainder", rest, size);
      rest = b.binary("divide", rest, size);
    }
    int64_t stride = 1;
    for (size_t axis = 2; axis < x.shape.size(); ++axis) {
      column = b.binary("add", column, times(b, coordinates[axis], stride));
      stride *= x.shape[axis];
    }
    index = column;
  }
  context.set_output(node, 1, index);
}

void lower_max_pool(LowerContext& context, const Node& node) {
  if (context.has_output(node, 1)) {
    lower_max_pool_with_indices(context, node);
    return;
  }
  HloBuilder& b = context.builder();
  const TensorType& in = context.input_type(node, 0);
  const TensorType& out = context.output_type(node, 0);
  // Padding holds the reduction's start value, which no element may lose to.
  const double lowest = in.dtype == DType::kInt8    ? std::numeric_limits<int8_t>::lowest()
                        : in.dtype == DType::kUInt8 ? 0
                                                    : -std::numeric_limits<double>::infinity();
  const bool last = context.has_channels_last(node, 0);
  const PoolWindow window = pool_window(node, in.shape, out.shape, last);
  if (!last) {
    context.set_output(
        node, 0, reduce_window(b, context.input(node, 0), out.shape, window, "maximum", lowest));
    return;
  }
  const HloValue x = context.input_channels_last(node, 0);
  context.set_output_channels_last(
      node, 0, reduce_window(b, x, channels_last_shape(out.shape), window, "maximum", lowest));
}

// How many of the window's taps at each output position of `axis` count for the average: those
// on the input, or with count_include_pad those on the explicitly padded input.
std::vector<float> window_counts(const WindowGeometry& g, size_t axis, int64_t input,
                                 int64_t output, bool include_pad) {
  const int64_t first = include_pad ? -g.pads_begin[axis] : 0;
  const int64_t end = include_pad ? input + g.pads_end[axis] : input;
  std::vector<float> counts;
  for (int64_t o = 0; o < output; ++o) {
    int64_t count = 0;
    for (int64_t k = 0; k < g.kernel[axis]; ++k) {
      const int64_t position = o * g.strides[axis] - g.pads_begin[axis] + k * g.dilations[axis];
      count += position >= first && position < end;
    }
    // A window with no counted tap sums nothing: 0, as the CPU kernel gives.
    counts.push_back(static_cast<float>(std::max<int64_t>(count, 1)));
  }
  return counts;
}

void lower_average_pool(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const TensorType& out = context.output_type(node, 0);
  const Shape& x_shape = context.input_type(node, 0).shape;
  const DType type = compute_type(out.dtype);
  const bool last = context.has_channels_last(node, 0);
  const HloValue x =
      b.convert(last ? context.input_channels_last(node, 0) : context.input(node, 0), type);
  const Shape y_shape = last ? channels_last_shape(out.shape) : out.shape;
  const PoolWindow window = pool_window(node, x_shape, out.shape, last);
  HloValue y = reduce_window(b, x, y_shape, window, "add", 0);
  // The divisor is a product of per-axis counts, known at compile time.
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  for (size_t i = 0; i < window.geometry.kernel.size(); ++i) {
    const int64_t size = out.shape[i + 2];
    const Tensor counts =
        Tensor::from_vector(DType::kFloat32, {size},
                            window_counts(window.geometry, i, x_shape[i + 2], size, include_pad));
    const int64_t axis[] = {static_cast<int64_t>(last ? i + 1 : i + 2)};
    const HloValue divisor = b.broadcast_in_dim(b.convert(b.constant(counts), type), y_shape, axis);
    y = b.binary("divide", y, divisor);
  }
  if (last) {
    context.set_output_channels_last(node, 0, b.convert(y, out.dtype));
  } else {
    context.set_output(node, 0, b.convert(y, out.dtype));
  }
}

// GlobalAveragePool and GlobalMaxPool: every spatial axis reduced to size 1.
template <bool kAverage>
void lower_global_pool(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const TensorType& out = context.output_type(node, 0);
  const bool last = context.has_channels_last(node, 0);
  const HloValue x = b.convert(last ? context.input_channels_last(node, 0) : context.input(node, 0),
                               compute_type(out.dtype));
  std::vector<int64_t> spatial_axes;
  int64_t count = 1;
  for (size_t i = last ? 1 : 2; i < x.shape.size() - (last ? 1 : 0); ++i) {
    spatial_axes.push_back(static_cast<int64_t>(i));
    count *= x.shape[i];
  }
  HloValue y = kAverage
                   ? b.reduce(x, spatial_axes, "add", 0)
                   : b.reduce(x, spatial_axes, "maximum", -std::numeric_limits<double>::infinity());
  if (kAverage) y = b.binary("divide", y, b.splat(y.dtype, y.shape, static_cast<double>(count)));
  if (last) {
    context.set_output_channels_last(
        node, 0, b.convert(b.reshape(y, channels_last_shape(out.shape)), out.dtype));
  } else {
    context.set_output(node, 0, b.convert(b.reshape(y, out.shape), out.dtype));
  }
}

}  // namespace

void add_linalg_rules(RuleTable& rules) {
  rules["MatMul"] = lower_matmul;
  rules["Gemm"] = lower_gemm;
  rules["Conv"] = lower_conv;
  rules["ConvTranspose"] = lower_conv_transpose;
  rules["BatchNormalization"] = lower_batch_norm;
  rules["MaxPool"] = lower_max_pool;
  rules["AveragePool"] = lower_average_pool;
  rules["GlobalAveragePool"] = lower_global_pool<true>;
  rules["GlobalMaxPool"] = lower_global_pool<false>;
}

}  // namespace tandem::pjrt
