#include "ir/error.h"
#include "ir/ops/families.h"
#include "ir/ops/tensor_ops.h"

namespace tandem {
namespace tensor_ops {

OpSchema make_schema(std::string name, int min_inputs, int max_inputs, InferFn infer, CostFn cost) {
  OpSchema schema;
  schema.name = std::move(name);
  schema.min_inputs = min_inputs;
  schema.max_inputs = max_inputs;
  schema.infer = std::move(infer);
  schema.cost = std::move(cost);
  return schema;
}

void require_int_list(const InferContext& ctx, size_t i, const char* what, bool int64_only) {
  const ValueInfo& info = ctx.input(i);
  const bool integer = info.dtype == DType::kInt64 || (!int64_only && info.dtype == DType::kInt32);
  if (!integer) {
    ctx.fail(std::string(what) + " must be " + (int64_only ? "int64" : "int32 or int64") +
             ", got " + std::string(dtype_name(info.dtype)));
  }
  if (info.shape.size() > 1) ctx.fail(std::string(what) + " must be a 1-D tensor");
}

std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i) {
  const Tensor* value = ctx.input_value(i);
  if (!value) return std::nullopt;
  return value->to_int64s();
}

int64_t checked_numel(const InferContext& ctx, const Shape& shape) {
  try {
    return numel(shape);
  } catch (const InputError& error) {
    ctx.fail(error.what());
  }
}

bool can_fold(const Shape& shape) {
  if (!is_static(shape)) return false;
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d > kMaxFoldedElements) return false;
    count *= d;
    if (count > kMaxFoldedElements) return false;
  }
  return true;
}

Tensor int64_tensor(Shape shape, const std::vector<int64_t>& values) {
  return Tensor::from_vector(DType::kInt64, std::move(shape), values);
}

OpCost view_cost(const Node&, std::span<const TensorType>, std::span<const TensorType>) {
  return {};
}

OpCost copy_cost(const Node& node, std::span<const TensorType> inputs,
                 std::span<const TensorType> outputs) {
  return {0, default_cost(node, inputs, outputs).bytes};
}

OpCost gather_cost(const Node&, std::span<const TensorType> inputs,
                   std::span<const TensorType> outputs) {
  OpCost cost;
  for (size_t i = 1; i < inputs.size(); ++i) cost.bytes += type_bytes(inputs[i]);
  for (const TensorType& t : outputs) cost.bytes += 2 * type_bytes(t);
  return cost;
}

}  // namespace tensor_ops

void register_tensor_ops(OpRegistry& registry) {
  tensor_ops::register_view_ops(registry);
  tensor_ops::register_creation_ops(registry);
  tensor_ops::register_layout_ops(registry);
  tensor_ops::register_pad_ops(registry);
  tensor_ops::register_resize_ops(registry);
  tensor_ops::register_index_ops(registry);
  tensor_ops::register_data_dependent_ops(registry);
}

}  // namespace tandem
