// Gradients of ops that move elements: views, Transpose, Concat/Split, Slice/Pad, Gather,
// Expand. Each sends a gradient back to where its elements came from.
#include <numeric>

#include "train/gradient_registry.h"

namespace tandem::train {
namespace {

using Grads = std::vector<int>;
using Ints = std::vector<int64_t>;

// Ops whose output is input 0's elements in another shape.
Grads view_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1};
  return {ctx.builder.reshape(ctx.output_grad(0), ctx.input_shape(0))};
}

Grads transpose_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1};
  const size_t rank = ctx.input_shape(0).size();
  Ints perm = ctx.node.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  Ints inverse(rank);
  for (size_t i = 0; i < rank; ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {ctx.builder.transpose(ctx.output_grad(0), inverse)};
}

Grads concat_grads(GradientContext& ctx) {
  GraphBuilder& b = ctx.builder;
  const int64_t axis = ctx.axis(ctx.node.attr_int("axis", 0), b.shape(ctx.output(0)).size());
  const int dy = ctx.output_grad(0);
  Grads grads;
  int64_t start = 0;
  for (size_t i = 0; i < ctx.node.inputs.size(); ++i) {
    const int64_t size = ctx.input_shape(i)[static_cast<size_t>(axis)];
    grads.push_back(ctx.wants(i) ? b.add("Slice", {dy, b.int64s({start}), b.int64s({start + size}),
                                                   b.int64s({axis})})
                                 : -1);
    start += size;
  }
  return grads;
}

Grads split_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1, -1};
  GraphBuilder& b = ctx.builder;
  const int64_t axis = ctx.axis(ctx.node.attr_int("axis", 0), ctx.input_shape(0).size());
  std::vector<int> parts;
  for (size_t i = 0; i < ctx.node.outputs.size(); ++i) parts.push_back(ctx.output_grad(i));
  return {b.add("Concat", parts, {{"axis", axis}}), -1};
}

// A step-1 Slice's gradient pads the output gradient back to the input's extent.
Grads slice_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1};
  GraphBuilder& b = ctx.builder;
  const Shape& in = ctx.input_shape(0);
  const size_t rank = in.size();
  const Ints starts = ctx.constant_ints(1), ends = ctx.constant_ints(2);
  Ints axes = ctx.constant_ints(3), steps = ctx.constant_ints(4);
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  Ints pads(2 * rank, 0);
  for (size_t i = 0; i < starts.size(); ++i) {
    if (steps[i] != 1) ctx.refuse("a step other than 1");
    const size_t axis = static_cast<size_t>(ctx.axis(axes[i], rank));
    const int64_t dim = in[axis];
    const auto clamp = [dim](int64_t v) {
      if (v < 0) v += dim;
      return std::clamp<int64_t>(v, 0, dim);
    };
    const int64_t begin = clamp(starts[i]);
    const int64_t end = std::max(begin, clamp(ends[i]));
    pads[axis] = begin;
    pads[axis + rank] = dim - end;
  }
  return {b.add("Pad", {ctx.output_grad(0), b.int64s(pads)})};
}

// A constant-mode Pad's gradient slices the padding off again.
Grads pad_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1};
  GraphBuilder& b = ctx.builder;
  if (ctx.node.attr_string("mode", "constant") != "constant")
    ctx.refuse("a mode other than constant");
  const Shape& in = ctx.input_shape(0);
  const size_t rank = in.size();
  const Ints pads = ctx.constant_ints(1);
  Ints axes = ctx.constant_ints(3);
  if (axes.empty()) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  Ints starts, ends, slice_axes;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t begin = pads[i], end = pads[i + axes.size()];
    if (begin < 0 || end < 0) ctx.refuse("negative pads");
    const size_t axis = static_cast<size_t>(ctx.axis(axes[i], rank));
    starts.push_back(begin);
    ends.push_back(begin + in[axis]);
    slice_axes.push_back(static_cast<int64_t>(axis));
  }
  return {
      b.add("Slice", {ctx.output_grad(0), b.int64s(starts), b.int64s(ends), b.int64s(slice_axes)})};
}

