// Ops that rearrange elements: Transpose, Concat, Split, Slice, Expand, Tile, DepthToSpace,
// SpaceToDepth.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "ir/error.h"
#include "ir/ops/tensor_layout.h"
#include "ir/ops/tensor_ops.h"

namespace tandem::tensor_ops {
namespace {

constexpr int kAnyInputs = std::numeric_limits<int>::max();

// Folds an element-rearranging op when its data input is known and the output small.
void fold_strided(const InferContext& ctx, InferredOutput& out, const StridedLayout& layout) {
  const Tensor* data = ctx.input_value(0);
  if (data && can_fold(out.shape)) out.value = gather_strided(*data, layout).reshaped(out.shape);
}

std::vector<int64_t> transpose_perm(const InferContext& ctx, size_t rank) {
  std::vector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (!ctx.node().has("perm")) return perm;
  perm = ctx.node().attr_ints("perm");
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank) ctx.fail("perm must have one entry per input dim");
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[axis]) {
      ctx.fail("perm is not a permutation of the input dims");
    }
    seen[axis] = true;
  }
  return perm;
}

std::vector<InferredOutput> infer_transpose(const InferContext& ctx) {
  const Shape& input = ctx.input(0).shape;
  const std::vector<int64_t> perm = transpose_perm(ctx, input.size());
  InferredOutput out{ctx.input(0).dtype, {}, {}};
  for (int64_t axis : perm) out.shape.push_back(input[axis]);
  if (is_static(input)) fold_strided(ctx, out, transpose_layout(input, perm));
  return {out};
}

std::vector<InferredOutput> infer_concat(const InferContext& ctx) {
  if (!ctx.node().has("axis")) ctx.fail("attribute 'axis' is required");
  const ValueInfo& first = ctx.input(0);
  const auto rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) ctx.fail("inputs must have rank >= 1");
  const int64_t axis_attr = ctx.node().attr_int("axis", 0);
  if (axis_attr < -rank || axis_attr >= rank) ctx.fail("axis is out of range");
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  InferredOutput out{first.dtype, first.shape, {}};
  out.shape[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ValueInfo& input = ctx.input(i);
    if (input.dtype != first.dtype) ctx.fail("inputs must have one dtype");
    if (static_cast<int64_t>(input.shape.size()) != rank) ctx.fail("inputs must have one rank");
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t dim = input.shape[d];
      if (d == axis) {
        out.shape[d] = dim < 0 || out.shape[d] < 0 ? kDynamicDim : out.shape[d] + dim;
      } else if (out.shape[d] < 0) {
        out.shape[d] = dim;
      } else if (dim >= 0 && dim != out.shape[d]) {
        ctx.fail("input shapes " + shape_str(first.shape) + " and " + shape_str(input.shape) +
                 " differ outside the concatenation axis");
      }
    }
  }
  if (!can_fold(out.shape)) return {out};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.input_value(i)) return {out};
  }
  out.value = Tensor::allocate(out.dtype, out.shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.shape[d];
  auto* to = static_cast<char*>(out.value.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& input = *ctx.input_value(i);
      const size_t chunk = input.nbytes() / static_cast<size_t>(outer);
      std::memcpy(to, static_cast<const char*>(input.raw()) + o * chunk, chunk);
      to += chunk;
    }
  }
  return {out};
}

// Sizes of Split's outputs along the axis; kDynamicDim where unknown.
std::vector<int64_t> split_sizes(const InferContext& ctx, int64_t dim, size_t outputs) {
  const auto count = static_cast<int64_t>(outputs);
  if (ctx.has_input(1)) {
    require_int_list(ctx, 1, "split");
    const auto sizes = known_ints(ctx, 1);
    if (!sizes) return std::vector<int64_t>(outputs, kDynamicDim);
    if (sizes->size() != outputs) ctx.fail("split must have one entry per output");
    int64_t total = 0;
    for (int64_t size : *sizes) {
      if (size < 0 || size > kMaxElements) ctx.fail("split has an invalid size");
      total += size;
    }
    if (dim >= 0 && total != dim) ctx.fail("split sizes do not add up to the dim");
    return *sizes;
  }
  const bool has_num_outputs = ctx.opset() >= 18 && ctx.node().has("num_outputs");
  if (has_num_outputs && ctx.node().attr_int("num_outputs", 0) != count) {
    ctx.fail("num_outputs does not match the node's outputs");
  }
  if (dim < 0) return std::vector<int64_t>(outputs, kDynamicDim);
  if (has_num_outputs) {
    // Chunks of ceil(dim / n), the last one smaller.
    const int64_t chunk = (dim + count - 1) / count;
    const int64_t last = dim - chunk * (count - 1);
    if (last < 0)
      ctx.fail("cannot split a dim of " + std::to_string(dim) + " into " + std::to_string(count));
    std::vector<int64_t> sizes(outputs, chunk);
    sizes.back() = last;
    return sizes;
  }
  if (dim % count != 0) {
    ctx.fail("cannot split a dim of " + std::to_string(dim) + " evenly into " +
             std::to_string(count));
  }
  return std::vector<int64_t>(outputs, dim / count);
}

