#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace tandem {

// Where a sliding window (Conv, pooling) lies along each spatial axis, resolved from the node's
// auto_pad, pads, strides and dilations. Shared by shape inference and the kernels, so both
// agree on every output size.
struct WindowGeometry {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  std::vector<int64_t> output;  // kDynamicDim where the input size is unknown

  int64_t rank() const { return static_cast<int64_t>(kernel.size()); }
  int64_t extent(size_t axis) const { return (kernel[axis] - 1) * dilations[axis] + 1; }
};

// Validates the window attributes of `node` for an input of spatial size `input` (dims may be
// kDynamicDim) and a kernel of size `kernel`; throws InputError naming the node. `ceil_mode`
// rounds output sizes up (pooling) and drops a last window that would start in the end padding.
WindowGeometry resolve_window(const Node& node, const std::vector<int64_t>& input,
                              const std::vector<int64_t>& kernel, bool ceil_mode);

// As resolve_window, for ConvTranspose: `output` is the size of the transposed (upsampled)
// result, which honours the output_padding and output_shape attributes; pads crop that result.
WindowGeometry resolve_transposed_window(const Node& node, const std::vector<int64_t>& input,
                                         const std::vector<int64_t>& kernel);

}  // namespace tandem
