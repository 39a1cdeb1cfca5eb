#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

// A tensor shape. A dimension of kDynamicDim is known only at run time (data-dependent).
using Shape = std::vector<int64_t>;
inline constexpr int64_t kDynamicDim = -1;

// Largest element count a tensor may have; bounds every allocation sized from a model file.
inline constexpr int64_t kMaxElements = int64_t{1} << 38;

bool is_static(const Shape& shape);
// Element count of a static shape; throws InputError when it exceeds kMaxElements.
int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "2x3x224x224", "?" for dynamic dims, "scalar"

// Resolves a possibly negative axis against a rank; throws InputError when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

// Numpy-style broadcast of two shapes; throws InputError when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Row-major strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace tandem
