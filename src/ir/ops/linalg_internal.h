#pragma once
#include "ir/op_schema.h"

namespace tandem {

// Schemas of the linalg family, by file.
void add_conv_schemas(OpRegistry& registry);  // Conv, ConvTranspose
void add_pool_schemas(OpRegistry& registry);  // MaxPool, AveragePool, Global*Pool

// Checks the optional `activation` attributes that graph fusion sets on Conv, Gemm and MatMul.
void check_fused_activation(const InferContext& ctx, DType dtype);

// Product of the known dims from `first_axis` on (dynamic ones count as 1), for cost estimates.
double known_product(const Shape& shape, size_t first_axis = 0);

}  // namespace tandem
