// Kernels of the tensor family that move or make elements (see tensor_launch.h). One thread
// per output element in grid-stride loops; elements move as unsigned integers of their size.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/tensor_launch.h"

namespace tandem::cuda {
namespace {

// Right-aligns `dims` without merging (Tile pairs each output dim with an input dim).
Dims align_right(const Dims& dims) {
  Dims aligned;
  aligned.rank = dims.rank;
  const int first = kMaxRank - dims.rank;
  for (int d = 0; d < kMaxRank; ++d) {
    aligned.size[d] = d < first ? 1 : dims.size[d - first];
    aligned.stride[d] = d < first ? 0 : dims.stride[d - first];
  }
  return aligned;
}

// Drops dims of extent 1 and merges neighbours that are contiguous in the source, then moves
// the dims to the right end of the arrays (the kernels unroll over kMaxRank from the innermost
// dim, with constant indices). Returns the index of the first used dim.
int simplify_and_align(Dims& layout) {
  Dims merged;
  for (int d = 0; d < layout.rank; ++d) {
    if (layout.size[d] == 1) continue;
    const int last = merged.rank - 1;
    if (last >= 0 && merged.stride[last] == layout.stride[d] * layout.size[d]) {
      merged.size[last] *= layout.size[d];
      merged.stride[last] = layout.stride[d];
      continue;
    }
    merged.size[merged.rank] = layout.size[d];
    merged.stride[merged.rank] = layout.stride[d];
    ++merged.rank;
  }
  layout = align_right(merged);
  return kMaxRank - merged.rank;
}

// Index arithmetic in 32 bits when every position fits: 64-bit division is several times
// slower and these kernels divide once per dim per element.
template <typename T, typename Index>
__global__ void strided_gather_kernel(const T* src, T* dst, Dims layout, int first, int64_t offset,
                                      int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    Index rest = static_cast<Index>(i);
    int64_t source = offset;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < first) break;
      const auto size = static_cast<Index>(layout.size[d]);
      const Index quotient = rest / size;
      source += static_cast<int64_t>(rest - quotient * size) * layout.stride[d];
      rest = quotient;
    }
    dst[i] = src[source];
  }
}

template <typename T, typename Index>
__global__ void tile_kernel(const T* src, T* dst, Dims output, Dims input, int first,
                            int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    Index rest = static_cast<Index>(i);
    int64_t source = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < first) break;
      const auto size = static_cast<Index>(output.size[d]);
      const Index quotient = rest / size;
      const Index position = rest - quotient * size;
      source +=
          static_cast<int64_t>(position % static_cast<Index>(input.size[d])) * input.stride[d];
      rest = quotient;
    }
    dst[i] = src[source];
  }
}

// Calls launch(Index{}) with the index type of the kernels above for `count` elements.
template <typename Launch>
void with_index(int64_t count, Launch&& launch) {
  if (count <= std::numeric_limits<uint32_t>::max()) {
    launch(uint32_t{});
  } else {
    launch(uint64_t{});
  }
}

template <typename U>
__global__ void copy_rows_kernel(const U* src, int64_t src_pitch, U* dst, int64_t dst_pitch,
                                 int64_t row_units, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const int64_t row = i / row_units;
    const int64_t column = i - row * row_units;
    dst[row * dst_pitch + column] = src[row * src_pitch + column];
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, int64_t count, T value) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) dst[i] = value;
}

__global__ void write_int64s_kernel(int64_t* dst, Int64List list) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < list.count) dst[i] = list.values[i];
}

// start + i * delta in unsigned arithmetic: the wrap-around of repeated signed addition.
template <typename T>
__global__ void range_integer_kernel(const T* start, const T* delta, T* dst, int64_t count) {
  using U = std::make_unsigned_t<T>;
  const U first = static_cast<U>(*start);
  const U step = static_cast<U>(*delta);
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    dst[i] = static_cast<T>(first + static_cast<U>(i) * step);
  }
}

template <typename T>
__global__ void range_float_kernel(const T* start, const T* delta, T* dst, int64_t count) {
  T value = *start;
  const T step = *delta;
  for (int64_t i = 0; i < count; ++i, value += step) dst[i] = value;
}

template <typename T>
__global__ void eye_like_kernel(T* dst, int64_t rows, int64_t cols, int64_t k, T one) {
  for (int64_t i = first_index(); i < rows * cols; i += grid_stride()) {
    const int64_t row = i / cols;
    const int64_t col = i - row * cols;
    dst[i] = col - row == k ? one : T(0);
  }
}

template <typename T>
__global__ void pad_kernel(const T* src, T* dst, PadLayout layout, int first, PadMode mode,
                           const T* constant, int64_t count) {
  const T fill = constant ? *constant : T(0);
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    int64_t rest = i;
    int64_t source = 0;
    bool outside = false;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < first) break;
      const int64_t quotient = rest / layout.size[d];
      int64_t x = rest - quotient * layout.size[d] - layout.before[d];
      rest = quotient;
      const int64_t low = layout.low[d];
      const int64_t high = layout.high[d];
      if (x < low || x >= high) {
        const int64_t length = high - low;
        if (mode == PadMode::kConstant) {
          outside = true;
          break;
        } else if (mode == PadMode::kEdge) {
          x = x < low ? low : high - 1;
        } else if (mode == PadMode::kWrap) {
          x = low + ((x - low) % length + length) % length;
        } else {
          // Reflection without repeating the edge: period 2 * (length - 1).
          const int64_t period = length > 1 ? 2 * (length - 1) : 1;
          int64_t t = ((x - low) % period + period) % period;
          if (t >= length) t = period - t;
          x = low + t;
        }
      }
      source += x * layout.stride[d];
    }
    dst[i] = outside ? fill : src[source];
  }
}

