// The copy engine behind Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth.
#include <omp.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/tensor_kernels.h"

namespace tandem::cpu {
namespace {

// Drops dims of size 1 and merges neighbours that are contiguous with each other in the source,
// so that [B,S,H,D] -> [B,H,D,S] becomes a batched 2-D transpose.
StridedLayout simplify(const StridedLayout& layout) {
  StridedLayout out;
  out.offset = layout.offset;
  for (size_t d = 0; d < layout.shape.size(); ++d) {
    if (layout.shape[d] == 1) continue;
    if (!out.shape.empty() && out.strides.back() == layout.strides[d] * layout.shape[d]) {
      out.shape.back() *= layout.shape[d];
      out.strides.back() = layout.strides[d];
      continue;
    }
    out.shape.push_back(layout.shape[d]);
    out.strides.push_back(layout.strides[d]);
  }
  return out;
}

// Walks the source offsets of consecutive positions in `shape` (row-major).
class Cursor {
 public:
  Cursor(const Shape& shape, const std::vector<int64_t>& strides, int64_t base, int64_t position)
      : shape_(shape), strides_(strides), index_(shape.size()), offset_(base) {
    for (size_t d = shape.size(); d-- > 0;) {
      index_[d] = position % shape[d];
      position /= shape[d];
      offset_ += index_[d] * strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < shape_[d]) return;
      offset_ -= index_[d] * strides_[d];
      index_[d] = 0;
    }
  }

 private:
  const Shape& shape_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> index_;
  int64_t offset_;
};

// Calls row_fn(row, source_offset) for every row of `outer` (the dims above the innermost),
// in parallel chunks that each decompose their first row once.
template <typename RowFn>
void for_each_row(const Shape& outer, const std::vector<int64_t>& strides, int64_t base,
                  int64_t rows, int64_t bytes, RowFn&& row_fn) {
  const int64_t chunks =
      bytes > kParallelBytes ? std::min<int64_t>(rows, 4 * omp_get_max_threads()) : 1;
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t begin = chunk * per_chunk;
    const int64_t end = std::min(rows, begin + per_chunk);
    if (begin >= end) continue;
    Cursor cursor(outer, strides, base, begin);
    for (int64_t row = begin; row < end; ++row, cursor.next()) row_fn(row, cursor.offset());
  }
}

constexpr int64_t kTile = 32;
constexpr int64_t kBlock = 8;

// dst[i * dst_stride + j] = src[i + j * src_stride] for i < rows, j < cols (both <= kBlock).
template <typename T>
void transpose_block(const T* src, int64_t src_stride, T* dst, int64_t dst_stride, int64_t rows,
                     int64_t cols) {
#ifdef __AVX2__
  if constexpr (sizeof(T) == 4) {
    if (rows == kBlock && cols == kBlock) {
      // 8x8 transpose of 32-bit lanes in registers: unpack, shuffle, then swap 128-bit halves.
      __m256 r[8], t[8];
      for (int k = 0; k < 8; ++k)
        r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + k * src_stride));
      for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(reinterpret_cast<float*>(dst + k * dst_stride),
                         _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
        _mm256_storeu_ps(reinterpret_cast<float*>(dst + (k + 4) * dst_stride),
                         _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
      }
      return;
    }
  }
#endif
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) dst[i * dst_stride + j] = src[i + j * src_stride];
  }
}

