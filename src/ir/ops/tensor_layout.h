#pragma once
// Element layouts of the ops that only rearrange elements (Transpose, Slice, Expand, Tile,
// DepthToSpace, SpaceToDepth). Shape inference folds with them and CPU kernels copy with them,
// so both read the same rules.
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace tandem {

// out[i_0, ..., i_n] = src[offset + sum(i_d * strides[d])]; strides may be 0 or negative.
struct StridedLayout {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// One sliced axis: the elements start, start + step, ... (count of them).
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// ONNX Slice's clamping of (start, end, step) against a dim of static size; step != 0.
SliceRange slice_range(int64_t start, int64_t end, int64_t step, int64_t dim);

StridedLayout transpose_layout(const Shape& input, std::span<const int64_t> perm);
// `ranges` has one entry per axis of `input`.
StridedLayout slice_layout(const Shape& input, std::span<const SliceRange> ranges);
// `output` is the broadcast of `input` (aligned from the right).
StridedLayout expand_layout(const Shape& input, const Shape& output);
// Shape [r0, d0, r1, d1, ...]: reshaped to [r0*d0, r1*d1, ...] it is the tiled tensor.
StridedLayout tile_layout(const Shape& input, std::span<const int64_t> repeats);
// 6-D layouts whose row-major order is the NCHW output of the op.
StridedLayout depth_to_space_layout(const Shape& input, int64_t block, bool column_row_depth);
StridedLayout space_to_depth_layout(const Shape& input, int64_t block);

// Pad's amounts for every axis, [begin_0, ..., begin_n, end_0, ..., end_n], from the pads
// input over `axes` (all axes when empty); axes already validated.
std::vector<int64_t> pads_per_axis(size_t rank, std::span<const int64_t> pads,
                                   std::span<const int64_t> axes);

// Pad's mode attribute (validated by the schema) as `Mode`, the backend's enum with the
// enumerators kConstant, kReflect, kEdge and kWrap.
template <typename Mode>
Mode pad_mode(const Node& node) {
  const std::string mode = node.attr_string("mode", "constant");
  if (mode == "reflect") return Mode::kReflect;
  if (mode == "edge") return Mode::kEdge;
  if (mode == "wrap") return Mode::kWrap;
  return Mode::kConstant;
}

// Copies the elements `layout` selects from `src` into a new tensor of layout.shape (simple and
// serial: for folding small tensors at import).
Tensor gather_strided(const Tensor& src, const StridedLayout& layout);

}  // namespace tandem
