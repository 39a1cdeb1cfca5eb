// Gradients of MatMul, Gemm, Conv and pooling, built from the forward ops themselves: a
// convolution's input gradient is a ConvTranspose, its weight gradient a convolution of the input
// with the output gradient (batch and channels swapped), pooling's a scatter or a ConvTranspose.
#include <numeric>

#include "train/gradient_registry.h"

namespace tandem::train {
namespace {

using Grads = std::vector<int>;
using Ints = std::vector<int64_t>;

// Swaps the last two axes.
int transpose_last(GraphBuilder& b, int value) {
  const size_t rank = b.shape(value).size();
  Ints perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return b.transpose(value, perm);
}

// Swaps the first two axes (batch and channels).
int swap_batch_channels(GraphBuilder& b, int value) {
  Ints perm(b.shape(value).size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[0], perm[1]);
  return b.transpose(value, perm);
}

int slice(GraphBuilder& b, int value, const Ints& starts, const Ints& ends, const Ints& axes) {
  return b.add("Slice", {value, b.int64s(starts), b.int64s(ends), b.int64s(axes)});
}

// A sliding window's geometry (Conv, pooling), with auto_pad resolved into explicit pads.
struct Window {
  Ints kernel, strides, dilations, pads;  // pads: begins, then ends
  size_t rank() const { return kernel.size(); }
};

Window window_of(GradientContext& ctx, const Ints& kernel) {
  const Node& node = ctx.node;
  const Shape& in = ctx.input_shape(0);
  const Shape& out = ctx.builder.shape(ctx.output(0));
  Window w;
  const size_t k = kernel.size();
  w.kernel = kernel;
  w.strides = node.attr_ints("strides", Ints(k, 1));
  w.dilations = node.attr_ints("dilations", Ints(k, 1));
  w.pads = node.attr_ints("pads", Ints(2 * k, 0));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") w.pads.assign(2 * k, 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      const int64_t span = (out[i + 2] - 1) * w.strides[i] + (kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, span - in[i + 2]);
      const int64_t small = total / 2;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads[i + k] = total - w.pads[i];
    }
  }
  if (w.strides.size() != k || w.dilations.size() != k || w.pads.size() != 2 * k)
    ctx.refuse("its strides, dilations or pads do not match the kernel's rank");
  return w;
}

