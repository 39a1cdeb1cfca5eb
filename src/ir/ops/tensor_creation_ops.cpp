// Ops that make tensors from shapes, attributes or scalars: Shape, Size, Constant,
// ConstantOfShape, Range, EyeLike.
#include <cmath>
#include <cstring>

#include "ir/ops/tensor_ops.h"

namespace tandem::tensor_ops {
namespace {

std::vector<InferredOutput> infer_shape(const InferContext& ctx) {
  const Shape& input = ctx.input(0).shape;
  const auto rank = static_cast<int64_t>(input.size());
  auto clamp_to_rank = [rank](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = 0;
  int64_t end = rank;
  if (ctx.opset() >= 15) {
    start = clamp_to_rank(ctx.node().attr_int("start", 0));
    end = clamp_to_rank(ctx.node().attr_int("end", rank));
  }
  const Shape dims(input.begin() + start, input.begin() + std::max(start, end));
  InferredOutput out{DType::kInt64, {static_cast<int64_t>(dims.size())}, {}};
  // Known from the type alone: the input's contents never matter.
  if (is_static(dims)) out.value = int64_tensor(out.shape, dims);
  return {out};
}

std::vector<InferredOutput> infer_size(const InferContext& ctx) {
  const Shape& input = ctx.input(0).shape;
  InferredOutput out{DType::kInt64, {}, {}};
  if (is_static(input)) out.value = int64_tensor({}, {checked_numel(ctx, input)});
  return {out};
}

// Checks that a Constant node carries exactly one value attribute Tandem supports, and returns
// the tensor it holds.
Tensor constant_value(const InferContext& ctx) {
  const Node& node = ctx.node();
  for (const char* unsupported : {"sparse_value", "value_string", "value_strings"}) {
    if (node.has(unsupported))
      ctx.fail(std::string("attribute '") + unsupported + "' is not supported");
  }
  int count = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    count += node.has(name) ? 1 : 0;
  }
  if (count != 1) ctx.fail("exactly one value attribute is required");
  return constant_node_value(node);
}

std::vector<InferredOutput> infer_constant(const InferContext& ctx) {
  const Tensor value = constant_value(ctx);
  if (!value.defined()) ctx.fail("attribute 'value' holds no tensor");
  // Already materialised in the node, so it is passed on whatever its size.
  return {InferredOutput{value.dtype(), value.shape(), value}};
}

// Fill value of ConstantOfShape: a one-element tensor, float32 zero by default.
Tensor fill_value(const InferContext& ctx) {
  const Tensor* value = ctx.node().attr_tensor("value");
  if (!value) return Tensor::zeros(DType::kFloat32, {1});
  if (value->numel() != 1) ctx.fail("attribute 'value' must hold exactly one element");
  return *value;
}

std::vector<InferredOutput> infer_constant_of_shape(const InferContext& ctx) {
  require_int_list(ctx, 0, "shape");
  const Tensor fill = fill_value(ctx);
  const Shape& shape_of_shape = ctx.input(0).shape;
  InferredOutput out{fill.dtype(), {}, {}};
  const auto dims = known_ints(ctx, 0);
  if (!dims) {
    if (shape_of_shape.empty() || shape_of_shape[0] < 0) {
      ctx.fail("the length of the shape input must be static");
    }
    out.shape.assign(static_cast<size_t>(shape_of_shape[0]), kDynamicDim);
    return {out};
  }
  for (int64_t d : *dims) {
    if (d < 0) ctx.fail("shape has a negative dim " + std::to_string(d));
  }
  out.shape = *dims;
  checked_numel(ctx, out.shape);
  if (can_fold(out.shape)) {
    out.value = Tensor::allocate(fill.dtype(), out.shape);
    const size_t elem = dtype_size(fill.dtype());
    for (int64_t i = 0; i < out.value.numel(); ++i) {
      std::memcpy(static_cast<char*>(out.value.raw()) + i * elem, fill.raw(), elem);
    }
  }
  return {out};
}

template <typename T>
int64_t range_length(const InferContext& ctx, T start, T limit, T delta) {
  if (delta == T(0)) ctx.fail("delta must not be zero");
  const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                 static_cast<double>(delta));
  if (!(count <= static_cast<double>(kMaxElements))) ctx.fail("the range has too many elements");
  return std::max<int64_t>(static_cast<int64_t>(count), 0);
}

// Range by repeated addition, as ONNX Runtime computes it (not start + i * delta).
template <typename T>
Tensor range_values(DType dtype, T start, T delta, int64_t count) {
  Tensor out = Tensor::allocate(dtype, {count});
  T value = start;
  for (int64_t i = 0; i < count; ++i, value += delta) out.data<T>()[i] = value;
  return out;
}

template <typename T>
InferredOutput infer_range_as(const InferContext& ctx, DType dtype) {
  InferredOutput out{dtype, {kDynamicDim}, {}};
  const Tensor* start = ctx.input_value(0);
  const Tensor* limit = ctx.input_value(1);
  const Tensor* delta = ctx.input_value(2);
  if (!start || !limit || !delta) return out;
  const T first = start->data<T>()[0];
  const T step = delta->data<T>()[0];
  out.shape[0] = range_length<T>(ctx, first, limit->data<T>()[0], step);
  if (can_fold(out.shape)) out.value = range_values<T>(dtype, first, step, out.shape[0]);
  return out;
}

std::vector<InferredOutput> infer_range(const InferContext& ctx) {
  const DType dtype = ctx.input(0).dtype;
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i).dtype != dtype) ctx.fail("start, limit and delta must have one dtype");
    const Shape& shape = ctx.input(i).shape;
    if (shape.size() > 1 || (shape.size() == 1 && shape[0] != 1)) {
      ctx.fail("start, limit and delta must be scalars");
    }
  }
  switch (dtype) {
    case DType::kFloat32: return {infer_range_as<float>(ctx, dtype)};
    case DType::kFloat64: return {infer_range_as<double>(ctx, dtype)};
    case DType::kInt16: return {infer_range_as<int16_t>(ctx, dtype)};
    case DType::kInt32: return {infer_range_as<int32_t>(ctx, dtype)};
    case DType::kInt64: return {infer_range_as<int64_t>(ctx, dtype)};
    default: ctx.fail("unsupported dtype " + std::string(dtype_name(dtype)));
  }
}

