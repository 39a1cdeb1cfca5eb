#include "util/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tandem {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::vector<int64_t> position_of(int64_t flat, const Shape& shape) {
  std::vector<int64_t> position(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    position[axis] = shape[axis] ? flat % shape[axis] : 0;
    flat = shape[axis] ? flat / shape[axis] : 0;
  }
  return position;
}

}  // namespace

Comparison compare_tensors(const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance) {
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
  result.rtol = exact ? 0 : tolerance.rtol;
  result.atol = exact ? 0 : tolerance.atol.value_or(tolerance.atol_scale * largest);
  result.elements = static_cast<int64_t>(a.size());
  double worst_excess = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;  // also equal infinities
    const double excess = std::abs(a[i] - e[i]) - (result.atol + result.rtol * std::abs(e[i]));
    if (excess > 0 || std::isnan(excess)) {
      if (result.matches || excess > worst_excess || std::isnan(excess)) {
        worst_excess = std::isnan(excess) ? INFINITY : excess;
        result.worst_index = static_cast<int64_t>(i);
        result.actual = a[i];
        result.expected = e[i];
      }
      result.matches = false;
      ++result.mismatched;
    }
  }
  if (result.worst_index >= 0)
    result.worst_position = position_of(result.worst_index, expected.shape());
  return result;
}

std::string describe_mismatch(const std::string& name, const Comparison& c) {
  if (!c.problem.empty()) return name + ": " + c.problem;
  std::string position;
  for (int64_t index : c.worst_position)
    position += (position.empty() ? "" : ", ") + std::to_string(index);
  const double error = std::abs(c.actual - c.expected);
  std::string relative;
  if (c.expected != 0 && std::isfinite(error)) {
    char text[48];
    std::snprintf(text, sizeof text, ", %.3g%% of the expected value",
                  100 * error / std::abs(c.expected));
    relative = text;
  }
  return name + ": " + std::to_string(c.mismatched) + " of " + std::to_string(c.elements) +
         " elements differ; worst at [" + position + "]: got " + number(c.actual) + ", expected " +
         number(c.expected) + " (error " + number(error) + relative + "; tolerance atol " +
         number(c.atol) + " + rtol " + number(c.rtol) + " x |expected|)";
}

namespace {

template <typename T>
Deviation deviation_of(const T* a, const T* e, int64_t count, int64_t classes) {
  Deviation d;
  double error_squares = 0, reference_squares = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double difference = static_cast<double>(a[i]) - static_cast<double>(e[i]);
    d.max_abs_error = std::max(d.max_abs_error, std::abs(difference));
    error_squares += difference * difference;
    reference_squares += static_cast<double>(e[i]) * static_cast<double>(e[i]);
  }
  d.relative_error = reference_squares > 0 ? std::sqrt(error_squares / reference_squares)
                     : error_squares > 0   ? std::numeric_limits<double>::infinity()
                                           : 0.0;
  if (classes < 2) return d;
  for (int64_t row = 0; row * classes < count; ++row) {
    const T* ar = a + row * classes;
    const T* er = e + row * classes;
    ++d.rows;
    if (std::max_element(ar, ar + classes) - ar == std::max_element(er, er + classes) - er)
      ++d.same_argmax;
  }
  return d;
}

}  // namespace

std::optional<Deviation> deviation(const Tensor& actual, const Tensor& reference) {
  if (actual.dtype() != reference.dtype() || actual.shape() != reference.shape())
    return std::nullopt;
  const int64_t classes = actual.rank() > 0 ? actual.shape().back() : 1;
  switch (actual.dtype()) {
    case DType::kFloat32:
      return deviation_of(actual.data<float>(), reference.data<float>(), actual.numel(), classes);
    case DType::kFloat64:
      return deviation_of(actual.data<double>(), reference.data<double>(), actual.numel(), classes);
    case DType::kInt64:
      return deviation_of(actual.data<int64_t>(), reference.data<int64_t>(), actual.numel(), 1);
    case DType::kInt32:
      return deviation_of(actual.data<int32_t>(), reference.data<int32_t>(), actual.numel(), 1);
    default: return std::nullopt;
  }
}

}  // namespace tandem
