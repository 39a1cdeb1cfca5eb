// Indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements, OneHot, and
// EmbeddingBag (Tandem's own: what a `Loop` of per-bag lookups becomes, ir/fuse_embedding_bag.h).
#include <cstring>

#include "ir/ops/tensor_ops.h"

namespace tandem::tensor_ops {
namespace {

int64_t axis_attr(const InferContext& ctx, int64_t rank, int64_t fallback = 0) {
  const int64_t axis = ctx.node().attr_int("axis", fallback);
  if (axis < -rank || axis >= rank) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

void require_indices(const InferContext& ctx, size_t i) {
  const DType dtype = ctx.input(i).dtype;
  if (dtype != DType::kInt64 && dtype != DType::kInt32) ctx.fail("indices must be int32 or int64");
}

// Gather over rows of `inner` bytes, as the kernel does; indices already range-checked.
Tensor fold_gather(const Tensor& data, const std::vector<int64_t>& indices, int64_t axis,
                   Shape shape) {
  Tensor out = Tensor::allocate(data.dtype(), std::move(shape));
  const int64_t dim = data.dim(axis);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  const size_t row = outer * dim == 0 ? 0 : data.nbytes() / static_cast<size_t>(outer * dim);
  auto* to = static_cast<char*>(out.raw());
  const auto* from = static_cast<const char*>(data.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : indices) {
      const int64_t source = o * dim + (index < 0 ? index + dim : index);
      std::memcpy(to, from + source * row, row);
      to += row;
    }
  }
  return out;
}

std::vector<InferredOutput> infer_gather(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  require_indices(ctx, 1);
  const Shape& indices_shape = ctx.input(1).shape;
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) ctx.fail("data must have rank >= 1");
  const int64_t axis = axis_attr(ctx, rank);
  InferredOutput out{data.dtype, {}, {}};
  out.shape.insert(out.shape.end(), data.shape.begin(), data.shape.begin() + axis);
  out.shape.insert(out.shape.end(), indices_shape.begin(), indices_shape.end());
  out.shape.insert(out.shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  const auto indices = known_ints(ctx, 1);
  const int64_t dim = data.shape[axis];
  if (indices && dim >= 0) {
    for (int64_t index : *indices) {
      if (index < -dim || index >= dim) {
        ctx.fail("index " + std::to_string(index) + " is out of range for a dim of " +
                 std::to_string(dim));
      }
    }
  }
  if (indices && ctx.input_value(0) && can_fold(out.shape)) {
    out.value = fold_gather(*ctx.input_value(0), *indices, axis, out.shape);
  }
  return {out};
}

std::vector<InferredOutput> infer_gather_elements(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  require_indices(ctx, 1);
  const Shape& indices = ctx.input(1).shape;
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0 || static_cast<int64_t>(indices.size()) != rank) {
    ctx.fail("data and indices must have one rank >= 1");
  }
  const int64_t axis = axis_attr(ctx, rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && indices[d] >= 0 && data.shape[d] >= 0 && indices[d] > data.shape[d]) {
      ctx.fail("indices shape " + shape_str(indices) + " exceeds data shape " +
               shape_str(data.shape));
    }
  }
  return {InferredOutput{data.dtype, indices, {}}};
}

std::vector<InferredOutput> infer_gather_nd(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  if (ctx.input(1).dtype != DType::kInt64) ctx.fail("indices must be int64");
  const Shape& indices = ctx.input(1).shape;
  const auto rank = static_cast<int64_t>(data.shape.size());
  const auto indices_rank = static_cast<int64_t>(indices.size());
  const int64_t batch_dims = ctx.node().attr_int("batch_dims", 0);
  if (rank < 1 || indices_rank < 1) ctx.fail("data and indices must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(rank, indices_rank)) {
    ctx.fail("batch_dims must be below the ranks of data and indices");
  }
  const int64_t depth = indices.back();
  if (depth < 0) ctx.fail("the last dim of indices must be static");
  if (depth < 1 || depth > rank - batch_dims) ctx.fail("the last dim of indices is out of range");
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (data.shape[d] >= 0 && indices[d] >= 0 && data.shape[d] != indices[d]) {
      ctx.fail("batch dims of data and indices differ");
    }
  }
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.shape.begin() + batch_dims + depth, data.shape.end());
  return {InferredOutput{data.dtype, out, {}}};
}