std::vector<InferredOutput> infer_split(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  const auto rank = static_cast<int64_t>(input.shape.size());
  const int64_t axis_attr = ctx.node().attr_int("axis", 0);
  if (axis_attr < -rank || axis_attr >= rank) ctx.fail("axis is out of range");
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  const size_t outputs = ctx.node().outputs.size();
  if (outputs == 0) ctx.fail("Split needs at least one output");
  std::vector<InferredOutput> result;
  for (int64_t size : split_sizes(ctx, input.shape[axis], outputs)) {
    InferredOutput out{input.dtype, input.shape, {}};
    out.shape[axis] = size;
    result.push_back(out);
  }
  return result;
}

// Known integer list, checked for its length; nullopt when unknown.
std::optional<std::vector<int64_t>> slice_list(const InferContext& ctx, size_t i,
                                               const char* what) {
  require_int_list(ctx, i, what, false);
  return known_ints(ctx, i);
}

// Marks the sliced axes dynamic when the slice bounds are unknown; all of them when even the
// axes are.
void mark_unknown_slice(const InferContext& ctx, const std::optional<std::vector<int64_t>>& axes,
                        Shape& shape) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (ctx.has_input(3) && !axes) {
    shape.assign(shape.size(), kDynamicDim);
    return;
  }
  if (axes) {
    for (int64_t axis : *axes) {
      if (axis < -rank || axis >= rank) ctx.fail("axis is out of range");
      shape[axis < 0 ? axis + rank : axis] = kDynamicDim;
    }
    return;
  }
  // Default axes are 0 .. len(starts) - 1.
  const Shape& starts_shape = ctx.input(1).shape;
  const int64_t count = starts_shape.empty() ? 1 : starts_shape[0];
  if (count > rank) ctx.fail("more starts than input dims");
  if (count < 0) {
    shape.assign(shape.size(), kDynamicDim);
    return;
  }
  std::fill(shape.begin(), shape.begin() + count, kDynamicDim);
}

std::vector<InferredOutput> infer_slice(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  const auto rank = static_cast<int64_t>(data.shape.size());
  InferredOutput out{data.dtype, data.shape, {}};
  const auto starts = slice_list(ctx, 1, "starts");
  const auto ends = slice_list(ctx, 2, "ends");
  const auto axes = ctx.has_input(3) ? slice_list(ctx, 3, "axes") : std::nullopt;
  const auto steps = ctx.has_input(4) ? slice_list(ctx, 4, "steps") : std::nullopt;
  const bool axes_known = !ctx.has_input(3) || axes;
  const bool steps_known = !ctx.has_input(4) || steps;
  if (!starts || !ends || !axes_known || !steps_known) {
    mark_unknown_slice(ctx, axes, out.shape);
    return {out};
  }
  const size_t count = starts->size();
  std::vector<int64_t> slice_axes(count);
  std::iota(slice_axes.begin(), slice_axes.end(), 0);
  if (axes) slice_axes = *axes;
  const std::vector<int64_t> slice_steps = steps ? *steps : std::vector<int64_t>(count, 1);
  if (ends->size() != count || slice_axes.size() != count || slice_steps.size() != count) {
    ctx.fail("starts, ends, axes and steps must have one length");
  }
  std::vector<bool> seen(data.shape.size(), false);
  std::vector<SliceRange> ranges;
  for (int64_t dim : data.shape) ranges.push_back({0, 1, dim});
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = slice_axes[i];
    if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (seen[axis]) ctx.fail("axes contain a repeated axis");
    seen[axis] = true;
    if (slice_steps[i] == 0) ctx.fail("steps must not be zero");
    const int64_t dim = data.shape[axis];
    if (dim < 0) {
      out.shape[axis] = kDynamicDim;
      continue;
    }
    ranges[axis] = slice_range((*starts)[i], (*ends)[i], slice_steps[i], dim);
    out.shape[axis] = ranges[axis].count;
  }
  if (is_static(data.shape)) fold_strided(ctx, out, slice_layout(data.shape, ranges));
  return {out};
}

