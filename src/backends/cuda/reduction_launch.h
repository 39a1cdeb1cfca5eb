#pragma once
// Launchers of the CUDA reduction kernels (reduction.cu). Pointers are device memory; inputs
// and outputs are dense. Float types accumulate in float32 (float64 in float64) except in
// CumSum; nothing is launched for an empty output.
#include <cuda_runtime.h>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

// How a reduction walks its input: output element o (dense, in `kept` order) reduces the
// `reduced`-shaped block of input elements at offset(o in kept) + offset(r in reduced). Both
// views carry the input's strides; dims of extent 1 may be left out.
struct ReduceLayout {
  Dims kept;
  Dims reduced;
};

enum class ReduceOp : int {
  kSum,
  kMean,
  kMax,  // Max and Min propagate NaN
  kMin,
  kProd,
  kL1,
  kL2,
  kSumSquare,
  kLogSum,
  kLogSumExp,
};

// Integer sums and products wrap around (accumulated in int64, as on the CPU backend).
void launch_reduce(ReduceOp op, Elem elem, const void* in, const ReduceLayout& layout, void* out,
                   cudaStream_t stream);

// The int64 index along the one reduced dim of the best element: the first (or, with
// select_last, the last) maximum or minimum; NaN is never the best unless all are NaN (then 0).
void launch_arg_reduce(bool argmax, bool select_last, Elem elem, const void* in,
                       const ReduceLayout& layout, int64_t* out, cudaStream_t stream);

// A tensor seen as [outer, extent, inner] around the dims an op works along.
struct AxisView {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
};

// Softmax (or LogSoftmax) along the extent of `view`, shifted by each line's maximum.
void launch_softmax(bool log_softmax, Elem elem, const void* in, void* out, const AxisView& view,
                    cudaStream_t stream);

// A normalisation parameter: `data` (null when absent) of type `elem`, read through `view`.
struct NormParam {
  const void* data = nullptr;
  Elem elem = Elem::kF32;
  Dims view;  // LayerNormalization: its broadcast over the normalised dims (row-major)
};

// LayerNormalization over rows of `size` elements: y = (x - mean) / sqrt(var + epsilon) * scale
// + bias; the optional float32 `mean` and `inv_std` outputs get one value per row.
void launch_layer_norm(Elem elem, const void* x, void* y, int64_t rows, int64_t size,
                       const NormParam& scale, const NormParam& bias, double epsilon, float* mean,
                       float* inv_std, cudaStream_t stream);

// InstanceNormalization: as LayerNormalization over rows of `size` elements (the spatial dims
// of one sample and channel), with scale[c] and bias[c] of the row's channel c = row % channels
// (their views unused).
void launch_instance_norm(Elem elem, const void* x, void* y, int64_t rows, int64_t size,
                          int64_t channels, const NormParam& scale, const NormParam& bias,
                          double epsilon, cudaStream_t stream);

// BatchNormalization (inference) of x seen as [N, channels, inner]: y = (x - mean[c]) * scale[c]
// / sqrt(var[c] + epsilon) + bias[c]. The parameters' views are unused.
void launch_batch_norm(Elem elem, const void* x, void* y, int64_t count, int64_t channels,
                       int64_t inner, const NormParam& scale, const NormParam& bias,
                       const NormParam& mean, const NormParam& var, double epsilon,
                       cudaStream_t stream);

// LpNormalization (p = 1 or 2) along the extent of `view`: y = x / ||x||_p, unchanged where the
// norm is 0.
void launch_lp_norm(int p, Elem elem, const void* in, void* out, const AxisView& view,
                    cudaStream_t stream);

// CumSum along the extent of `view`, optionally exclusive (each sum leaves out its own element)
// and reversed (sums run from the end). Float sums run in double; integer sums wrap around.
void launch_cumsum(Elem elem, const void* in, void* out, const AxisView& view, bool exclusive,
                   bool reverse, cudaStream_t stream);

}  // namespace tandem::cuda