// Reduction attribute of the Scatter ops, checked against the opset that introduced it.
void check_reduction(const InferContext& ctx) {
  const std::string reduction = ctx.node().attr_string("reduction", "none");
  const bool known = reduction == "none" ||
                     (ctx.opset() >= 16 && (reduction == "add" || reduction == "mul")) ||
                     (ctx.opset() >= 18 && (reduction == "max" || reduction == "min"));
  if (!known) ctx.fail("unsupported reduction '" + reduction + "'");
}

bool dims_match(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

std::vector<InferredOutput> infer_scatter_nd(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  if (ctx.input(1).dtype != DType::kInt64) ctx.fail("indices must be int64");
  const Shape& indices = ctx.input(1).shape;
  const ValueInfo& updates = ctx.input(2);
  check_reduction(ctx);
  if (updates.dtype != data.dtype) ctx.fail("updates must have the data's dtype");
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (rank < 1 || indices.empty()) ctx.fail("data and indices must have rank >= 1");
  const int64_t depth = indices.back();
  if (depth < 0) ctx.fail("the last dim of indices must be static");
  if (depth < 1 || depth > rank) ctx.fail("the last dim of indices is out of range");
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + depth, data.shape.end());
  bool matches = expected.size() == updates.shape.size();
  for (size_t d = 0; matches && d < expected.size(); ++d) {
    matches = dims_match(expected[d], updates.shape[d]);
  }
  if (!matches) {
    ctx.fail("updates shape " + shape_str(updates.shape) + " should be " + shape_str(expected));
  }
  return {InferredOutput{data.dtype, data.shape, {}}};
}

std::vector<InferredOutput> infer_scatter_elements(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  require_indices(ctx, 1);
  const Shape& indices = ctx.input(1).shape;
  const ValueInfo& updates = ctx.input(2);
  check_reduction(ctx);
  if (updates.dtype != data.dtype) ctx.fail("updates must have the data's dtype");
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (rank < 1 || static_cast<int64_t>(indices.size()) != rank) {
    ctx.fail("data and indices must have one rank >= 1");
  }
  axis_attr(ctx, rank);
  bool matches = updates.shape.size() == indices.size();
  for (size_t d = 0; matches && d < indices.size(); ++d) {
    matches = dims_match(indices[d], updates.shape[d]);
  }
  if (!matches) ctx.fail("updates and indices must have one shape");
  return {InferredOutput{data.dtype, data.shape, {}}};
}

std::vector<InferredOutput> infer_one_hot(const InferContext& ctx) {
  const ValueInfo& indices = ctx.input(0);
  const ValueInfo& depth = ctx.input(1);
  const ValueInfo& values = ctx.input(2);
  if (!is_floating(indices.dtype) && !is_integer(indices.dtype))
    ctx.fail("indices must be numeric");
  if (!is_floating(depth.dtype) && !is_integer(depth.dtype)) ctx.fail("depth must be numeric");
  if (depth.shape.size() > 1 || (depth.shape.size() == 1 && depth.shape[0] != 1)) {
    ctx.fail("depth must be a scalar");
  }
  if (values.shape.size() != 1 || (values.shape[0] >= 0 && values.shape[0] != 2)) {
    ctx.fail("values must be a 1-D tensor of [off_value, on_value]");
  }
  const auto rank = static_cast<int64_t>(indices.shape.size());
  const int64_t axis_value = ctx.node().attr_int("axis", -1);
  if (axis_value < -rank - 1 || axis_value > rank) ctx.fail("axis is out of range");
  const int64_t axis = axis_value < 0 ? axis_value + rank + 1 : axis_value;
  int64_t classes = kDynamicDim;
  if (const Tensor* known = ctx.input_value(1)) {
    const double value = known->to_doubles()[0];
    if (!(value >= 1 && value <= static_cast<double>(kMaxElements))) {
      ctx.fail("depth must be positive");
    }
    classes = static_cast<int64_t>(value);
  }
  Shape out = indices.shape;
  out.insert(out.begin() + axis, classes);
  if (is_static(out)) checked_numel(ctx, out);
  return {InferredOutput{values.dtype, out, {}}};
}

