#pragma once
// Launchers of the tensor family's kernels that only move or make elements: the strided gather
// behind Transpose, Slice, Expand, DepthToSpace and SpaceToDepth, Tile, row copies for Concat
// and Split, fills, Range, EyeLike, Pad and Trilu. Kernels that move elements take their size in
// bytes (1, 2, 4 or 8), so they serve every dtype.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

// dst[i] = src[offset + sum(index_d * layout.stride[d])] for the row-major index of i in
// layout.size (the output's shape); strides may be 0 or negative.
void launch_strided_gather(const void* src, void* dst, const Dims& layout, int64_t offset,
                           int elem_bytes, cudaStream_t stream);

// Tile: output index j along each axis reads input index j % input.size[d]. `output` and
// `input` are dense views of the two shapes (one rank).
void launch_tile(const void* src, void* dst, const Dims& output, const Dims& input, int elem_bytes,
                 cudaStream_t stream);

// `rows` rows of `row_bytes` each, from src + r * src_pitch to dst + r * dst_pitch (bytes).
void launch_copy_rows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch,
                      int64_t row_bytes, int64_t rows, cudaStream_t stream);

// `count` elements of `elem_bytes`, each the low bytes of `bits`.
void launch_fill(void* dst, int64_t count, uint64_t bits, int elem_bytes, cudaStream_t stream);

// A short list of int64 values (Shape's dims, Size's count), passed by value to the kernel.
struct Int64List {
  int count = 0;
  int64_t values[kMaxRank] = {};
};
void launch_write_int64s(int64_t* dst, const Int64List& list, cudaStream_t stream);

// Range of `count` elements from the device scalars start and delta, by repeated addition as
// ONNX Runtime computes it (integers: start + i * delta, which is the same; floats: one thread
// adds in order, so every rounding matches). `elem`: kF32, kF64, kI32 or kI64.
void launch_range(const void* start, const void* delta, void* dst, int64_t count, Elem elem,
                  cudaStream_t stream);

// A rows x cols matrix of zeros with `one_bits` where col - row == k.
void launch_eye_like(void* dst, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits,
                     int elem_bytes, cudaStream_t stream);

enum class PadMode : int { kConstant, kReflect, kEdge, kWrap };

// Per axis of the output: its extent, the input's stride, the pad before it and the input range
// [low, high) that remains after negative pads crop.
struct PadLayout {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t before[kMaxRank] = {};
  int64_t low[kMaxRank] = {};
  int64_t high[kMaxRank] = {};
};
// Outputs outside the input take the device scalar *constant (zero when null) in constant mode;
// the other modes map them back into [low, high), which must then be non-empty.
void launch_pad(const void* src, void* dst, const PadLayout& layout, PadMode mode,
                const void* constant, int elem_bytes, cudaStream_t stream);

// Trilu over `matrices` rows x cols matrices: keeps col >= row + k (upper) or col <= row + k
// (lower), zeroes the rest; k is the device int64 scalar *k, or 0 when null.
void launch_trilu(const void* src, void* dst, int64_t matrices, int64_t rows, int64_t cols,
                  const int64_t* k, bool upper, int elem_bytes, cudaStream_t stream);

}  // namespace tandem::cuda