// The output_padding that makes a ConvTranspose of the output gradient exactly input-sized.
Ints output_padding(GradientContext& ctx, const Window& w) {
  const Shape& in = ctx.input_shape(0);
  const Shape& out = ctx.builder.shape(ctx.output(0));
  Ints padding;
  for (size_t i = 0; i < w.rank(); ++i) {
    const int64_t reach = (out[i + 2] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 -
                          w.pads[i] - w.pads[i + w.rank()];
    const int64_t extra = in[i + 2] - reach;
    if (extra < 0 || extra >= std::max(w.strides[i], w.dilations[i]))
      ctx.refuse("its geometry leaves " + std::to_string(extra) +
                 " input rows past the last window");
    padding.push_back(extra);
  }
  return padding;
}

GraphBuilder::Attributes transposed_window(const Window& w, const Ints& padding, int64_t group) {
  return {{"strides", w.strides}, {"dilations", w.dilations},  {"pads", w.pads},
          {"group", group},       {"output_padding", padding}, {"kernel_shape", w.kernel}};
}

// d loss / d W of a one-group convolution of x [N, Ci, ...] giving dy [N, Co, ...]: the
// correlation of x with dy over the batch, as a convolution whose batch is Ci and whose
// channels are N, with strides and dilations exchanged. Returns [Co, Ci, kernel...].
int conv_weight_grad(GraphBuilder& b, int x, int dy, const Window& w) {
  const int r = b.add("Conv", {swap_batch_channels(b, x), swap_batch_channels(b, dy)},
                      {{"strides", w.dilations}, {"dilations", w.strides}, {"pads", w.pads}});
  Ints starts(w.rank(), 0), axes;
  for (size_t i = 0; i < w.rank(); ++i) axes.push_back(static_cast<int64_t>(i + 2));
  return swap_batch_channels(b, slice(b, r, starts, w.kernel, axes));
}

// Depthwise (one input channel per group, Co = multiplier x Ci): x as one sample of Ci x N
// channels, dy [Co, N, ...] as the weight of a grouped convolution. Returns [Co, 1, kernel...].
int depthwise_weight_grad(GraphBuilder& b, int x, int dy, const Window& w, int64_t group) {
  Shape folded = b.shape(x);
  std::swap(folded[0], folded[1]);
  folded[1] *= folded[0];
  folded[0] = 1;
  const int xs = b.reshape(swap_batch_channels(b, x), folded);
  const int r = b.add(
      "Conv", {xs, swap_batch_channels(b, dy)},
      {{"strides", w.dilations}, {"dilations", w.strides}, {"pads", w.pads}, {"group", group}});
  Shape per_channel = b.shape(r);
  per_channel[0] = per_channel[1];
  per_channel[1] = 1;
  Ints starts(w.rank(), 0), axes;
  for (size_t i = 0; i < w.rank(); ++i) axes.push_back(static_cast<int64_t>(i + 2));
  return slice(b, b.reshape(r, per_channel), starts, w.kernel, axes);
}

Grads conv_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  const int x = ctx.input(0), weight = ctx.input(1);
  const Shape& weight_shape = ctx.input_shape(1);
  const Ints kernel(weight_shape.begin() + 2, weight_shape.end());
  const Window w = window_of(ctx, kernel);
  const int64_t group = ctx.node.attr_int("group", 1);
  const int dy = ctx.output_grad(0);
  Grads grads(ctx.node.inputs.size(), -1);
  if (ctx.wants(0)) {
    grads[0] =
        b.add("ConvTranspose", {dy, weight}, transposed_window(w, output_padding(ctx, w), group));
  }
  if (ctx.wants(1)) {
    const int64_t in_channels = ctx.input_shape(0)[1], out_channels = weight_shape[0];
    if (group == 1) {
      grads[1] = conv_weight_grad(b, x, dy, w);
    } else if (in_channels == group) {
      grads[1] = depthwise_weight_grad(b, x, dy, w, group);
    } else {
      // Each group on its own, stacked along the output channels.
      const int64_t in_per_group = in_channels / group, out_per_group = out_channels / group;
      std::vector<int> parts;
      for (int64_t g = 0; g < group; ++g) {
        const int xg = slice(b, x, {g * in_per_group}, {(g + 1) * in_per_group}, {1});
        const int dyg = slice(b, dy, {g * out_per_group}, {(g + 1) * out_per_group}, {1});
        parts.push_back(conv_weight_grad(b, xg, dyg, w));
      }
      grads[1] = b.add("Concat", parts, {{"axis", int64_t{0}}});
    }
  }
  if (ctx.wants(2)) {
    Ints axes = {0};
    for (size_t i = 0; i < w.rank(); ++i) axes.push_back(static_cast<int64_t>(i + 2));
    grads[2] = b.reduce_sum(dy, axes, false);
  }
  return grads;
}

Grads matmul_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  const int a = ctx.input(0), m = ctx.input(1);
  if (b.shape(a).size() < 2 || b.shape(m).size() < 2)
    ctx.refuse("a one-dimensional operand (only matrices and batches of them are differentiated)");
  const int dy = ctx.output_grad(0);
  Grads grads = {-1, -1};
  if (ctx.wants(0)) grads[0] = b.sum_to(b.add("MatMul", {dy, transpose_last(b, m)}), b.shape(a));
  if (ctx.wants(1)) grads[1] = b.sum_to(b.add("MatMul", {transpose_last(b, a), dy}), b.shape(m));
  return grads;
}