std::vector<InferredOutput> infer_expand(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  require_int_list(ctx, 1, "shape");
  const Shape& shape_of_shape = ctx.input(1).shape;
  if (shape_of_shape.size() != 1) ctx.fail("shape must be a 1-D tensor");
  InferredOutput out{input.dtype, {}, {}};
  const auto target = known_ints(ctx, 1);
  if (!target) {
    if (shape_of_shape[0] < 0) ctx.fail("the length of the shape input must be static");
    const size_t rank = std::max(input.shape.size(), static_cast<size_t>(shape_of_shape[0]));
    out.shape.assign(rank, kDynamicDim);
    // A dim above 1 survives any broadcast.
    const size_t lead = rank - input.shape.size();
    for (size_t d = 0; d < input.shape.size(); ++d) {
      if (input.shape[d] > 1) out.shape[lead + d] = input.shape[d];
    }
    return {out};
  }
  for (int64_t dim : *target) {
    if (dim < 0) ctx.fail("shape has a negative dim " + std::to_string(dim));
  }
  try {
    out.shape = broadcast_shapes(input.shape, *target);
  } catch (const InputError& error) {
    ctx.fail(error.what());
  }
  if (is_static(out.shape)) checked_numel(ctx, out.shape);
  if (is_static(input.shape)) fold_strided(ctx, out, expand_layout(input.shape, out.shape));
  return {out};
}

std::vector<InferredOutput> infer_tile(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  require_int_list(ctx, 1, "repeats");
  const Shape& repeats_shape = ctx.input(1).shape;
  if (repeats_shape.size() != 1 ||
      (repeats_shape[0] >= 0 && repeats_shape[0] != static_cast<int64_t>(input.shape.size()))) {
    ctx.fail("repeats must have one entry per input dim");
  }
  InferredOutput out{input.dtype, Shape(input.shape.size(), kDynamicDim), {}};
  const auto repeats = known_ints(ctx, 1);
  if (!repeats) return {out};
  if (repeats->size() != input.shape.size()) ctx.fail("repeats must have one entry per input dim");
  for (size_t d = 0; d < input.shape.size(); ++d) {
    const int64_t repeat = (*repeats)[d];
    if (repeat < 0 || repeat > kMaxElements) ctx.fail("repeats must be non-negative");
    if (input.shape[d] >= 0) out.shape[d] = input.shape[d] * repeat;
  }
  if (!is_static(out.shape)) return {out};
  checked_numel(ctx, out.shape);
  fold_strided(ctx, out, tile_layout(input.shape, *repeats));
  return {out};
}

// Checks the NCHW input and block size of DepthToSpace / SpaceToDepth.
int64_t block_size(const InferContext& ctx) {
  if (ctx.input(0).shape.size() != 4) ctx.fail("input must be 4-D");
  const int64_t block = ctx.node().attr_int("blocksize", 0);
  if (block <= 0 || block > 1 << 16) ctx.fail("blocksize must be positive");
  return block;
}

std::vector<InferredOutput> infer_depth_to_space(const InferContext& ctx) {
  const int64_t block = block_size(ctx);
  const std::string mode = ctx.node().attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD");
  Shape shape = ctx.input(0).shape;
  if (shape[1] >= 0 && shape[1] % (block * block) != 0) {
    ctx.fail("channels must be a multiple of blocksize^2");
  }
  if (shape[1] >= 0) shape[1] /= block * block;
  for (int d : {2, 3}) shape[d] = shape[d] < 0 ? kDynamicDim : shape[d] * block;
  return {InferredOutput{ctx.input(0).dtype, shape, {}}};
}

std::vector<InferredOutput> infer_space_to_depth(const InferContext& ctx) {
  const int64_t block = block_size(ctx);
  Shape shape = ctx.input(0).shape;
  for (int d : {2, 3}) {
    if (shape[d] >= 0 && shape[d] % block != 0) {
      ctx.fail("height and width must be multiples of blocksize");
    }
    if (shape[d] >= 0) shape[d] /= block;
  }
  if (shape[1] >= 0) shape[1] *= block * block;
  return {InferredOutput{ctx.input(0).dtype, shape, {}}};
}

}  // namespace

void register_layout_ops(OpRegistry& registry) {
  registry.add(make_schema("Transpose", 1, 1, infer_transpose, copy_cost));
  registry.add(make_schema("Concat", 1, kAnyInputs, infer_concat, copy_cost));
  registry.add(make_schema("Split", 1, 2, infer_split, copy_cost));
  registry.add(make_schema("Slice", 3, 5, infer_slice, gather_cost));
  registry.add(make_schema("Expand", 2, 2, infer_expand, copy_cost));
  registry.add(make_schema("Tile", 2, 2, infer_tile, copy_cost));
  registry.add(make_schema("DepthToSpace", 1, 1, infer_depth_to_space, copy_cost));
  registry.add(make_schema("SpaceToDepth", 1, 1, infer_space_to_depth, copy_cost));
}

}  // namespace tandem::tensor_ops
