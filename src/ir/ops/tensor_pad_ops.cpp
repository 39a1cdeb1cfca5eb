// Pad and Trilu: copies that also write values of their own.
#include "ir/ops/tensor_layout.h"
#include "ir/ops/tensor_ops.h"

namespace tandem::tensor_ops {
namespace {

std::vector<InferredOutput> infer_pad(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  const auto rank = static_cast<int64_t>(data.shape.size());
  const std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && ctx.opset() >= 19)) {
    ctx.fail("unsupported mode '" + mode + "'");
  }
  require_int_list(ctx, 1, "pads");
  if (ctx.has_input(2)) {
    const ValueInfo& value = ctx.input(2);
    if (value.dtype != data.dtype) ctx.fail("constant_value must have the data's dtype");
    if (value.shape.size() > 1 || (value.shape.size() == 1 && value.shape[0] != 1)) {
      ctx.fail("constant_value must be a scalar");
    }
  }
  const bool has_axes = ctx.opset() >= 18 && ctx.has_input(3);
  if (has_axes) require_int_list(ctx, 3, "axes");
  InferredOutput out{data.dtype, data.shape, {}};
  const auto pads = known_ints(ctx, 1);
  const auto axes = has_axes ? known_ints(ctx, 3) : std::optional<std::vector<int64_t>>{};
  if (!pads || (has_axes && !axes)) {
    out.shape.assign(data.shape.size(), kDynamicDim);
    return {out};
  }
  const std::vector<int64_t> pad_axes = axes ? *axes : std::vector<int64_t>{};
  std::vector<bool> seen(data.shape.size(), false);
  for (int64_t axis : pad_axes) {
    if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range");
    if (seen[axis < 0 ? axis + rank : axis]) ctx.fail("axes contain a repeated axis");
    seen[axis < 0 ? axis + rank : axis] = true;
  }
  const size_t count = has_axes ? pad_axes.size() : data.shape.size();
  if (pads->size() != 2 * count) ctx.fail("pads must have two entries per padded axis");
  for (int64_t pad : *pads) {
    if (pad < -kMaxElements || pad > kMaxElements) ctx.fail("pad amount out of range");
  }
  const std::vector<int64_t> amounts = pads_per_axis(data.shape.size(), *pads, pad_axes);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = data.shape[d];
    const int64_t before = amounts[d];
    const int64_t after = amounts[d + rank];
    if (dim < 0) continue;
    out.shape[d] = dim + before + after;
    if (out.shape[d] < 0) ctx.fail("pads crop axis " + std::to_string(d) + " below zero");
    const bool pads_outward = before > 0 || after > 0;
    if (mode == "reflect" && pads_outward && (before >= dim || after >= dim)) {
      ctx.fail("reflect pads must be smaller than the dim they pad");
    }
    if (mode != "constant" && pads_outward && dim == 0) {
      ctx.fail("cannot pad an empty axis in mode '" + mode + "'");
    }
  }
  if (is_static(out.shape)) checked_numel(ctx, out.shape);
  return {out};
}

std::vector<InferredOutput> infer_trilu(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  if (input.shape.size() < 2) ctx.fail("input must have rank >= 2");
  if (ctx.has_input(1)) {
    require_int_list(ctx, 1, "k");
    const Shape& k_shape = ctx.input(1).shape;
    if (!k_shape.empty() && k_shape[0] != 1) ctx.fail("k must be a scalar");
  }
  return {InferredOutput{input.dtype, input.shape, {}}};
}

}  // namespace

void register_pad_ops(OpRegistry& registry) {
  registry.add(make_schema("Pad", 2, 4, infer_pad, copy_cost));
  registry.add(make_schema("Trilu", 1, 2, infer_trilu, copy_cost));
}

}  // namespace tandem::tensor_ops