Grads gemm_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  const Node& node = ctx.node;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t trans_a = node.attr_int("transA", 0), trans_b = node.attr_int("transB", 0);
  const int a = ctx.input(0), m = ctx.input(1);
  const int dy = ctx.output_grad(0);
  Grads grads(node.inputs.size(), -1);
  const auto gemm = [&](int left, int right, int64_t ta, int64_t tb) {
    return b.add("Gemm", {left, right}, {{"alpha", alpha}, {"transA", ta}, {"transB", tb}});
  };
  // With op(X) = X or its transpose: d op(A) = alpha dY op(B)^T, d op(B) = alpha op(A)^T dY.
  if (ctx.wants(0)) grads[0] = trans_a ? gemm(m, dy, trans_b, 1) : gemm(dy, m, 0, 1 - trans_b);
  if (ctx.wants(1)) grads[1] = trans_b ? gemm(dy, a, 1, trans_a) : gemm(a, dy, 1 - trans_a, 0);
  if (ctx.wants(2)) grads[2] = b.sum_to(b.scale(dy, beta), ctx.input_shape(2));
  return grads;
}

// Scatters each output gradient back to the input element MaxPool took it from, through the
// Indices output (flat indices into the whole input), which the training graph asks for.
Grads max_pool_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  if (ctx.output(1) < 0) ctx.refuse("its Indices output was not kept for training");
  if (ctx.node.attr_int("storage_order", 0) != 0) ctx.refuse("column-major Indices");
  if (!ctx.wants(0)) return {-1};
  const Shape& in = ctx.input_shape(0);
  const int64_t count = numel(in);
  const int dy = ctx.output_grad(0);
  const int flat = b.add(
      "ScatterElements",
      {b.filled(0.0f, {count}, b.dtype(dy)), b.reshape(ctx.output(1), {-1}), b.reshape(dy, {-1})},
      {{"axis", int64_t{0}}, {"reduction", std::string("add")}});
  return {b.reshape(flat, in)};
}

// Spreads each output gradient evenly over its window: a ConvTranspose with a constant kernel.
Grads average_pool_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  if (!ctx.wants(0)) return {-1};
  const Ints kernel = ctx.node.attr_ints("kernel_shape");
  const Window w = window_of(ctx, kernel);
  const bool padded = std::any_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p != 0; });
  if (padded && ctx.node.attr_int("count_include_pad", 0) == 0)
    ctx.refuse("padding not counted in the average (count_include_pad=0 with pads)");
  if (ctx.node.attr_int("ceil_mode", 0) != 0) ctx.refuse("ceil_mode=1");
  const Shape& in = ctx.input_shape(0);
  const int64_t channels = in[1];
  int64_t area = 1;
  for (int64_t k : kernel) area *= k;
  Shape weight_shape = {channels, 1};
  weight_shape.insert(weight_shape.end(), kernel.begin(), kernel.end());
  const int weight = b.filled(1.0f / static_cast<float>(area), weight_shape, b.dtype(ctx.input(0)));
  return {b.add("ConvTranspose", {ctx.output_grad(0), weight},
                transposed_window(w, output_padding(ctx, w), channels))};
}

Grads global_average_pool_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  if (!ctx.wants(0)) return {-1};
  const Shape& in = ctx.input_shape(0);
  int64_t area = 1;
  for (size_t i = 2; i < in.size(); ++i) area *= in[i];
  const int spread = b.scale(ctx.output_grad(0), 1.0f / static_cast<float>(area));
  return {b.add("Expand", {spread, b.int64s(in)})};
}

}  // namespace

void register_linalg_gradients(GradientRegistry& registry) {
  registry.add("MatMul", {0, 1}, matmul_grads);
  registry.add("Gemm", {0, 1, 2}, gemm_grads);
  registry.add("Conv", {0, 1, 2}, conv_grads);
  registry.add("MaxPool", {0}, max_pool_grads);
  registry.add("AveragePool", {0}, average_pool_grads);
  registry.add("GlobalAveragePool", {0}, global_average_pool_grads);
}

}  // namespace tandem::train
