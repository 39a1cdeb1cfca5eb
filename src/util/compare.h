#pragma once
#include <string>

#include "ir/tensor.h"

namespace tandem {

// The result of checking an output against a reference.
struct Comparison {
  bool matches = true;
  std::string problem;       // dtype or shape mismatch, when there is one
  int64_t worst_index = -1;  // flat index of the element furthest outside its tolerance
  double actual = 0, expected = 0;
};

// Floats: |a - e| <= atol + rtol * |e| with atol = atol_scale * max|e| (the foundation's
// tolerances: rtol 1e-3, atol 1e-4 x the largest reference value); NaN matches NaN.
// Integers and booleans: exact.
Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rtol = 1e-3,
                           double atol_scale = 1e-4);

}  // namespace tandem
