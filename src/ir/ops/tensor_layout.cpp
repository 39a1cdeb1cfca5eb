#include "ir/ops/tensor_layout.h"

#include <algorithm>
#include <cstring>

namespace tandem {

SliceRange slice_range(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim == 0) return {0, step, 0};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  SliceRange range;
  range.step = step;
  if (step > 0) {
    range.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    range.count = end > range.start ? (end - range.start - 1) / step + 1 : 0;
  } else {
    range.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // Unsigned so that a step of INT64_MIN negates without overflow.
    const uint64_t stride = uint64_t{0} - static_cast<uint64_t>(step);
    range.count =
        range.start > end ? static_cast<int64_t>((range.start - end - 1) / stride + 1) : 0;
  }
  return range;
}

StridedLayout transpose_layout(const Shape& input, std::span<const int64_t> perm) {
  const std::vector<int64_t> strides = contiguous_strides(input);
  StridedLayout layout;
  for (int64_t axis : perm) {
    layout.shape.push_back(input[axis]);
    layout.strides.push_back(strides[axis]);
  }
  return layout;
}

StridedLayout slice_layout(const Shape& input, std::span<const SliceRange> ranges) {
  const std::vector<int64_t> strides = contiguous_strides(input);
  StridedLayout layout;
  for (size_t d = 0; d < input.size(); ++d) {
    layout.shape.push_back(ranges[d].count);
    // One element or none: no stride (a huge step times the stride would overflow).
    layout.strides.push_back(ranges[d].count > 1 ? strides[d] * ranges[d].step : 0);
    if (ranges[d].count > 0) layout.offset += strides[d] * ranges[d].start;
  }
  return layout;
}

StridedLayout expand_layout(const Shape& input, const Shape& output) {
  const std::vector<int64_t> strides = contiguous_strides(input);
  const size_t lead = output.size() - input.size();
  StridedLayout layout{output, std::vector<int64_t>(output.size(), 0), 0};
  for (size_t d = 0; d < input.size(); ++d) {
    if (input[d] != 1) layout.strides[lead + d] = strides[d];
  }
  return layout;
}

StridedLayout tile_layout(const Shape& input, std::span<const int64_t> repeats) {
  const std::vector<int64_t> strides = contiguous_strides(input);
  StridedLayout layout;
  for (size_t d = 0; d < input.size(); ++d) {
    layout.shape.insert(layout.shape.end(), {repeats[d], input[d]});
    layout.strides.insert(layout.strides.end(), {0, strides[d]});
  }
  return layout;
}

StridedLayout depth_to_space_layout(const Shape& input, int64_t block, bool column_row_depth) {
  const int64_t n = input[0], c = input[1], h = input[2], w = input[3];
  const int64_t depth = c / (block * block);
  if (column_row_depth) {
    const int64_t perm[] = {0, 1, 4, 2, 5, 3};
    return transpose_layout({n, depth, block, block, h, w}, perm);
  }
  const int64_t perm[] = {0, 3, 4, 1, 5, 2};
  return transpose_layout({n, block, block, depth, h, w}, perm);
}

StridedLayout space_to_depth_layout(const Shape& input, int64_t block) {
  const int64_t n = input[0], c = input[1], h = input[2], w = input[3];
  const int64_t perm[] = {0, 3, 5, 1, 2, 4};
  return transpose_layout({n, c, h / block, block, w / block, block}, perm);
}

std::vector<int64_t> pads_per_axis(size_t rank, std::span<const int64_t> pads,
                                   std::span<const int64_t> axes) {
  std::vector<int64_t> result(2 * rank, 0);
  const size_t count = axes.empty() ? rank : axes.size();
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (axis < 0) axis += static_cast<int64_t>(rank);
    result[axis] = pads[i];
    result[axis + rank] = pads[i + count];
  }
  return result;
}

Tensor gather_strided(const Tensor& src, const StridedLayout& layout) {
  Tensor out = Tensor::allocate(src.dtype(), layout.shape);
  const size_t elem = dtype_size(src.dtype());
  const auto* from = static_cast<const char*>(src.raw());
  auto* to = static_cast<char*>(out.raw());
  const size_t rank = layout.shape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t source = layout.offset;
    for (size_t d = 0; d < rank; ++d) source += index[d] * layout.strides[d];
    std::memcpy(to + i * elem, from + source * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < layout.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace tandem
