// Gradients of LayerNormalization, Softmax and LogSoftmax. (BatchNormalization is trained with
// batch statistics: the training graph rewrites it into ops that have gradients.)
#include "train/gradient_registry.h"

namespace tandem::train {
namespace {

using Grads = std::vector<int>;
using Ints = std::vector<int64_t>;

// The mean over `axes`, kept as size-1 axes.
int mean(GraphBuilder& b, int value, const Ints& axes) {
  int64_t count = 1;
  for (int64_t axis : axes) count *= b.shape(value)[static_cast<size_t>(axis)];
  return b.scale(b.reduce_sum(value, axes, true), 1.0f / static_cast<float>(count));
}

// y = (x - mean) * rstd * scale + bias over the axes from `axis` on:
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * scale.
Grads layer_norm_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  const int x = ctx.input(0), scale = ctx.input(1);
  const size_t rank = ctx.input_shape(0).size();
  const int64_t axis = ctx.axis(ctx.node.attr_int("axis", -1), rank);
  const float epsilon = ctx.node.attr_float("epsilon", 1e-5f);
  Ints axes;
  for (int64_t a = axis; a < static_cast<int64_t>(rank); ++a) axes.push_back(a);
  const int dy = ctx.output_grad(0);
  const int centred = b.sub(x, mean(b, x, axes));
  const int variance = mean(b, b.mul(centred, centred), axes);
  const int rstd =
      b.add("Reciprocal", {b.add("Sqrt", {b.sum(variance, b.scalar(epsilon, b.dtype(x)))})});
  const int xhat = b.mul(centred, rstd);
  Grads grads(ctx.node.inputs.size(), -1);
  if (ctx.wants(0)) {
    const int g = b.mul(dy, scale);
    const int inner = b.sub(b.sub(g, mean(b, g, axes)), b.mul(xhat, mean(b, b.mul(g, xhat), axes)));
    grads[0] = b.mul(rstd, inner);
  }
  if (ctx.wants(1)) grads[1] = b.sum_to(b.mul(dy, xhat), ctx.input_shape(1));
  if (ctx.wants(2)) grads[2] = b.sum_to(dy, ctx.input_shape(2));
  return grads;
}

Grads softmax_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  if (!ctx.wants(0)) return {-1};
  const int64_t axis = ctx.axis(ctx.node.attr_int("axis", -1), ctx.input_shape(0).size());
  const int y = ctx.output(0), dy = ctx.output_grad(0);
  return {b.mul(y, b.sub(dy, b.reduce_sum(b.mul(dy, y), {axis}, true)))};
}

Grads log_softmax_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  if (!ctx.wants(0)) return {-1};
  const int64_t axis = ctx.axis(ctx.node.attr_int("axis", -1), ctx.input_shape(0).size());
  const int y = ctx.output(0), dy = ctx.output_grad(0);
  return {b.sub(dy, b.mul(b.add("Exp", {y}), b.reduce_sum(dy, {axis}, true)))};
}

}  // namespace

void register_normalization_gradients(GradientRegistry& registry) {
  registry.add("LayerNormalization", {0, 1, 2}, layer_norm_grads);
  registry.add("Softmax", {0}, softmax_grads);
  registry.add("LogSoftmax", {0}, log_softmax_grads);
}

}  // namespace tandem::train
