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

// Window `g` of an input of shape `x` (N, C, then g.rank() spatial dims) over 3 spatial axes,
// lower-rank windows getting leading axes of size 1, for kernels that loop over three axes.
// `Window` is the backend's plain struct of int64_t arrays in, out, kernel, stride, dilation,
// pad_begin and pad_end, each of 3.
template <typename Window>
Window window_3d(const WindowGeometry& g, const Shape& x) {
  Window w{};
  const int64_t lead = 3 - g.rank();
  for (int64_t i = 0; i < 3; ++i) {
    const bool real = i >= lead;
    const size_t axis = static_cast<size_t>(i - lead);
    w.in[i] = real ? x[axis + 2] : 1;
    w.out[i] = real ? g.output[axis] : 1;
    w.kernel[i] = real ? g.kernel[axis] : 1;
    w.stride[i] = real ? g.strides[axis] : 1;
    w.dilation[i] = real ? g.dilations[axis] : 1;
    w.pad_begin[i] = real ? g.pads_begin[axis] : 0;
    w.pad_end[i] = real ? g.pads_end[axis] : 0;
  }
  return w;
}

}  // namespace tandem
