#pragma once
#include <random>

#include "ir/tensor.h"

namespace tandem {

// Test data for an input nobody supplied: floats uniform in [-1, 1), integers uniform in
// [0, 4) (small enough to be valid indices for most embeddings), booleans fair coin flips.
Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng);

}  // namespace tandem
