#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tandem {

// How far a float output may stray from its reference: |a - e| <= atol + rtol * |e|. Without an
// absolute atol, atol = atol_scale x the largest finite |e| (the foundation's tolerances: rtol
// 1e-3, 1e-4 of the reference's range), which suits outputs of any magnitude.
struct Tolerance {
  double rtol = 1e-3;
  double atol_scale = 1e-4;
  std::optional<double> atol;
};

// The result of checking an output against a reference.
struct Comparison {
  bool matches = true;
  std::string problem;                  // dtype or shape mismatch, when there is one
  int64_t mismatched = 0;               // elements outside the tolerance
  int64_t elements = 0;                 // elements compared
  int64_t worst_index = -1;             // flat index of the element furthest outside its tolerance
  std::vector<int64_t> worst_position;  // the same element's index on every axis
  double actual = 0, expected = 0;
  double atol = 0, rtol = 0;  // the tolerance applied (atol resolved to an absolute figure)
};

// Floats: within `tolerance`; NaN matches NaN, equal infinities match. Integers and booleans:
// exact.
Comparison compare_tensors(const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance = {});

// How far an output computed in a lower precision strays from the float32 one, over every
// element: the largest |a - e|, the error's L2 norm over the reference's, and, reading the last
// axis as classes, in how many rows both pick the same largest element (a classifier's top-1).
struct Deviation {
  double max_abs_error = 0;
  double relative_error = 0;  // ||a - e|| / ||e||; 0 where both are all zeros
  int64_t rows = 0;           // rows of the last axis, when it has at least two classes
  int64_t same_argmax = 0;
};
// Outputs of the same shape and dtype: floats, and integers (read as numbers; no top-1 for
// them); nullopt otherwise.
std::optional<Deviation> deviation(const Tensor& actual, const Tensor& reference);

// "logits: 3 of 40 elements differ; worst at [1, 7]: got 0.5, expected 0.25 (error 0.25, 100%
// of the expected value; tolerance atol 2.5e-05 + rtol 0.001)" or the dtype/shape problem.
std::string describe_mismatch(const std::string& name, const Comparison& comparison);

}  // namespace tandem
