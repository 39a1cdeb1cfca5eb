#include "ir/shape.h"

#include <algorithm>

#include "ir/error.h"

namespace tandem {

bool is_static(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
}

int64_t numel(const Shape& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw InputError("shape " + shape_str(shape) + " is not static");
    if (d != 0 && count > kMaxElements / d) {
      throw InputError("shape " + shape_str(shape) + " has more than 2^38 elements");
    }
    count *= d;
  }
  return count;
}

std::string shape_str(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += 'x';
    text += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return text;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    throw InputError("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (da == kDynamicDim || db == kDynamicDim) {
      // A dynamic dim against a known one other than 1 must equal it to be valid.
      out[i] = da == kDynamicDim ? db : da;
    } else {
      throw InputError("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast");
    }
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

}  // namespace tandem
