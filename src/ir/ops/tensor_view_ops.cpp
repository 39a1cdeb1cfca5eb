// Ops whose output is input 0 under another shape: the runtime aliases the buffer, no kernel runs.
#include <algorithm>

#include "ir/ops/tensor_ops.h"

namespace tandem::tensor_ops {
namespace {

// The output of a view: its shape, and the input's contents under that shape when both are small
// and known.
std::vector<InferredOutput> view_of(const InferContext& ctx, Shape shape) {
  InferredOutput out{ctx.input(0).dtype, std::move(shape), {}};
  const Tensor* data = ctx.input_value(0);
  if (data && can_fold(out.shape)) out.value = data->reshaped(out.shape);
  return {out};
}

OpSchema view_schema(std::string name, int min_inputs, int max_inputs, InferFn infer) {
  OpSchema schema =
      make_schema(std::move(name), min_inputs, max_inputs, std::move(infer), view_cost);
  schema.output_aliases_input = true;
  return schema;
}

// Applies Reshape's rules (0 copies a dim unless allowzero, one -1 is inferred) to a known target.
Shape resolve_reshape(const InferContext& ctx, const Shape& input,
                      const std::vector<int64_t>& target, bool allowzero) {
  Shape out(target.size());
  int64_t inferred_axis = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t dim = target[i];
    if (dim == -1) {
      if (inferred_axis >= 0) ctx.fail("shape has more than one -1");
      inferred_axis = static_cast<int64_t>(i);
      out[i] = kDynamicDim;
    } else if (dim == 0 && !allowzero) {
      if (i >= input.size()) {
        ctx.fail("shape entry " + std::to_string(i) + " is 0 but the input has rank " +
                 std::to_string(input.size()));
      }
      out[i] = input[i];
    } else if (dim < 0) {
      ctx.fail("shape entry " + std::to_string(dim) + " is invalid");
    } else {
      has_zero |= dim == 0;
      out[i] = dim;
    }
  }
  if (has_zero && inferred_axis >= 0) ctx.fail("shape has both 0 (with allowzero) and -1");
  if (!is_static(input)) return out;
  const int64_t total = checked_numel(ctx, input);
  if (inferred_axis >= 0) {
    Shape others = out;
    others.erase(others.begin() + inferred_axis);
    if (!is_static(others)) return out;
    const int64_t known = checked_numel(ctx, others);
    if (known == 0 || total % known != 0) {
      ctx.fail("cannot reshape " + shape_str(input) + " to " + shape_str(target));
    }
    out[inferred_axis] = total / known;
  } else if (is_static(out) && checked_numel(ctx, out) != total) {
    ctx.fail("cannot reshape " + shape_str(input) + " to " + shape_str(out));
  }
  return out;
}

std::vector<InferredOutput> infer_reshape(const InferContext& ctx) {
  require_int_list(ctx, 1, "shape");
  const Shape& shape_of_shape = ctx.input(1).shape;
  if (shape_of_shape.size() != 1) ctx.fail("shape must be a 1-D tensor");
  const bool allowzero = ctx.opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  const auto target = known_ints(ctx, 1);
  if (!target) {
    if (shape_of_shape[0] < 0) ctx.fail("the length of the shape input must be static");
    return view_of(ctx, Shape(static_cast<size_t>(shape_of_shape[0]), kDynamicDim));
  }
  return view_of(ctx, resolve_reshape(ctx, ctx.input(0).shape, *target, allowzero));
}

// Product of dims [begin, end), dynamic when any of them is.
int64_t dims_product(const Shape& shape, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) {
    if (shape[i] < 0) return kDynamicDim;
    product *= shape[i];
  }
  return product;
}

std::vector<InferredOutput> infer_flatten(const InferContext& ctx) {
  const Shape& input = ctx.input(0).shape;
  const auto rank = static_cast<int64_t>(input.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  const int64_t outer = dims_product(input, 0, axis);
  const int64_t inner = dims_product(input, axis, input.size());
  if (outer > 0 && inner > 0) checked_numel(ctx, {outer, inner});
  return view_of(ctx, {outer, inner});
}

// Normalises axes against `rank`; fails on out-of-range or repeated axes.
std::vector<int64_t> normalize_axes(const InferContext& ctx, std::vector<int64_t> axes,
                                    int64_t rank) {
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) {
      ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " +
               std::to_string(rank));
    }
    if (axis < 0) axis += rank;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    ctx.fail("axes contain a repeated axis");
  }
  return axes;
}

// Length of a 1-D axes input, which must be static for the output rank to be known.
int64_t axes_length(const InferContext& ctx, size_t i) {
  require_int_list(ctx, i, "axes");
  const Shape& shape = ctx.input(i).shape;
  const int64_t length = shape.empty() ? 1 : shape[0];
  if (length < 0) ctx.fail("the length of axes must be static");
  return length;
}

std::vector<InferredOutput> infer_squeeze(const InferContext& ctx) {
  const Shape& input = ctx.input(0).shape;
  const auto rank = static_cast<int64_t>(input.size());
  if (!ctx.has_input(1)) {
    // Without axes every dim of size 1 goes; dynamic dims are assumed not to be 1.
    Shape out;
    std::copy_if(input.begin(), input.end(), std::back_inserter(out),
                 [](int64_t d) { return d != 1; });
    return view_of(ctx, out);
  }
  const int64_t count = axes_length(ctx, 1);
  const auto axes = known_ints(ctx, 1);
  if (count > rank) ctx.fail("more axes than the input has dims");
  if (!axes) return view_of(ctx, Shape(static_cast<size_t>(rank - count), kDynamicDim));
  std::vector<bool> removed(input.size(), false);
  for (int64_t axis : normalize_axes(ctx, *axes, rank)) {
    if (input[axis] != 1 && input[axis] != kDynamicDim) {
      ctx.fail("cannot squeeze axis " + std::to_string(axis) + " of size " +
               std::to_string(input[axis]));
    }
    removed[axis] = true;
  }
  Shape out;
  for (size_t i = 0; i < input.size(); ++i) {
    if (!removed[i]) out.push_back(input[i]);
  }
  return view_of(ctx, out);
}

std::vector<InferredOutput> infer_unsqueeze(const InferContext& ctx) {
  const Shape& input = ctx.input(0).shape;
  const int64_t out_rank = static_cast<int64_t>(input.size()) + axes_length(ctx, 1);
  const auto axes = known_ints(ctx, 1);
  if (!axes) return view_of(ctx, Shape(static_cast<size_t>(out_rank), kDynamicDim));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t axis : normalize_axes(ctx, *axes, out_rank)) inserted[axis] = true;
  Shape out;
  auto next_input_dim = input.begin();
  for (bool is_new : inserted) out.push_back(is_new ? 1 : *next_input_dim++);
  return view_of(ctx, out);
}

}  // namespace

void register_view_ops(OpRegistry& registry) {
  registry.add(view_schema("Reshape", 2, 2, infer_reshape));
  registry.add(view_schema("Flatten", 1, 1, infer_flatten));
  registry.add(view_schema("Squeeze", 1, 2, infer_squeeze));
  registry.add(view_schema("Unsqueeze", 2, 2, infer_unsqueeze));
  OpSchema identity = view_schema(
      "Identity", 1, 1, [](const InferContext& ctx) { return view_of(ctx, ctx.input(0).shape); });
  identity.elementwise = true;  // a view of the same layout, unlike the others here
  registry.add(std::move(identity));
}

}  // namespace tandem::tensor_ops