// EmbeddingBag(table, indices, starts, ends), attributes bags and mode ("sum" or "mean"):
// out[b] = the rows table[indices[j]] for j in Slice(starts[b], ends[b]) of indices, summed or
// averaged; an empty bag sums to zero (its mean is NaN, as ReduceMean's over nothing).
std::vector<InferredOutput> infer_embedding_bag(const InferContext& ctx) {
  const ValueInfo& table = ctx.input(0);
  if (table.dtype != DType::kFloat32 || table.shape.size() < 2) {
    ctx.fail("table must be a float32 tensor of rank >= 2");
  }
  for (size_t i = 1; i < 4; ++i) {
    require_indices(ctx, i);
    if (ctx.input(i).shape.size() != 1) ctx.fail("indices, starts and ends must be 1-D");
  }
  const std::string mode = ctx.node().attr_string("mode", "");
  if (mode != "sum" && mode != "mean") ctx.fail("mode must be sum or mean, not '" + mode + "'");
  const int64_t bags = ctx.node().attr_int("bags", -1);
  if (bags < 0 || bags > kMaxElements) ctx.fail("bags must be a count");
  Shape out = table.shape;
  out[0] = bags;
  if (is_static(out)) checked_numel(ctx, out);
  return {InferredOutput{table.dtype, out, {}}};
}

// Every index read once, every looked-up row read once, the output written once.
OpCost embedding_bag_cost(const Node&, std::span<const TensorType> inputs,
                          std::span<const TensorType> outputs) {
  OpCost cost;
  const Shape& table = inputs[0].shape;
  double row = static_cast<double>(dtype_size(inputs[0].dtype));
  for (size_t d = 1; d < table.size(); ++d)
    row *= static_cast<double>(std::max<int64_t>(table[d], 0));
  const double lookups = static_cast<double>(std::max<int64_t>(inputs[1].shape.at(0), 0));
  for (size_t i = 1; i < inputs.size(); ++i) cost.bytes += type_bytes(inputs[i]);
  cost.bytes += lookups * row;
  cost.flops = lookups * row / static_cast<double>(dtype_size(inputs[0].dtype));
  for (const TensorType& t : outputs) cost.bytes += type_bytes(t);
  return cost;
}

}  // namespace

void register_index_ops(OpRegistry& registry) {
  registry.add(make_schema("Gather", 2, 2, infer_gather, gather_cost));
  registry.add(make_schema("GatherElements", 2, 2, infer_gather_elements, gather_cost));
  registry.add(make_schema("GatherND", 2, 2, infer_gather_nd, gather_cost));
  registry.add(make_schema("ScatterND", 3, 3, infer_scatter_nd, copy_cost));
  registry.add(make_schema("ScatterElements", 3, 3, infer_scatter_elements, copy_cost));
  registry.add(make_schema("OneHot", 3, 3, infer_one_hot, copy_cost));
  OpSchema embedding_bag =
      make_schema("EmbeddingBag", 4, 4, infer_embedding_bag, embedding_bag_cost);
  embedding_bag.internal = true;
  registry.add(std::move(embedding_bag));
}

}  // namespace tandem::tensor_ops
