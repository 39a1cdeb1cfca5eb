// Resize's kernels (see tensor_resize_launch.h): one thread per output element, which reads its
// taps from the per-axis tables. Dims are right-aligned in the arrays so that the unrolled loops
// index them with constants.
#include <cstdint>
#include <cstring>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/tensor_resize_launch.h"

namespace tandem::cuda {
namespace {

constexpr int kLast = kMaxRank - 1;

template <typename T>
__device__ T from_bits(uint64_t bits) {
  T value;
  memcpy(&value, &bits, sizeof(T));
  return value;
}

template <typename T>
__global__ void resize_nearest_kernel(const T* src, T* dst, ResizeLayout layout, int first,
                                      const int64_t* offsets, int64_t count) {
  const T fill = from_bits<T>(layout.fill_bits);
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    int64_t rest = i;
    int64_t source = 0;
    bool outside = false;
#pragma unroll
    for (int d = kLast; d >= 0; --d) {
      if (d < first) break;
      const int64_t quotient = rest / layout.size[d];
      const int64_t offset = offsets[2 * (layout.base[d] + rest - quotient * layout.size[d])];
      rest = quotient;
      outside = outside || offset < 0;
      source += offset;
    }
    dst[i] = outside ? fill : src[source];
  }
}

// Sums, over every combination of the taps of the leading axes, the product of their weights
// times the blend of the last axis's taps (the CPU kernel's order).
template <typename T, typename Acc>
__global__ void resize_linear_kernel(const T* src, T* dst, ResizeLayout layout, int first,
                                     const int64_t* offsets, const float* weights, int64_t count) {
  const T fill = from_bits<T>(layout.fill_bits);
  int blended = 0;
#pragma unroll
  for (int d = 0; d < kLast; ++d) blended += d >= first && layout.taps[d] == 2 ? 1 : 0;
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    int64_t offset0[kMaxRank], offset1[kMaxRank];
    Acc weight0[kMaxRank], weight1[kMaxRank];
    int64_t rest = i;
    bool outside = false;
#pragma unroll
    for (int d = kLast; d >= 0; --d) {
      offset0[d] = offset1[d] = 0;
      weight0[d] = weight1[d] = 0;
      if (d < first) continue;
      const int64_t quotient = rest / layout.size[d];
      const int64_t entry = layout.base[d] + rest - quotient * layout.size[d];
      rest = quotient;
      offset0[d] = offsets[2 * entry];
      offset1[d] = offsets[2 * entry + 1];
      weight0[d] = static_cast<Acc>(weights[2 * entry]);
      weight1[d] = static_cast<Acc>(weights[2 * entry + 1]);
      outside = outside || offset0[d] < 0;
    }
    if (outside) {
      dst[i] = fill;
      continue;
    }
    Acc acc = 0;
    for (int combo = 0; combo < 1 << blended; ++combo) {
      int64_t base = 0;
      Acc weight = 1;
      int bit = blended;
#pragma unroll
      for (int d = 0; d < kLast; ++d) {
        if (d < first) continue;
        bool second = false;
        if (layout.taps[d] == 2) second = (combo >> --bit) & 1;
        base += second ? offset1[d] : offset0[d];
        weight *= second ? weight1[d] : weight0[d];
      }
      Acc sample = weight0[kLast] * static_cast<Acc>(widen(src[base + offset0[kLast]]));
      if (layout.taps[kLast] == 2) {
        sample += weight1[kLast] * static_cast<Acc>(widen(src[base + offset1[kLast]]));
      }
      acc += weight * sample;
    }
    dst[i] = narrow<T>(acc);
  }
}

int64_t element_count(const ResizeLayout& layout) {
  int64_t count = 1;
  for (int d = 0; d < layout.rank; ++d) count *= layout.size[d];
  return count;
}

ResizeLayout align_right(const ResizeLayout& layout) {
  ResizeLayout aligned;
  aligned.rank = layout.rank;
  aligned.fill_bits = layout.fill_bits;
  const int first = kMaxRank - layout.rank;
  for (int d = 0; d < kMaxRank; ++d) {
    aligned.size[d] = d < first ? 1 : layout.size[d - first];
    aligned.base[d] = d < first ? 0 : layout.base[d - first];
    aligned.taps[d] = d < first ? 1 : layout.taps[d - first];
  }
  return aligned;
}

}  // namespace

void launch_resize_nearest(const void* src, void* dst, const ResizeLayout& layout,
                           const int64_t* offsets, int elem_bytes, cudaStream_t stream) {
  const int64_t count = element_count(layout);
  if (count == 0) return;
  const ResizeLayout aligned = align_right(layout);
  const int first = kMaxRank - layout.rank;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    resize_nearest_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), aligned, first, offsets, count);
  });
}

void launch_resize_linear(const void* src, void* dst, const ResizeLayout& layout,
                          const int64_t* offsets, const float* weights, Elem elem,
                          cudaStream_t stream) {
  const int64_t count = element_count(layout);
  if (count == 0) return;
  const ResizeLayout aligned = align_right(layout);
  const int first = kMaxRank - layout.rank;
  auto launch = [&](auto value_tag, auto acc_tag) {
    using T = decltype(value_tag);
    using Acc = decltype(acc_tag);
    resize_linear_kernel<T, Acc><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), aligned, first, offsets, weights, count);
  };
  switch (elem) {
    case Elem::kF64: launch(double{}, double{}); break;
    case Elem::kF16: launch(__half{}, float{}); break;
    case Elem::kBF16: launch(__nv_bfloat16{}, float{}); break;
    default: launch(float{}, float{}); break;
  }
}

}  // namespace tandem::cuda