std::vector<InferredOutput> infer_eye_like(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  if (input.shape.size() != 2) ctx.fail("input must be 2-D");
  DType dtype = input.dtype;
  if (ctx.node().has("dtype")) {
    const auto mapped = dtype_from_onnx_code(ctx.node().attr_int("dtype", 0));
    if (!mapped) ctx.fail("unsupported dtype attribute");
    dtype = *mapped;
  }
  return {InferredOutput{dtype, input.shape, {}}};
}

}  // namespace

void register_creation_ops(OpRegistry& registry) {
  // Shape and Size read no element of their input.
  registry.add(make_schema("Shape", 1, 1, infer_shape, view_cost));
  registry.add(make_schema("Size", 1, 1, infer_size, view_cost));
  registry.add(make_schema("Constant", 0, 0, infer_constant, copy_cost));
  registry.add(make_schema("ConstantOfShape", 1, 1, infer_constant_of_shape, copy_cost));
  registry.add(make_schema("Range", 3, 3, infer_range));
  registry.add(make_schema("EyeLike", 1, 1, infer_eye_like, copy_cost));
}

}  // namespace tandem::tensor_ops

namespace tandem {

Tensor constant_node_value(const Node& node) {
  if (const Tensor* value = node.attr_tensor("value")) return *value;
  if (node.has("value_float")) {
    return Tensor::from_vector(DType::kFloat32, {},
                               std::vector<float>{node.attr_float("value_float", 0)});
  }
  if (node.has("value_floats")) {
    const std::vector<float> values = node.attr_floats("value_floats");
    return Tensor::from_vector(DType::kFloat32, {static_cast<int64_t>(values.size())}, values);
  }
  if (node.has("value_int")) {
    return Tensor::from_vector(DType::kInt64, {},
                               std::vector<int64_t>{node.attr_int("value_int", 0)});
  }
  const std::vector<int64_t> values = node.attr_ints("value_ints");
  return Tensor::from_vector(DType::kInt64, {static_cast<int64_t>(values.size())}, values);
}

}  // namespace tandem
