// Ops whose outputs depend on input contents: NonZero, NonMaxSuppression, Unique (their kernels
// allocate the outputs) and TopK (its output is sized by the value of k).
#include <cmath>

#include "ir/ops/tensor_ops.h"

namespace tandem::tensor_ops {
namespace {

OpSchema data_dependent(std::string name, int min_inputs, int max_inputs, InferFn infer) {
  OpSchema schema = make_schema(std::move(name), min_inputs, max_inputs, std::move(infer));
  schema.data_dependent_shape = true;
  return schema;
}

std::vector<InferredOutput> infer_non_zero(const InferContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.input(0).shape.size());
  return {InferredOutput{DType::kInt64, {rank, kDynamicDim}, {}}};
}

void require_scalar(const InferContext& ctx, size_t i, DType dtype, const char* what) {
  if (!ctx.has_input(i)) return;
  const ValueInfo& input = ctx.input(i);
  if (input.dtype != dtype)
    ctx.fail(std::string(what) + " must be " + std::string(dtype_name(dtype)));
  if (input.shape.size() > 1 || (input.shape.size() == 1 && input.shape[0] != 1)) {
    ctx.fail(std::string(what) + " must be a scalar");
  }
}

std::vector<InferredOutput> infer_non_max_suppression(const InferContext& ctx) {
  const ValueInfo& boxes = ctx.input(0);
  const ValueInfo& scores = ctx.input(1);
  if (boxes.dtype != DType::kFloat32 || scores.dtype != DType::kFloat32) {
    ctx.fail("boxes and scores must be float32");
  }
  if (boxes.shape.size() != 3 || scores.shape.size() != 3) ctx.fail("boxes and scores must be 3-D");
  auto differ = [](int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; };
  if (differ(boxes.shape[2], 4)) ctx.fail("boxes must be [batches, boxes, 4]");
  if (differ(boxes.shape[0], scores.shape[0])) ctx.fail("boxes and scores differ in batches");
  if (differ(boxes.shape[1], scores.shape[2])) ctx.fail("boxes and scores differ in box count");
  const int64_t center_point_box = ctx.node().attr_int("center_point_box", 0);
  if (center_point_box != 0 && center_point_box != 1) ctx.fail("center_point_box must be 0 or 1");
  require_scalar(ctx, 2, DType::kInt64, "max_output_boxes_per_class");
  require_scalar(ctx, 3, DType::kFloat32, "iou_threshold");
  require_scalar(ctx, 4, DType::kFloat32, "score_threshold");
  return {InferredOutput{DType::kInt64, {kDynamicDim, 3}, {}}};
}

std::vector<InferredOutput> infer_unique(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  if (ctx.node().outputs.size() > 4) ctx.fail("Unique has at most 4 outputs");
  Shape unique_shape{kDynamicDim};
  int64_t inverse_count = kDynamicDim;
  if (ctx.node().has("axis")) {
    const auto rank = static_cast<int64_t>(input.shape.size());
    int64_t axis = ctx.node().attr_int("axis", 0);
    if (axis < -rank || axis >= rank) ctx.fail("axis is out of range");
    if (axis < 0) axis += rank;
    unique_shape = input.shape;
    unique_shape[axis] = kDynamicDim;
    inverse_count = input.shape[axis];
  } else if (is_static(input.shape)) {
    inverse_count = checked_numel(ctx, input.shape);
  }
  std::vector<InferredOutput> outputs{{input.dtype, unique_shape, {}},
                                      {DType::kInt64, {kDynamicDim}, {}},
                                      {DType::kInt64, {inverse_count}, {}},
                                      {DType::kInt64, {kDynamicDim}, {}}};
  outputs.resize(ctx.node().outputs.size());
  return outputs;
}

std::vector<InferredOutput> infer_top_k(const InferContext& ctx) {
  const ValueInfo& input = ctx.input(0);
  if (!is_floating(input.dtype) && !is_integer(input.dtype)) ctx.fail("input must be numeric");
  require_int_list(ctx, 1, "k");
  if (ctx.input(1).shape.size() != 1 || ctx.input(1).shape[0] > 1) {
    ctx.fail("k must be a 1-D tensor of one element");
  }
  const auto rank = static_cast<int64_t>(input.shape.size());
  const int64_t axis_value = ctx.node().attr_int("axis", -1);
  if (rank == 0 || axis_value < -rank || axis_value >= rank) ctx.fail("axis is out of range");
  const int64_t axis = axis_value < 0 ? axis_value + rank : axis_value;
  Shape shape = input.shape;
  shape[axis] = kDynamicDim;
  if (const auto k = known_ints(ctx, 1)) {
    if (k->size() != 1) ctx.fail("k must hold one element");
    const int64_t dim = input.shape[axis];
    if ((*k)[0] < 0 || (dim >= 0 && (*k)[0] > dim)) {
      ctx.fail("k = " + std::to_string((*k)[0]) + " is out of range for a dim of " +
               std::to_string(dim));
    }
    shape[axis] = (*k)[0];
  }
  return {InferredOutput{input.dtype, shape, {}}, InferredOutput{DType::kInt64, shape, {}}};
}

// Selection by heap: about n * log2(k) comparisons for n inputs.
OpCost top_k_cost(const Node& node, std::span<const TensorType> inputs,
                  std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  const int64_t axis = node.attr_int("axis", -1);
  const Shape& out = outputs[0].shape;
  const int64_t k = out.empty() ? 1 : out[axis < 0 ? axis + out.size() : axis];
  const double elements = type_bytes(inputs[0]) / dtype_size(inputs[0].dtype);
  cost.flops =
      elements * std::max(1.0, std::log2(static_cast<double>(std::max<int64_t>(k, 1)) + 1));
  return cost;
}

// Sorting every class's boxes, then comparing each candidate with the boxes kept so far.
OpCost non_max_suppression_cost(const Node& node, std::span<const TensorType> inputs,
                                std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  const double scores = type_bytes(inputs[1]) / sizeof(float);
  const Shape& shape = inputs[1].shape;
  const double boxes = shape.size() == 3 && shape[2] > 0 ? static_cast<double>(shape[2]) : 1.0;
  cost.flops = scores * (std::log2(boxes + 1) + 10);
  return cost;
}

}  // namespace

void register_data_dependent_ops(OpRegistry& registry) {
  registry.add(data_dependent("NonZero", 1, 1, infer_non_zero));
  OpSchema nms = data_dependent("NonMaxSuppression", 2, 5, infer_non_max_suppression);
  nms.cost = non_max_suppression_cost;
  registry.add(nms);
  registry.add(data_dependent("Unique", 1, 1, infer_unique));
  registry.add(make_schema("TopK", 2, 2, infer_top_k, top_k_cost));
}

}  // namespace tandem::tensor_ops
