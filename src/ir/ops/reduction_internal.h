#pragma once
#include <string_view>

#include "ir/op_schema.h"

// Helpers shared by the files of the reduction family (src/ir/ops/reduction*.cpp).
namespace tandem::reduction {

// Softmax, LayerNormalization, BatchNormalization, CumSum... (reduction_normalization.cpp).
void register_normalization_ops(OpRegistry& registry);

// `axis` resolved against `rank`; fails naming the node when it is out of range.
int64_t checked_axis(const InferContext& ctx, int64_t axis, int64_t rank, std::string_view what);

// Fails unless input `index` has a floating-point element type.
void require_floating(const InferContext& ctx, size_t index, std::string_view what);

// `flops_per_element` operations per element of input 0; bytes as the default cost.
CostFn per_input_element_cost(double flops_per_element);

}  // namespace tandem::reduction
