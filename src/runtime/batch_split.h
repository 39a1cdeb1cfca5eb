#pragma once
#include <span>
#include <vector>

#include "ir/tensor.h"

namespace tandem {

// Splits a tensor along its leading (batch) dimension into pieces of the given sizes.
std::vector<Tensor> split_batch(const Tensor& tensor, std::span<const int64_t> sizes);
// Concatenates pieces along their leading dimension.
Tensor concat_batch(std::span<const Tensor> pieces);

}  // namespace tandem
