// Schemas of the Reduce* ops and ArgMax/ArgMin; the family's register function.
#include <algorithm>
#include <limits>
#include <optional>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/ops/families.h"
#include "ir/ops/reduction_internal.h"

namespace tandem {
namespace reduction {

int64_t checked_axis(const InferContext& ctx, int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

void require_floating(const InferContext& ctx, size_t index, std::string_view what) {
  const DType dtype = ctx.input(index).dtype;
  if (!is_floating(dtype)) {
    ctx.fail(std::string(what) + " must be a floating-point tensor, not " +
             std::string(dtype_name(dtype)));
  }
}

CostFn per_input_element_cost(double flops_per_element) {
  return [flops_per_element](const Node& node, std::span<const TensorType> inputs,
                             std::span<const TensorType> outputs) {
    OpCost cost = default_cost(node, inputs, outputs);
    const TensorType& data = inputs[0];
    cost.flops = flops_per_element * type_bytes(data) / std::max<size_t>(dtype_size(data.dtype), 1);
    return cost;
  };
}

}  // namespace reduction

namespace {

using reduction::checked_axis;

// Which reductions fold on known integer values (shape arithmetic in exported graphs).
enum class Fold { kNone, kSum, kProd, kMax, kMin };

struct ReduceOpInfo {
  const char* name;
  int axes_input_since;  // opset from which `axes` is an input instead of an attribute
  Fold fold;
  bool orders_only;  // Max/Min: any ordered type (bool and 8-bit integers too)
};

constexpr ReduceOpInfo kReduceOps[] = {
    {"ReduceSum", 13, Fold::kSum, false},     {"ReduceMean", 18, Fold::kNone, false},
    {"ReduceMax", 18, Fold::kMax, true},      {"ReduceMin", 18, Fold::kMin, true},
    {"ReduceProd", 18, Fold::kProd, false},   {"ReduceL1", 18, Fold::kNone, false},
    {"ReduceL2", 18, Fold::kNone, false},     {"ReduceSumSquare", 18, Fold::kNone, false},
    {"ReduceLogSum", 18, Fold::kNone, false}, {"ReduceLogSumExp", 18, Fold::kNone, false},
};

bool reduce_accepts(const ReduceOpInfo& op, DType dtype) {
  if (is_floating(dtype) || dtype == DType::kInt32 || dtype == DType::kInt64) return true;
  return op.orders_only &&
         (dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kBool);
}

// The axes as written in the node, or nullopt when they come from an input of unknown value.
std::optional<std::vector<int64_t>> written_axes(const InferContext& ctx, const ReduceOpInfo& op) {
  const bool axes_is_input = ctx.opset() >= op.axes_input_since;
  if (!axes_is_input) {
    if (ctx.has_input(1)) {
      ctx.fail("axes is an attribute, not an input, before opset " +
               std::to_string(op.axes_input_since));
    }
    return ctx.node().attr_ints("axes");
  }
  if (ctx.node().has("axes")) {
    ctx.fail("axes is an input, not an attribute, from opset " +
             std::to_string(op.axes_input_since));
  }
  if (!ctx.has_input(1)) return std::vector<int64_t>{};
  const ValueInfo& axes = ctx.input(1);
  if (axes.dtype != DType::kInt64 && axes.dtype != DType::kInt32) {
    ctx.fail("axes must be int64, not " + std::string(dtype_name(axes.dtype)));
  }
  if (axes.shape.size() > 1) ctx.fail("axes must be a 1-D tensor");
  if (const Tensor* value = ctx.input_value(1)) return value->to_int64s();
  if (is_static(axes.shape) && numel(axes.shape) == 0) return std::vector<int64_t>{};
  return std::nullopt;
}

// Per dimension of the data, whether it is reduced.
std::vector<bool> reduced_dims(const InferContext& ctx, const std::vector<int64_t>& axes,
                               int64_t rank) {
  if (axes.empty()) {
    const bool noop = ctx.node().attr_int("noop_with_empty_axes", 0) != 0;
    return std::vector<bool>(static_cast<size_t>(rank), !noop);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    const auto dim = static_cast<size_t>(checked_axis(ctx, axis, rank, "axis"));
    if (reduced[dim]) ctx.fail("axis " + std::to_string(axis) + " appears twice in axes");
    reduced[dim] = true;
  }
  return reduced;
}

template <typename T>
T fold_identity(Fold fold) {
  switch (fold) {
    case Fold::kProd: return T{1};
    case Fold::kMax: return std::numeric_limits<T>::lowest();
    case Fold::kMin: return std::numeric_limits<T>::max();
    default: return T{0};
  }
}

// The reduction of a small known integer tensor, computed at import.
template <typename T>
Tensor fold_reduce(const Tensor& data, const std::vector<bool>& reduced, Fold fold,
                   const Shape& out_shape) {
  Shape kept_shape = data.shape();
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) kept_shape[d] = 1;
  }
  const std::vector<int64_t> out_strides = contiguous_strides(kept_shape);
  Tensor out = Tensor::allocate(data.dtype(), out_shape);
  T* result = out.data<T>();
  std::fill(result, result + out.numel(), fold_identity<T>(fold));
  const T* values = data.data<T>();
  std::vector<int64_t> coord(reduced.size(), 0);
  for (int64_t i = 0; i < data.numel(); ++i) {
    int64_t target = 0;
    for (size_t d = 0; d < coord.size(); ++d) {
      if (!reduced[d]) target += coord[d] * out_strides[d];
    }
    const T v = values[i];
    T& acc = result[target];
    switch (fold) {
      case Fold::kSum: acc = static_cast<T>(acc + v); break;
      case Fold::kProd: acc = static_cast<T>(acc * v); break;
      case Fold::kMax: acc = std::max(acc, v); break;
      case Fold::kMin: acc = std::min(acc, v); break;
      case Fold::kNone: break;
    }
    for (size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < data.dim(static_cast<int64_t>(d))) break;
      coord[d] = 0;
    }
  }
  return out;
}