// Gather's data gradient adds each output row into the row it was read from (rows read twice
// get both): a ScatterND with reduction add, along axis 0 of the data moved to the front.
Grads gather_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1, -1};
  GraphBuilder& b = ctx.builder;
  const Shape& data = ctx.input_shape(0);
  const size_t rank = data.size();
  const size_t axis = static_cast<size_t>(ctx.axis(ctx.node.attr_int("axis", 0), rank));
  const size_t index_rank = ctx.input_shape(1).size();
  int indices = ctx.input(1);
  // Negative indices count from the end.
  const int dim = b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {data[axis]}));
  indices = b.add("Cast", {indices}, {{"to", int64_t{7}}});  // TensorProto.INT64
  const int zero = b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {0}));
  indices = b.add("Where", {b.add("Less", {indices, zero}), b.sum(indices, dim), indices});
  int dy = ctx.output_grad(0);
  Ints data_perm, dy_perm;
  if (axis != 0) {
    // data -> [axis, others...]; dy [data[:axis], I, data[axis+1:]] -> [I, data[:axis], rest]
    data_perm.push_back(static_cast<int64_t>(axis));
    for (size_t a = 0; a < rank; ++a)
      if (a != axis) data_perm.push_back(static_cast<int64_t>(a));
    for (size_t a = 0; a < index_rank; ++a) dy_perm.push_back(static_cast<int64_t>(axis + a));
    for (size_t a = 0; a < axis; ++a) dy_perm.push_back(static_cast<int64_t>(a));
    for (size_t a = axis + index_rank; a < rank - 1 + index_rank; ++a)
      dy_perm.push_back(static_cast<int64_t>(a));
    dy = b.transpose(dy, dy_perm);
  }
  Shape moved;
  for (size_t a = 0; a < rank; ++a)
    moved.push_back(data[data_perm.empty() ? a : static_cast<size_t>(data_perm[a])]);
  const int zeros = b.filled(0.0f, moved, b.dtype(dy));
  const int tuples = b.add("Unsqueeze", {indices, b.int64s({-1})});
  int grad = b.add("ScatterND", {zeros, tuples, dy}, {{"reduction", std::string("add")}});
  if (!data_perm.empty()) {
    Ints inverse(rank);
    for (size_t i = 0; i < rank; ++i)
      inverse[static_cast<size_t>(data_perm[i])] = static_cast<int64_t>(i);
    grad = b.transpose(grad, inverse);
  }
  return {grad, -1};
}

Grads gather_elements_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1, -1};
  GraphBuilder& b = ctx.builder;
  const int64_t axis = ctx.node.attr_int("axis", 0);
  const int zeros = b.filled(0.0f, ctx.input_shape(0), b.dtype(ctx.input(0)));
  return {b.add("ScatterElements", {zeros, ctx.input(1), ctx.output_grad(0)},
                {{"axis", axis}, {"reduction", std::string("add")}}),
          -1};
}

Grads expand_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1, -1};
  return {ctx.builder.sum_to(ctx.output_grad(0), ctx.input_shape(0)), -1};
}

// ReduceSum and ReduceMean: the output gradient spread back over the reduced axes.
Grads reduce_grads(GradientContext& ctx) {
  if (!ctx.wants(0)) return {-1, -1};
  GraphBuilder& b = ctx.builder;
  const Shape& in = ctx.input_shape(0);
  const size_t rank = in.size();
  Ints axes = ctx.node.has("axes") ? ctx.node.attr_ints("axes") : ctx.constant_ints(1);
  const int dy = ctx.output_grad(0);
  if (axes.empty()) {
    if (ctx.node.attr_int("noop_with_empty_axes", 0) != 0) return {dy, -1};
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  Shape kept = in;
  int64_t count = 1;
  for (int64_t axis : axes) {
    const size_t a = static_cast<size_t>(ctx.axis(axis, rank));
    count *= in[a];
    kept[a] = 1;
  }
  int spread = b.reshape(dy, kept);
  if (ctx.node.op_type == "ReduceMean") spread = b.scale(spread, 1.0f / static_cast<float>(count));
  return {b.add("Expand", {spread, b.int64s(in)}), -1};
}

}  // namespace

void register_tensor_gradients(GradientRegistry& registry) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    registry.add(op, {0}, view_grads);
  registry.add("Transpose", {0}, transpose_grads);
  registry.add_variadic("Concat", concat_grads);
  registry.add("Split", {0}, split_grads);
  registry.add("Slice", {0}, slice_grads);
  registry.add("Pad", {0}, pad_grads);
  registry.add("Gather", {0}, gather_grads);
  registry.add("GatherElements", {0}, gather_elements_grads);
  registry.add("Expand", {0}, expand_grads);
  registry.add("ReduceSum", {0}, reduce_grads);
  registry.add("ReduceMean", {0}, reduce_grads);
}

}  // namespace tandem::train
