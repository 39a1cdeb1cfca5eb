#pragma once
// Launchers of Resize's kernels. The host computes, per output axis, where each output index
// samples (as the CPU kernel does); the kernels combine those taps over the axes.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

// Output index j on axis d samples through table entry e = base[d] + j: the input element
// offsets offsets[2e], offsets[2e + 1] (index times the axis stride) with the weights
// weights[2e], weights[2e + 1]. taps[d] is 2 when some output on the axis blends two inputs,
// else 1 (only the first entry counts). offsets[2e] < 0 marks an output that
// tf_crop_and_resize maps outside the input; it takes `fill_bits` (in the element's type).
struct ResizeLayout {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t base[kMaxRank] = {};
  int taps[kMaxRank] = {};
  uint64_t fill_bits = 0;
};

// Nearest: one tap per axis; moves elements of `elem_bytes`.
void launch_resize_nearest(const void* src, void* dst, const ResizeLayout& layout,
                           const int64_t* offsets, int elem_bytes, cudaStream_t stream);
// Linear over every axis with two taps, for kF32, kF64, kF16 or kBF16 (float16 and bfloat16
// accumulate in float).
void launch_resize_linear(const void* src, void* dst, const ResizeLayout& layout,
                          const int64_t* offsets, const float* weights, Elem elem,
                          cudaStream_t stream);

}  // namespace tandem::cuda
