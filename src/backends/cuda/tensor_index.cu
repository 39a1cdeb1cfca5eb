// Kernels of the indexing ops (see tensor_index_launch.h). One thread per output (gathers) or
// update (scatters) element; elements move as unsigned integers of their size.
#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/tensor_index_launch.h"

namespace tandem::cuda {
namespace {

// Calls fn(T{}, I{}) with T the unsigned integer of `elem_bytes` bytes and I the integer type of
// an index tensor (int32 or int64).
template <typename Fn>
void by_size_and_index(int elem_bytes, Elem index_elem, Fn&& fn) {
  by_size(elem_bytes, [&](auto value) {
    if (index_elem == Elem::kI32) {
      fn(value, int32_t{});
    } else {
      fn(value, int64_t{});
    }
  });
}

// An index resolved against `dim` (negative ones count from the end), or -1 when out of range.
__device__ int64_t resolve(int64_t index, int64_t dim) {
  if (index < 0) index += dim;
  return index >= 0 && index < dim ? index : -1;
}

template <typename T, typename I>
__global__ void gather_kernel(const T* data, const I* indices, T* dst, int64_t dim, int64_t inner,
                              int64_t count, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t column = i % inner;
    const int64_t item = i / inner;
    const int64_t outer = item / count;
    const int64_t index = resolve(static_cast<int64_t>(indices[item - outer * count]), dim);
    dst[i] = index < 0 ? T(0) : data[(outer * dim + index) * inner + column];
  }
}

// Source offset of element i of indices (its position with the index in place of the axis), or
// -1 when the index or the position is outside the data.
template <typename I>
__device__ int64_t element_offset(const ElementsLayout& layout, const I* indices, int64_t i) {
  int64_t rest = i;
  int64_t offset = 0;
  bool inside = true;
  for (int d = layout.rank - 1; d >= 0; --d) {
    const int64_t quotient = rest / layout.size[d];
    int64_t position = rest - quotient * layout.size[d];
    rest = quotient;
    if (d == layout.axis) {
      position = resolve(static_cast<int64_t>(indices[i]), layout.data_size[d]);
      inside = inside && position >= 0;
    } else {
      inside = inside && position < layout.data_size[d];
    }
    offset += position * layout.data_stride[d];
  }
  return inside ? offset : -1;
}

template <typename T, typename I>
__global__ void gather_elements_kernel(const T* data, const I* indices, T* dst,
                                       ElementsLayout layout, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t offset = element_offset(layout, indices, i);
    dst[i] = offset < 0 ? T(0) : data[offset];
  }
}

template <typename T, typename I>
__global__ void scatter_elements_kernel(T* out, const I* indices, const T* updates,
                                        ElementsLayout layout, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t offset = element_offset(layout, indices, i);
    if (offset >= 0) out[offset] = updates[i];
  }
}

// Data offset of index tuple t, or -1 when a coordinate is out of range.
__device__ int64_t tuple_offset(const TupleLayout& layout, const int64_t* indices, int64_t t) {
  int64_t offset = t / layout.per_batch * layout.batch_stride;
  for (int j = 0; j < layout.depth; ++j) {
    const int64_t index = resolve(indices[t * layout.depth + j], layout.dim[j]);
    if (index < 0) return -1;
    offset += index * layout.stride[j];
  }
  return offset;
}

template <typename T>
__global__ void gather_nd_kernel(const T* data, const int64_t* indices, T* dst, TupleLayout layout,
                                 int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t t = i / layout.slice;
    const int64_t offset = tuple_offset(layout, indices, t);
    dst[i] = offset < 0 ? T(0) : data[offset + i - t * layout.slice];
  }
}

template <typename T>
__global__ void scatter_nd_kernel(T* out, const int64_t* indices, const T* updates,
                                  TupleLayout layout, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t t = i / layout.slice;
    const int64_t offset = tuple_offset(layout, indices, t);
    if (offset >= 0) out[offset + i - t * layout.slice] = updates[i];
  }
}

// A class number as the CPU computes it (truncation toward zero); values with no int64 (NaN,
// infinities, huge) become INT64_MIN, which matches no class.
__device__ int64_t class_of(double value) {
  if (!(value > -9.2e18 && value < 9.2e18)) return INT64_MIN;
  return static_cast<int64_t>(value);
}
__device__ int64_t class_of(float value) { return class_of(static_cast<double>(value)); }
__device__ int64_t class_of(__half value) { return class_of(__half2float(value)); }
__device__ int64_t class_of(__nv_bfloat16 value) { return class_of(__bfloat162float(value)); }
__device__ int64_t class_of(int64_t value) { return value; }
__device__ int64_t class_of(int32_t value) { return value; }
__device__ int64_t class_of(int8_t value) { return value; }
__device__ int64_t class_of(uint8_t value) { return value; }

template <typename T, typename I>
__global__ void one_hot_kernel(const I* indices, const T* values, T* dst, int64_t depth,
                               int64_t inner, int64_t total) {
  const T off = values[0];
  const T on = values[1];
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t column = i % inner;
    const int64_t rest = i / inner;
    const int64_t c = rest % depth;
    const int64_t outer = rest / depth;
    int64_t target = class_of(indices[outer * inner + column]);
    if (target < 0) target += depth;
    dst[i] = target == c ? on : off;
  }
}

