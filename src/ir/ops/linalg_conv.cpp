#include <string>

#include "ir/error.h"
#include "ir/ops/linalg_internal.h"
#include "ir/ops/linalg_window.h"

namespace tandem {
namespace {

bool dims_conflict(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

// Kernel size per spatial axis: from W, or from kernel_shape where W's is unknown.
std::vector<int64_t> kernel_size(const InferContext& ctx, const Shape& weights) {
  std::vector<int64_t> kernel(weights.begin() + 2, weights.end());
  if (!ctx.node().has("kernel_shape")) return kernel;
  const std::vector<int64_t> declared = ctx.node().attr_ints("kernel_shape");
  if (declared.size() != kernel.size()) ctx.fail("kernel_shape has the wrong number of values");
  for (size_t i = 0; i < kernel.size(); ++i) {
    if (dims_conflict(declared[i], kernel[i])) ctx.fail("kernel_shape does not match the weights");
    if (kernel[i] < 0) kernel[i] = declared[i];
  }
  return kernel;
}

struct ConvOperands {
  const ValueInfo& x;
  const ValueInfo& w;
  int64_t group;
};

// Checks what Conv and ConvTranspose share: dtypes, ranks, group and bias.
ConvOperands check_conv_operands(const InferContext& ctx, int64_t bias_size) {
  const ValueInfo& x = ctx.input(0);
  const ValueInfo& w = ctx.input(1);
  if (!is_floating(x.dtype)) ctx.fail("unsupported dtype " + std::string(dtype_name(x.dtype)));
  if (w.dtype != x.dtype) ctx.fail("weights have a different dtype than the input");
  if (x.shape.size() < 3 || x.shape.size() > 5) {
    ctx.fail("input must have 1 to 3 spatial axes, got shape " + shape_str(x.shape));
  }
  if (w.shape.size() != x.shape.size()) ctx.fail("weights and input ranks differ");
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1 || group > (int64_t{1} << 31)) ctx.fail("group must be positive");
  if (ctx.has_input(2)) {
    const ValueInfo& bias = ctx.input(2);
    if (bias.dtype != x.dtype) ctx.fail("bias has a different dtype than the input");
    if (bias.shape.size() != 1 || dims_conflict(bias.shape[0], bias_size)) {
      ctx.fail("bias must have shape [" + std::to_string(bias_size) + "]");
    }
  }
  return {x, w, group};
}

std::vector<InferredOutput> infer_conv(const InferContext& ctx) {
  const int64_t out_channels = ctx.input(1).shape.empty() ? kDynamicDim : ctx.input(1).shape[0];
  const ConvOperands op = check_conv_operands(ctx, out_channels);
  const int64_t channels = op.x.shape[1];
  const int64_t group_channels = op.w.shape[1];
  if (channels >= 0 && channels % op.group != 0) ctx.fail("channels not divisible by group");
  if (channels >= 0 && group_channels >= 0 && channels / op.group != group_channels) {
    ctx.fail("weights expect " + std::to_string(group_channels) +
             " input channels per group, got " + std::to_string(channels / op.group));
  }
  if (out_channels >= 0 && out_channels % op.group != 0) {
    ctx.fail("output channels not divisible by group");
  }
  const std::vector<int64_t> spatial(op.x.shape.begin() + 2, op.x.shape.end());
  const WindowGeometry g =
      resolve_window(ctx.node(), spatial, kernel_size(ctx, op.w.shape), /*ceil_mode=*/false);
  Shape out{op.x.shape[0], out_channels};
  out.insert(out.end(), g.output.begin(), g.output.end());
  // Input 3 is the residual a graph-fusion pass adds to the output (before the activation).
  if (ctx.has_input(3)) {
    const ValueInfo& residual = ctx.input(3);
    bool conflict = residual.dtype != op.x.dtype || residual.shape.size() != out.size();
    for (size_t i = 0; !conflict && i < out.size(); ++i) {
      conflict = dims_conflict(residual.shape[i], out[i]);
    }
    if (conflict) ctx.fail("residual input must have the output's shape " + shape_str(out));
  }
  check_fused_activation(ctx, op.x.dtype);
  return {{op.x.dtype, out, {}}};
}

// 2 * N * Cout * output spatial * (Cin / group) * kernel spatial.
OpCost conv_cost(const Node& node, std::span<const TensorType> inputs,
                 std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  cost.flops = 2 * known_product(outputs[0].shape) * known_product(inputs[1].shape, 1);
  return cost;
}

std::vector<InferredOutput> infer_conv_transpose(const InferContext& ctx) {
  const Shape& w_shape = ctx.input(1).shape;
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1 || (w_shape.size() >= 2 && w_shape[1] > kMaxElements / group)) {
    ctx.fail("group must be positive and keep the output channel count in range");
  }
  const int64_t out_channels =
      w_shape.size() < 2 || w_shape[1] < 0 ? kDynamicDim : w_shape[1] * group;
  const ConvOperands op = check_conv_operands(ctx, out_channels);
  if (dims_conflict(op.x.shape[1], op.w.shape[0])) {
    ctx.fail("weights expect " + std::to_string(op.w.shape[0]) + " input channels");
  }
  if (op.x.shape[1] >= 0 && op.x.shape[1] % op.group != 0) {
    ctx.fail("channels not divisible by group");
  }
  const std::vector<int64_t> spatial(op.x.shape.begin() + 2, op.x.shape.end());
  const WindowGeometry g =
      resolve_transposed_window(ctx.node(), spatial, kernel_size(ctx, op.w.shape));
  Shape out{op.x.shape[0], out_channels};
  out.insert(out.end(), g.output.begin(), g.output.end());
  check_fused_activation(ctx, op.x.dtype);
  return {{op.x.dtype, out, {}}};
}

// Every input element meets every kernel tap of its group's output channels.
OpCost conv_transpose_cost(const Node& node, std::span<const TensorType> inputs,
                           std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  cost.flops = 2 * known_product(inputs[0].shape) * known_product(inputs[1].shape, 1);
  return cost;
}

}  // namespace

void add_conv_schemas(OpRegistry& registry) {
  registry.add(
      {.name = "Conv", .min_inputs = 2, .max_inputs = 4, .infer = infer_conv, .cost = conv_cost});
  registry.add({.name = "ConvTranspose",
                .min_inputs = 2,
                .max_inputs = 3,
                .infer = infer_conv_transpose,
                .cost = conv_transpose_cost});
}

}  // namespace tandem
