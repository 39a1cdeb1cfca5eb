#include "util/compare.h"

#include <cmath>

namespace tandem {

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rtol,
                           double atol_scale) {
  Comparison result;
  if (actual.dtype() != expected.dtype()) {
    result.matches = false;
    result.problem = "dtype " + std::string(dtype_name(actual.dtype())) + ", expected " +
                     std::string(dtype_name(expected.dtype()));
    return result;
  }
  if (actual.shape() != expected.shape()) {
    result.matches = false;
    result.problem =
        "shape " + shape_str(actual.shape()) + ", expected " + shape_str(expected.shape());
    return result;
  }
  const std::vector<double> a = actual.to_doubles();
  const std::vector<double> e = expected.to_doubles();
  const bool exact = !is_floating(expected.dtype());
  double largest = 0;
  for (double v : e) {
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  }
  const double atol = exact ? 0 : atol_scale * largest;
  double worst_excess = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;  // also equal infinities
    const double excess = std::abs(a[i] - e[i]) - (exact ? 0 : atol + rtol * std::abs(e[i]));
    if (excess > 0 || std::isnan(excess)) {
      if (result.matches || excess > worst_excess || std::isnan(excess)) {
        worst_excess = std::isnan(excess) ? INFINITY : excess;
        result.worst_index = static_cast<int64_t>(i);
        result.actual = a[i];
        result.expected = e[i];
      }
      result.matches = false;
    }
  }
  return result;
}

}  // namespace tandem