// dst[..., i, ..., j] = src[... + i + j * stride_j] where the source dim of stride 1 (`unit`)
// is not the innermost output dim: tiles of kTile x kTile keep both sides in cache.
template <typename T>
void tiled_transpose(const T* src, T* dst, const StridedLayout& layout, size_t unit) {
  const size_t last = layout.shape.size() - 1;
  const std::vector<int64_t> dst_strides = contiguous_strides(layout.shape);
  const int64_t rows_i = layout.shape[unit];
  const int64_t cols_j = layout.shape[last];
  const int64_t src_stride_j = layout.strides[last];
  const int64_t dst_stride_i = dst_strides[unit];
  Shape outer;
  std::vector<int64_t> outer_src;
  std::vector<int64_t> outer_dst;
  for (size_t d = 0; d < last; ++d) {
    if (d == unit) continue;
    outer.push_back(layout.shape[d]);
    outer_src.push_back(layout.strides[d]);
    outer_dst.push_back(dst_strides[d]);
  }
  int64_t outer_count = 1;
  for (int64_t dim : outer) outer_count *= dim;
  const int64_t tiles_i = (rows_i + kTile - 1) / kTile;
  const int64_t tiles_j = (cols_j + kTile - 1) / kTile;
  const int64_t work = outer_count * tiles_i * tiles_j;
  const bool parallel =
      outer_count * rows_i * cols_j * static_cast<int64_t>(sizeof(T)) > kParallelBytes;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < work; ++item) {
    const int64_t tile_j = item % tiles_j;
    const int64_t tile_i = item / tiles_j % tiles_i;
    int64_t position = item / (tiles_j * tiles_i);
    int64_t src_base = layout.offset;
    int64_t dst_base = 0;
    for (size_t d = outer.size(); d-- > 0;) {
      const int64_t index = position % outer[d];
      position /= outer[d];
      src_base += index * outer_src[d];
      dst_base += index * outer_dst[d];
    }
    const int64_t i_end = std::min(rows_i, (tile_i + 1) * kTile);
    const int64_t j_begin = tile_j * kTile;
    const int64_t j_end = std::min(cols_j, j_begin + kTile);
    for (int64_t i = tile_i * kTile; i < i_end; i += kBlock) {
      for (int64_t j = j_begin; j < j_end; j += kBlock) {
        transpose_block(src + src_base + i + j * src_stride_j, src_stride_j,
                        dst + dst_base + i * dst_stride_i + j, dst_stride_i,
                        std::min(kBlock, i_end - i), std::min(kBlock, j_end - j));
      }
    }
  }
}

template <typename T>
void copy_typed(const T* src, T* dst, const StridedLayout& layout) {
  const size_t rank = layout.shape.size();
  if (rank == 0) {
    dst[0] = src[layout.offset];
    return;
  }
  const int64_t inner = layout.shape.back();
  const int64_t inner_stride = layout.strides.back();
  const Shape outer(layout.shape.begin(), layout.shape.end() - 1);
  const std::vector<int64_t> outer_strides(layout.strides.begin(), layout.strides.end() - 1);
  int64_t rows = 1;
  for (int64_t dim : outer) rows *= dim;
  const int64_t bytes = rows * inner * static_cast<int64_t>(sizeof(T));
  if (inner_stride == 1) {
    for_each_row(outer, outer_strides, layout.offset, rows, bytes, [&](int64_t row, int64_t from) {
      std::memcpy(dst + row * inner, src + from, inner * sizeof(T));
    });
    return;
  }
  if (inner_stride == 0) {
    for_each_row(outer, outer_strides, layout.offset, rows, bytes, [&](int64_t row, int64_t from) {
      std::fill_n(dst + row * inner, inner, src[from]);
    });
    return;
  }
  const auto unit = std::find(layout.strides.begin(), layout.strides.end() - 1, 1);
  if (unit != layout.strides.end() - 1 && inner > 1) {
    tiled_transpose(src, dst, layout, static_cast<size_t>(unit - layout.strides.begin()));
    return;
  }
  for_each_row(outer, outer_strides, layout.offset, rows, bytes, [&](int64_t row, int64_t from) {
    T* to = dst + row * inner;
    for (int64_t j = 0; j < inner; ++j) to[j] = src[from + j * inner_stride];
  });
}

}  // namespace

void strided_copy(const void* src, void* dst, const StridedLayout& layout, DType dtype) {
  for (int64_t dim : layout.shape) {
    if (dim == 0) return;
  }
  const StridedLayout simple = simplify(layout);
  dispatch_by_size(dtype, [&]<typename T>() {
    copy_typed(static_cast<const T*>(src), static_cast<T*>(dst), simple);
  });
}

}  // namespace tandem::cpu