// One (bag, column) per thread: the bag's range of indices as Slice resolves a start and an end,
// its rows summed in order (an index out of range reads 0, as Gather here).
__device__ int64_t slice_bound(int64_t bound, int64_t length) {
  if (bound < 0) bound += length;
  return bound < 0 ? 0 : (bound > length ? length : bound);
}

template <typename I>
__global__ void embedding_bag_kernel(const float* table, const I* indices, const I* starts,
                                     const I* ends, float* dst, int64_t rows, int64_t width,
                                     int64_t length, bool mean, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t bag = i / width;
    const int64_t column = i - bag * width;
    const int64_t begin = slice_bound(static_cast<int64_t>(starts[bag]), length);
    const int64_t end = max(begin, slice_bound(static_cast<int64_t>(ends[bag]), length));
    float sum = 0.0f;
    for (int64_t j = begin; j < end; ++j) {
      const int64_t row = resolve(static_cast<int64_t>(indices[j]), rows);
      if (row >= 0) sum += table[row * width + column];
    }
    dst[i] = mean ? sum / static_cast<float>(end - begin) : sum;
  }
}

}  // namespace

void launch_embedding_bag(const float* table, const void* indices, const void* starts,
                          const void* ends, Elem index_elem, float* dst, int64_t rows,
                          int64_t width, int64_t length, int64_t bags, bool mean,
                          cudaStream_t stream) {
  const int64_t total = bags * width;
  if (total == 0) return;
  by_size_and_index(4, index_elem, [&](auto, auto index_tag) {
    using I = decltype(index_tag);
    embedding_bag_kernel<I><<<blocks_for(total), kThreads, 0, stream>>>(
        table, static_cast<const I*>(indices), static_cast<const I*>(starts),
        static_cast<const I*>(ends), dst, rows, width, length, mean, total);
  });
}

void launch_gather(const void* data, const void* indices, Elem index_elem, void* dst, int64_t outer,
                   int64_t dim, int64_t inner, int64_t count, int elem_bytes, cudaStream_t stream) {
  const int64_t total = outer * count * inner;
  if (total == 0) return;
  by_size_and_index(elem_bytes, index_elem, [&](auto value_tag, auto index_tag) {
    using T = decltype(value_tag);
    using I = decltype(index_tag);
    gather_kernel<T, I><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(data), static_cast<const I*>(indices), static_cast<T*>(dst), dim,
        inner, count, total);
  });
}

namespace {

int64_t element_count(const ElementsLayout& layout) {
  int64_t count = 1;
  for (int d = 0; d < layout.rank; ++d) count *= layout.size[d];
  return count;
}

}  // namespace

void launch_gather_elements(const void* data, const void* indices, Elem index_elem, void* dst,
                            const ElementsLayout& layout, int elem_bytes, cudaStream_t stream) {
  const int64_t total = element_count(layout);
  if (total == 0) return;
  by_size_and_index(elem_bytes, index_elem, [&](auto value_tag, auto index_tag) {
    using T = decltype(value_tag);
    using I = decltype(index_tag);
    gather_elements_kernel<T, I><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(data), static_cast<const I*>(indices), static_cast<T*>(dst), layout,
        total);
  });
}

void launch_scatter_elements(void* out, const void* indices, Elem index_elem, const void* updates,
                             const ElementsLayout& layout, int elem_bytes, cudaStream_t stream) {
  const int64_t total = element_count(layout);
  if (total == 0) return;
  by_size_and_index(elem_bytes, index_elem, [&](auto value_tag, auto index_tag) {
    using T = decltype(value_tag);
    using I = decltype(index_tag);
    scatter_elements_kernel<T, I><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<T*>(out), static_cast<const I*>(indices), static_cast<const T*>(updates),
        layout, total);
  });
}

void launch_gather_nd(const void* data, const int64_t* indices, void* dst,
                      const TupleLayout& layout, int elem_bytes, cudaStream_t stream) {
  const int64_t total = layout.tuples * layout.slice;
  if (total == 0) return;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    gather_nd_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(data), indices, static_cast<T*>(dst), layout, total);
  });
}

void launch_scatter_nd(void* out, const int64_t* indices, const void* updates,
                       const TupleLayout& layout, int elem_bytes, cudaStream_t stream) {
  const int64_t total = layout.tuples * layout.slice;
  if (total == 0) return;
  by_size(elem_bytes, [&](auto tag) {
    using T = decltype(tag);
    scatter_nd_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<T*>(out), indices, static_cast<const T*>(updates), layout, total);
  });
}

void launch_one_hot(const void* indices, Elem index_elem, const void* values, void* dst,
                    int64_t outer, int64_t depth, int64_t inner, int elem_bytes,
                    cudaStream_t stream) {
  const int64_t total = outer * depth * inner;
  if (total == 0) return;
  by_size(elem_bytes, [&](auto value_tag) {
    using T = decltype(value_tag);
    by_elem(index_elem, [&](auto index_tag) {
      using I = decltype(index_tag);
      one_hot_kernel<T, I><<<blocks_for(total), kThreads, 0, stream>>>(
          static_cast<const I*>(indices), static_cast<const T*>(values), static_cast<T*>(dst),
          depth, inner, total);
    });
  });
}

}  // namespace tandem::cuda
