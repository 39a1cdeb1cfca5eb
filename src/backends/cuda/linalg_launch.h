#pragma once
// Launchers of the linalg family's own kernels (linalg.cu): the epilogues cuBLASLt and cuDNN
// cannot fuse, the copies around them, and the pools. Pointers are device memory; float16 and
// bfloat16 compute in float, float64 in double. Nothing is launched for an empty output.
#include <cuda_runtime.h>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

// The activations a graph-fusion pass attaches to Conv, Gemm and MatMul (ir/fuse.h), with the
// ONNX op's alpha and beta.
enum class ActivationKind : int {
  kNone,
  kRelu,
  kLeakyRelu,    // x < 0 ? alpha * x : x
  kClip,         // min(max(x, alpha), beta)
  kHardSwish,    // x * clamp(x / 6 + 0.5, 0, 1)
  kHardSigmoid,  // clamp(alpha * x + beta, 0, 1)
  kSigmoid,
  kTanh,
  kGelu,  // exact: 0.5 * x * (1 + erf(x / sqrt(2)))
};

struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0;
  float beta = 0;
};

// In place over `count` elements of `data` (float types):
//   data[i] = act(data[i] + bias[(i / inner) % channels] + residual[i])
// where bias (per channel, NCHW-style) and residual (data's shape) may each be null.
void launch_epilogue(Elem elem, void* data, const void* bias, const void* residual, int64_t count,
                     int64_t channels, int64_t inner, const Activation& activation,
                     cudaStream_t stream);

// out[i, j] = scale * c[i * row_stride + j * col_stride] for a dense rows x cols `out` (float
// types): Gemm's C broadcast into the output.
void launch_broadcast_matrix(Elem elem, const void* c, int64_t row_stride, int64_t col_stride,
                             double scale, void* out, int64_t rows, int64_t cols,
                             cudaStream_t stream);

// Planes of in_h x in_w copied into zero planes of out_h x out_w at row `top`, column `left`
// (negative offsets crop): out[p, y, x] = in[p, y - top, x - left], 0 outside `in`.
struct PlaneCopy {
  int64_t planes;
  int64_t in_h, in_w, out_h, out_w;
  int64_t top, left;
};
void launch_copy_planes(int element_bytes, const void* in, void* out, const PlaneCopy& copy,
                        cudaStream_t stream);

enum class PoolKind : int { kMax, kAverage, kAverageWithPad };

// A pooling window over 3 spatial axes; 1-D and 2-D pools have leading axes of size 1.
struct PoolWindow {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
};

// MaxPool and AveragePool over `planes` (N * C) planes, ONNX semantics: padding never enters a
// maximum; kAverage divides by the taps inside the input, kAverageWithPad by the taps inside
// the explicitly padded input (not the overhang ceil_mode adds). Max takes every Elem but bool;
// averages take float types.
void launch_pool(Elem elem, PoolKind kind, const void* in, void* out, int64_t planes,
                 const PoolWindow& window, cudaStream_t stream);

// GlobalMaxPool (is_max) or GlobalAveragePool: one value per plane of `plane_size` elements
// (float types).
void launch_global_pool(Elem elem, bool is_max, const void* in, void* out, int64_t planes,
                        int64_t plane_size, cudaStream_t stream);

}  // namespace tandem::cuda