std::vector<InferredOutput> infer_reduce(const InferContext& ctx, const ReduceOpInfo& op) {
  const ValueInfo& data = ctx.input(0);
  if (!reduce_accepts(op, data.dtype)) {
    ctx.fail("does not accept " + std::string(dtype_name(data.dtype)) + " data");
  }
  const auto rank = static_cast<int64_t>(data.shape.size());
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  const std::optional<std::vector<int64_t>> axes = written_axes(ctx, op);
  if (!axes) {
    // Unknown axes: with keepdims the rank survives, and only size-1 dims are certain.
    if (!keepdims) ctx.fail("axes must be a constant when keepdims=0");
    Shape shape = data.shape;
    for (int64_t& d : shape) d = d == 1 ? 1 : kDynamicDim;
    return {{data.dtype, shape, {}}};
  }
  const std::vector<bool> reduced = reduced_dims(ctx, *axes, rank);
  Shape shape;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d]) {
      shape.push_back(data.shape[d]);
    } else if (keepdims) {
      shape.push_back(1);
    }
  }
  InferredOutput out{data.dtype, shape, {}};
  const Tensor* value = ctx.input_value(0);
  if (op.fold != Fold::kNone && value && value->numel() <= kMaxFoldedElements) {
    if (data.dtype == DType::kInt64) {
      out.value = fold_reduce<int64_t>(*value, reduced, op.fold, shape);
    } else if (data.dtype == DType::kInt32) {
      out.value = fold_reduce<int32_t>(*value, reduced, op.fold, shape);
    }
  }
  return {out};
}

std::vector<InferredOutput> infer_arg_reduce(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  if (!is_floating(data.dtype) && !is_integer(data.dtype)) {
    ctx.fail("does not accept " + std::string(dtype_name(data.dtype)) + " data");
  }
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) ctx.fail("data must have rank 1 or more");
  const int64_t axis = checked_axis(ctx, ctx.node().attr_int("axis", 0), rank, "axis");
  const int64_t select_last = ctx.node().attr_int("select_last_index", 0);
  if (select_last != 0 && select_last != 1) ctx.fail("select_last_index must be 0 or 1");
  if (data.shape[static_cast<size_t>(axis)] == 0) ctx.fail("cannot pick an index on an empty axis");
  Shape shape = data.shape;
  if (ctx.node().attr_int("keepdims", 1) != 0) {
    shape[static_cast<size_t>(axis)] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  return {{DType::kInt64, shape, {}}};
}

}  // namespace

void register_reduction_ops(OpRegistry& registry) {
  for (const ReduceOpInfo& op : kReduceOps) {
    registry.add({.name = op.name,
                  .min_inputs = 1,
                  .max_inputs = 2,
                  .infer = [&op](const InferContext& ctx) { return infer_reduce(ctx, op); },
                  .cost = reduction::per_input_element_cost(1.0)});
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    registry.add({.name = name,
                  .min_inputs = 1,
                  .max_inputs = 1,
                  .infer = infer_arg_reduce,
                  .cost = reduction::per_input_element_cost(1.0)});
  }
  reduction::register_normalization_ops(registry);
}

}  // namespace tandem