template <typename T>
__global__ void trilu_kernel(const T* src, T* dst, int64_t rows, int64_t cols, const int64_t* k,
                             bool upper, int64_t count) {
  // Clamped so that row + k cannot overflow; beyond these bounds nothing changes.
  int64_t shift = k ? *k : 0;
  shift = shift < -rows - 1 ? -rows - 1 : (shift > cols + 1 ? cols + 1 : shift);
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const int64_t col = i % cols;
    const int64_t row = (i / cols) % rows;
    const bool keep = upper ? col >= row + shift : col <= row + shift;
    dst[i] = keep ? src[i] : T(0);
  }
}

}  // namespace

void launch_strided_gather(const void* src, void* dst, const Dims& layout, int64_t offset,
                           int elem_bytes, cudaStream_t stream) {
  const int64_t count = element_count(layout);
  if (count == 0) return;
  Dims aligned = layout;
  const int first = simplify_and_align(aligned);
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    const auto* from = static_cast<const T*>(src);
    auto* to = static_cast<T*>(dst);
    with_index(count, [&](auto index) {
      strided_gather_kernel<T, decltype(index)>
          <<<blocks_for(count), kThreads, 0, stream>>>(from, to, aligned, first, offset, count);
    });
  });
}

void launch_tile(const void* src, void* dst, const Dims& output, const Dims& input, int elem_bytes,
                 cudaStream_t stream) {
  const int64_t count = element_count(output);
  if (count == 0) return;
  const Dims out = align_right(output);
  const Dims in = align_right(input);
  const int first = kMaxRank - output.rank;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    const auto* from = static_cast<const T*>(src);
    auto* to = static_cast<T*>(dst);
    with_index(count, [&](auto index) {
      tile_kernel<T, decltype(index)>
          <<<blocks_for(count), kThreads, 0, stream>>>(from, to, out, in, first, count);
    });
  });
}

void launch_copy_rows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch,
                      int64_t row_bytes, int64_t rows, cudaStream_t stream) {
  if (rows == 0 || row_bytes == 0) return;
  // The widest unit that divides every row, pitch and address.
  const auto bits =
      static_cast<uint64_t>(row_bytes | src_pitch | dst_pitch | reinterpret_cast<uintptr_t>(src) |
                            reinterpret_cast<uintptr_t>(dst));
  int unit = 16;
  while (bits % unit != 0) unit /= 2;
  auto launch = [&](auto tag) {
    using U = decltype(tag);
    const int64_t row_units = row_bytes / unit;
    const int64_t count = row_units * rows;
    copy_rows_kernel<U><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const U*>(src), src_pitch / unit, static_cast<U*>(dst), dst_pitch / unit,
        row_units, count);
  };
  switch (unit) {
    case 16: launch(uint4{}); break;
    case 8: launch(uint2{}); break;
    case 4: launch(uint32_t{}); break;
    case 2: launch(uint16_t{}); break;
    default: launch(uint8_t{}); break;
  }
}

void launch_fill(void* dst, int64_t count, uint64_t bits, int elem_bytes, cudaStream_t stream) {
  if (count == 0) return;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(dst), count,
                                                               static_cast<T>(bits));
  });
}

void launch_write_int64s(int64_t* dst, const Int64List& list, cudaStream_t stream) {
  if (list.count == 0) return;
  write_int64s_kernel<<<1, kMaxRank, 0, stream>>>(dst, list);
}

void launch_range(const void* start, const void* delta, void* dst, int64_t count, Elem elem,
                  cudaStream_t stream) {
  if (count == 0) return;
  auto integer = [&](auto tag) {
    using T = decltype(tag);
    range_integer_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(start), static_cast<const T*>(delta), static_cast<T*>(dst), count);
  };
  auto floating = [&](auto tag) {
    using T = decltype(tag);
    range_float_kernel<T><<<1, 1, 0, stream>>>(
        static_cast<const T*>(start), static_cast<const T*>(delta), static_cast<T*>(dst), count);
  };
  switch (elem) {
    case Elem::kF32: floating(float{}); break;
    case Elem::kF64: floating(double{}); break;
    case Elem::kI32: integer(int32_t{}); break;
    default: integer(int64_t{}); break;
  }
}

void launch_eye_like(void* dst, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits,
                     int elem_bytes, cudaStream_t stream) {
  const int64_t count = rows * cols;
  if (count == 0) return;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    eye_like_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(dst), rows, cols,
                                                                   k, static_cast<T>(one_bits));
  });
}

void launch_pad(const void* src, void* dst, const PadLayout& layout, PadMode mode,
                const void* constant, int elem_bytes, cudaStream_t stream) {
  int64_t count = 1;
  for (int d = 0; d < layout.rank; ++d) count *= layout.size[d];
  if (count == 0) return;
  PadLayout aligned;
  aligned.rank = layout.rank;
  const int first = kMaxRank - layout.rank;
  for (int d = first; d < kMaxRank; ++d) {
    aligned.size[d] = layout.size[d - first];
    aligned.stride[d] = layout.stride[d - first];
    aligned.before[d] = layout.before[d - first];
    aligned.low[d] = layout.low[d - first];
    aligned.high[d] = layout.high[d - first];
  }
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    pad_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), aligned, first, mode,
        static_cast<const T*>(constant), count);
  });
}

void launch_trilu(const void* src, void* dst, int64_t matrices, int64_t rows, int64_t cols,
                  const int64_t* k, bool upper, int elem_bytes, cudaStream_t stream) {
  const int64_t count = matrices * rows * cols;
  if (count == 0) return;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    trilu_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), rows, cols, k, upper, count);
  });
}

}  // namespace tandem::cuda
