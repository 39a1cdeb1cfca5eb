#pragma once
// Private to the tensor op family: per-file registration and helpers shared by its schemas.
#include <optional>
#include <span>
#include <vector>

#include "ir/op_schema.h"

namespace tandem::tensor_ops {

void register_view_ops(OpRegistry& registry);      // Reshape, Flatten, Squeeze, Unsqueeze, Identity
void register_creation_ops(OpRegistry& registry);  // Shape, Size, Constant*, Range, EyeLike
void register_layout_ops(OpRegistry& registry);  // Transpose, Concat, Split, Slice, Expand, Tile...
void register_pad_ops(OpRegistry& registry);     // Pad, Trilu
void register_resize_ops(OpRegistry& registry);  // Resize
void register_index_ops(OpRegistry& registry);   // Gather*, Scatter*, OneHot
void register_data_dependent_ops(OpRegistry& registry);  // NonZero, NMS, Unique, TopK

OpSchema make_schema(std::string name, int min_inputs, int max_inputs, InferFn infer,
                     CostFn cost = {});

// Fails unless input i is an integer tensor (int64 only when `int64_only`) of rank <= 1.
void require_int_list(const InferContext& ctx, size_t i, const char* what, bool int64_only = true);
// Contents of an integer input when known (constants and folded shape arithmetic).
std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i);
// Element count of a static shape; fails naming the node when it exceeds kMaxElements.
int64_t checked_numel(const InferContext& ctx, const Shape& shape);
// Whether an output of this shape may carry a folded value.
bool can_fold(const Shape& shape);
Tensor int64_tensor(Shape shape, const std::vector<int64_t>& values);

// Costs: views move nothing; copies move bytes without arithmetic; gathers read only the
// elements they copy (an embedding lookup reads a few rows, not the whole table).
OpCost view_cost(const Node&, std::span<const TensorType>, std::span<const TensorType>);
OpCost copy_cost(const Node& node, std::span<const TensorType> inputs,
                 std::span<const TensorType> outputs);
OpCost gather_cost(const Node& node, std::span<const TensorType> inputs,
                   std::span<const TensorType> outputs);

}  // namespace tandem::tensor_ops
