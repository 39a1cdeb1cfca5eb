#pragma once
// Resize's rules (attributes, output sizes, the coordinate each output index samples), shared by
// its schema and the backends' kernels so all agree on every size and sampling position.
//
// Where ONNX Runtime and the ONNX spec agree but the onnx Python reference differs, ONNX Runtime
// is followed: output sizes ignore roi (as in ONNX Runtime and ONNX's own shape inference,
// whatever the spec's formula says), `length_resized` is the integer output size, and
// pytorch_half_pixel maps a one-element output to 0. Coordinates are computed in float, as ONNX
// Runtime does, so nearest-neighbour ties fall the same way.
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace tandem {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoordinates {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
};
enum class ResizeNearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class ResizeAspect { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttributes {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinates coordinates = ResizeCoordinates::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
  ResizeAspect aspect = ResizeAspect::kStretch;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
  // The axes scales, sizes and roi refer to, normalized: the `axes` attribute (opset 18+), or
  // every axis.
  std::vector<int64_t> axes;
};

// Reads and validates a Resize node's attributes for an input of `rank` >= 1 at `opset`; throws
// InputError naming the node (unknown modes, attributes of a later opset, antialias=1 with
// linear or cubic, bad axes).
ResizeAttributes resize_attributes(const Node& node, int opset, size_t rank);

struct ResizeGeometry {
  Shape output;                  // kDynamicDim where an input dim it depends on is unknown
  std::vector<float> scales;     // per axis of X: the coordinate scale (1 on axes not resized)
  std::vector<float> roi_start;  // per axis of X, used by tf_crop_and_resize (0 where not given)
  std::vector<float> roi_end;    // (1 where not given)
};

// The output size and per-axis scales from the known contents of `scales` or `sizes` (exactly
// one is non-null and non-empty) and of `roi` (null when absent or not known; required by
// tf_crop_and_resize once the sizes are computed from real input dims). Validates every number:
// counts, positive finite scales, sizes in [0, kMaxElements], a finite roi. Throws InputError
// naming the node.
ResizeGeometry resize_geometry(const Node& node, const ResizeAttributes& attributes,
                               const Shape& input, const Tensor* roi, const Tensor* scales,
                               const Tensor* sizes);

// The coordinate in the input that output index `x` samples along one axis of length `in_len`
// resized to `out_len` with `scale` (ONNX Runtime's float formulas).
float resize_source_coordinate(ResizeCoordinates mode, float x, float scale, int64_t out_len,
                               int64_t in_len, float roi_start, float roi_end);

// Where output index `j` samples along one axis of length `in` resized to `out` (the kernels'
// rule): the source coordinate's floor `base` and fraction `ratio`, the coordinate bounded to
// [-4, in + 3] so that `base` is defined; or `outside` the input (tf_crop_and_resize only).
struct ResizeSample {
  bool outside = false;
  int64_t base = 0;
  float ratio = 0.0f;
};
ResizeSample resize_sample(const ResizeAttributes& attributes, int64_t j, float scale, int64_t out,
                           int64_t in, float roi_start, float roi_end);

// Whether nearest mode takes base + 1 rather than base for a sample at fraction `ratio`.
bool resize_nearest_rounds_up(ResizeNearest nearest, float ratio);

// The bits of extrapolation_value `value` as one element of `dtype` (integers: rounded toward
// zero and saturated; NaN gives 0), which tf_crop_and_resize writes outside the input.
uint64_t resize_fill_bits(DType dtype, float value);

}  // namespace tandem
