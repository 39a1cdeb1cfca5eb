// Kernels of NonZero, TopK, NonMaxSuppression and Unique (see data_dependent_launch.h). Sorts
// are cub's stable radix sorts over integer keys that order like the values; cub's compaction
// and scans do the rest.
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>

#include "backends/cuda/data_dependent_launch.h"
#include "backends/cuda/device_common.cuh"

namespace tandem::cuda {
namespace {

int elem_size(Elem elem) {
  switch (elem) {
    case Elem::kF64:
    case Elem::kI64: return 8;
    case Elem::kF32:
    case Elem::kI32: return 4;
    case Elem::kF16:
    case Elem::kBF16: return 2;
    default: return 1;
  }
}

// Order-preserving unsigned keys: a < b exactly when key(a) < key(b). Floats: -0.0 and 0.0 get
// one key, every NaN gets `nan_key` (the top, or the bottom, of the order).
__device__ uint32_t float_key(float v, uint32_t nan_key) {
  if (v != v) return nan_key;
  if (v == 0.0f) v = 0.0f;
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ uint32_t sort_key(float v) { return float_key(v, 0xffffffffu); }
__device__ uint32_t sort_key(__half v) { return sort_key(__half2float(v)); }
__device__ uint32_t sort_key(__nv_bfloat16 v) { return sort_key(__bfloat162float(v)); }
__device__ uint64_t sort_key(double v) {
  if (v != v) return ~uint64_t{0};
  if (v == 0.0) v = 0.0;
  const auto u = static_cast<uint64_t>(__double_as_longlong(v));
  return (u >> 63) ? ~u : (u | (uint64_t{1} << 63));
}
__device__ uint64_t sort_key(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }
__device__ uint32_t sort_key(int32_t v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
__device__ uint8_t sort_key(int8_t v) {
  return static_cast<uint8_t>(static_cast<uint8_t>(v) ^ 0x80);
}
__device__ uint8_t sort_key(uint8_t v) { return v; }

template <typename T>
using KeyOf = decltype(sort_key(T{}));

// ---- NonZero ----

// Floats compare by value (-0.0 is zero, NaN is not); float16 and bfloat16 by their bits with
// the sign cleared, as the CPU does.
__device__ bool is_nonzero(float v) { return v != 0.0f; }
__device__ bool is_nonzero(double v) { return v != 0.0; }
__device__ bool is_nonzero(__half v) { return (__half_as_ushort(v) & 0x7fff) != 0; }
__device__ bool is_nonzero(__nv_bfloat16 v) { return (__bfloat16_as_ushort(v) & 0x7fff) != 0; }
__device__ bool is_nonzero(int64_t v) { return v != 0; }
__device__ bool is_nonzero(int32_t v) { return v != 0; }
__device__ bool is_nonzero(int8_t v) { return v != 0; }
__device__ bool is_nonzero(uint8_t v) { return v != 0; }

template <typename T>
struct NonZeroAt {
  const T* data;
  __device__ bool operator()(int64_t i) const { return is_nonzero(data[i]); }
};

__global__ void nonzero_coordinates_kernel(const int64_t* selected, int64_t count, Dims input,
                                           int64_t* out) {
  for (int64_t k = first_index(); k < count; k += grid_stride()) {
    int64_t rest = selected[k];
    for (int d = input.rank - 1; d >= 0; --d) {
      const int64_t quotient = rest / input.size[d];
      out[d * count + k] = rest - quotient * input.size[d];
      rest = quotient;
    }
  }
}

// ---- TopK ----

template <typename T, typename K>
__global__ void top_k_keys_kernel(const T* input, int64_t dim, int64_t inner, bool largest, K* keys,
                                  int32_t* order, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t row = i / dim;
    const int64_t j = i - row * dim;
    const int64_t outer = row / inner;
    const int64_t column = row - outer * inner;
    const K key = sort_key(input[(outer * dim + j) * inner + column]);
    // Descending order is the ascending order of the complemented keys; the stable sort keeps
    // the lower index first among equal values either way.
    keys[i] = largest ? static_cast<K>(~key) : key;
    order[i] = static_cast<int32_t>(j);
  }
}

__global__ void segment_offsets_kernel(int64_t* offsets, int64_t segments, int64_t length) {
  for (int64_t s = first_index(); s <= segments; s += grid_stride()) offsets[s] = s * length;
}

template <typename T>
__global__ void top_k_write_kernel(const T* input, const int32_t* order, int64_t dim, int64_t inner,
                                   int64_t k, T* values, int64_t* indices, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t column = i % inner;
    const int64_t rest = i / inner;
    const int64_t j = rest % k;
    const int64_t outer = rest / k;
    const int64_t source = order[(outer * inner + column) * dim + j];
    values[i] = input[(outer * dim + source) * inner + column];
    indices[i] = source;
  }
}

// Sorts `items` (key, position) pairs within segments of `length` (one segment: a device-wide
// sort, which uses the whole GPU).
template <typename K, typename V>
cudaError_t sort_segments(K* keys_in, K* keys_out, V* order_in, V* order_out, int64_t items,
                          int64_t segments, const int64_t* offsets, void* temp, size_t& temp_bytes,
                          cudaStream_t stream) {
  if (segments == 1) {
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, order_in, order_out,
                                           items, 0, int{sizeof(K)} * 8, stream);
  }
  return cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys_in, keys_out, order_in,
                                                   order_out, items, segments, offsets, offsets + 1,
                                                   stream);
}

// ---- NonMaxSuppression ----

// std::min and std::max as the CPU computes them (the same operand wins with NaN).
__device__ float min_of(float a, float b) { return b < a ? b : a; }
__device__ float max_of(float a, float b) { return a < b ? b : a; }

// Corners and area of each box, as the CPU's Candidate computes them. The _rn intrinsics keep
// nvcc from fusing multiplies and adds, so every rounding is the CPU's.
__global__ void nms_corners_kernel(const float* boxes, int64_t count, bool center_point_box,
                                   float* corners) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const float* box = boxes + 4 * i;
    float* c = corners + 5 * i;
    if (center_point_box) {
      const float half_width = __fdiv_rn(box[2], 2.0f);
      const float half_height = __fdiv_rn(box[3], 2.0f);
      c[0] = __fsub_rn(box[1], half_height);
      c[1] = __fsub_rn(box[0], half_width);
      c[2] = __fadd_rn(box[1], half_height);
      c[3] = __fadd_rn(box[0], half_width);
      c[4] = __fmul_rn(box[2], box[3]);
    } else {
      c[0] = min_of(box[0], box[2]);
      c[1] = min_of(box[1], box[3]);
      c[2] = max_of(box[0], box[2]);
      c[3] = max_of(box[1], box[3]);
      c[4] = __fmul_rn(__fsub_rn(c[2], c[0]), __fsub_rn(c[3], c[1]));
    }
  }
}

// Whether `box` overlaps `kept` by more than the threshold (corners y_min, x_min, y_max, x_max,
// then the area), in the CPU's operations.
__device__ bool suppressed_by(const float* box, const float* kept, float iou_threshold) {
  const float left = max_of(box[1], kept[1]);
  const float right = min_of(box[3], kept[3]);
  if (right <= left) return false;
  const float bottom = max_of(box[0], kept[0]);
  const float top = min_of(box[2], kept[2]);
  if (top <= bottom) return false;
  const float intersection = __fmul_rn(__fsub_rn(right, left), __fsub_rn(top, bottom));
  if (intersection <= 0.0f) return false;
  const float union_area = __fsub_rn(__fadd_rn(box[4], kept[4]), intersection);
  return __fdiv_rn(intersection, union_area) > iou_threshold;
}

// One block per segment: sort keys (descending score; boxes at or below the score threshold,
// and NaN scores, last), box indices, the segment's offset and its candidate count.
__global__ void nms_keys_kernel(const float* scores, int64_t boxes, int64_t segments,
                                bool has_score_threshold, float score_threshold, uint32_t* keys,
                                int32_t* order, int64_t* offsets, int32_t* candidates) {
  const int64_t s = blockIdx.x;
  const float* segment_scores = scores + s * boxes;
  int count = 0;
  for (int64_t base = 0; base < boxes; base += blockDim.x) {
    const int64_t j = base + threadIdx.x;
    bool candidate = false;
    if (j < boxes) {
      const float score = segment_scores[j];
      candidate = !has_score_threshold || score > score_threshold;
      keys[s * boxes + j] = candidate ? ~float_key(score, 0u) : 0xffffffffu;
      order[s * boxes + j] = static_cast<int32_t>(j);
    }
    count += __syncthreads_count(candidate);
  }
  if (threadIdx.x == 0) {
    candidates[s] = count;
    offsets[s] = s * boxes;
    if (s == segments - 1) offsets[segments] = segments * boxes;
  }
}

// The first kept boxes of a segment stay in shared memory; later ones are read by index.
constexpr int kCachedKept = 1024;

// One block per segment: the greedy selection. Each candidate, in score order, is compared with
// every box kept so far by the block's threads at once; it is kept unless one suppresses it.
__global__ void nms_suppress_kernel(const float* corners, const int32_t* order,
                                    const int32_t* candidates, NmsParams params, int32_t* selected,
                                    int64_t* selected_counts) {
  __shared__ float cache[kCachedKept * 5];
  const int64_t s = blockIdx.x;
  const float* batch_corners = corners + s / params.classes * params.boxes * 5;
  const int32_t* sorted = order + s * params.boxes;
  int32_t* kept_boxes = selected + s * params.boxes;
  const int count = candidates[s];
  int64_t kept = 0;
  for (int p = 0; p < count && kept < params.max_per_class; ++p) {
    const int32_t box_index = sorted[p];
    const float* box = batch_corners + 5 * static_cast<int64_t>(box_index);
    bool suppressed = false;
    for (int64_t q = threadIdx.x; q < kept && !suppressed; q += blockDim.x) {
      const float* other =
          q < kCachedKept ? cache + 5 * q : batch_corners + 5 * static_cast<int64_t>(kept_boxes[q]);
      suppressed = suppressed_by(box, other, params.iou_threshold);
    }
    if (__syncthreads_or(suppressed)) continue;
    if (threadIdx.x == 0) {
      kept_boxes[kept] = box_index;
      if (kept < kCachedKept) {
        for (int c = 0; c < 5; ++c) cache[5 * kept + c] = box[c];
      }
    }
    ++kept;
    // The new entry is visible to every thread before the next comparisons.
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    selected_counts[s] = kept;
    if (s == 0) selected_counts[params.batches * params.classes] = 0;
  }
}

__global__ void nms_write_kernel(const int32_t* selected, const int64_t* selected_counts,
                                 const int64_t* output_offsets, NmsParams params, int64_t* out) {
  const int64_t s = blockIdx.x;
  const int64_t count = selected_counts[s];
  const int64_t base = output_offsets[s];
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    int64_t* row = out + 3 * (base + j);
    row[0] = s / params.classes;
    row[1] = s % params.classes;
    row[2] = selected[s * params.boxes + j];
  }
}

// ---- Unique ----

template <typename T, typename K>
__global__ void unique_keys_kernel(const T* input, int64_t count, K* keys, int64_t* order) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    keys[i] = sort_key(input[i]);
    order[i] = i;
  }
}

template <typename K>
__global__ void unique_heads_kernel(const K* keys, int64_t count, int64_t* heads) {
  for (int64_t p = first_index(); p < count; p += grid_stride()) {
    heads[p] = p == 0 || keys[p] != keys[p - 1] ? 1 : 0;
  }
}

__global__ void unique_starts_kernel(const int64_t* heads, const int64_t* group_of,
                                     const int64_t* order, int64_t count, int64_t* starts,
                                     int64_t* firsts) {
  for (int64_t p = first_index(); p < count; p += grid_stride()) {
    if (!heads[p]) continue;
    const int64_t g = group_of[p] - 1;
    starts[g] = p;
    // The stable sort keeps equal values in input order: the head is the first occurrence.
    firsts[g] = order[p];
  }
}

__global__ void iota_kernel(int64_t* values, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) values[i] = i;
}

__global__ void scatter_rank_kernel(const int64_t* group_by_first, int64_t groups, int64_t* rank) {
  for (int64_t i = first_index(); i < groups; i += grid_stride()) rank[group_by_first[i]] = i;
}

template <typename T>
__global__ void unique_groups_kernel(const T* input, const int64_t* starts, const int64_t* firsts,
                                     const int64_t* rank, int64_t count, int64_t groups, T* values,
                                     int64_t* indices, int64_t* counts) {
  for (int64_t g = first_index(); g < groups; g += grid_stride()) {
    const int64_t row = rank[g];
    const int64_t end = g + 1 < groups ? starts[g + 1] : count;
    if (values) values[row] = input[firsts[g]];
    if (indices) indices[row] = firsts[g];
    if (counts) counts[row] = end - starts[g];
  }
}

__global__ void unique_inverse_kernel(const int64_t* order, const int64_t* group_of,
                                      const int64_t* rank, int64_t count, int64_t* inverse) {
  for (int64_t p = first_index(); p < count; p += grid_stride()) {
    inverse[order[p]] = rank[group_of[p] - 1];
  }
}

}  // namespace

cudaError_t nonzero_select(const void* input, Elem elem, int64_t count, int64_t* selected,
                           int64_t* selected_count, void* temp, size_t& temp_bytes,
                           cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  by_elem(elem, [&](auto tag) {
    using T = decltype(tag);
    status = cub::DeviceSelect::If(temp, temp_bytes, thrust::counting_iterator<int64_t>(0),
                                   selected, selected_count, count,
                                   NonZeroAt<T>{static_cast<const T*>(input)}, stream);
  });
  return status;
}

void launch_nonzero_coordinates(const int64_t* selected, int64_t selected_count, const Dims& input,
                                int64_t* out, cudaStream_t stream) {
  if (selected_count == 0 || input.rank == 0) return;
  nonzero_coordinates_kernel<<<blocks_for(selected_count), kThreads, 0, stream>>>(
      selected, selected_count, input, out);
}

int sort_key_bytes(Elem elem) {
  switch (elem) {
    case Elem::kF16:
    case Elem::kBF16: return 4;  // keyed as float
    default: return elem_size(elem);
  }
}

cudaError_t top_k(const void* input, Elem elem, int64_t outer, int64_t dim, int64_t inner,
                  int64_t k, bool largest, void* values, int64_t* indices, SortBuffers& buffers,
                  cudaStream_t stream) {
  const int64_t rows = outer * inner;
  const int64_t items = rows * dim;
  cudaError_t status = cudaSuccess;
  by_elem(elem, [&](auto tag) {
    using T = decltype(tag);
    using K = KeyOf<T>;
    auto* keys_in = static_cast<K*>(buffers.keys_in);
    auto* keys_out = static_cast<K*>(buffers.keys_out);
    if (!buffers.temp) {
      status = sort_segments(keys_in, keys_out, buffers.order_in, buffers.order_out, items, rows,
                             buffers.segment_offsets, nullptr, buffers.temp_bytes, stream);
      return;
    }
    top_k_keys_kernel<T, K><<<blocks_for(items), kThreads, 0, stream>>>(
        static_cast<const T*>(input), dim, inner, largest, keys_in, buffers.order_in, items);
    segment_offsets_kernel<<<blocks_for(rows + 1), kThreads, 0, stream>>>(buffers.segment_offsets,
                                                                          rows, dim);
    status = sort_segments(keys_in, keys_out, buffers.order_in, buffers.order_out, items, rows,
                           buffers.segment_offsets, buffers.temp, buffers.temp_bytes, stream);
  });
  if (status != cudaSuccess || !buffers.temp) return status;
  const int64_t total = outer * k * inner;
  if (total == 0) return cudaSuccess;
  by_size(elem_size(elem), [&](auto tag) {
    using T = decltype(tag);
    top_k_write_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(input), buffers.order_out, dim, inner, k, static_cast<T*>(values),
        indices, total);
  });
  return cudaSuccess;
}

cudaError_t nms_select(const float* boxes, const float* scores, const NmsParams& params,
                       NmsBuffers& buffers, cudaStream_t stream) {
  const int64_t segments = params.batches * params.classes;
  const int64_t items = segments * params.boxes;
  if (!buffers.temp) {
    size_t sort_bytes = 0;
    size_t scan_bytes = 0;
    cudaError_t status =
        sort_segments(buffers.keys_in, buffers.keys_out, buffers.order_in, buffers.order_out, items,
                      segments, buffers.segment_offsets, nullptr, sort_bytes, stream);
    if (status != cudaSuccess) return status;
    status = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, buffers.selected_counts,
                                           buffers.output_offsets, segments + 1, stream);
    buffers.temp_bytes = std::max(sort_bytes, scan_bytes);
    return status;
  }
  const int64_t box_count = params.batches * params.boxes;
  nms_corners_kernel<<<blocks_for(box_count), kThreads, 0, stream>>>(
      boxes, box_count, params.center_point_box, buffers.corners);
  const auto grid = static_cast<unsigned>(segments);
  nms_keys_kernel<<<grid, kThreads, 0, stream>>>(
      scores, params.boxes, segments, params.has_score_threshold, params.score_threshold,
      buffers.keys_in, buffers.order_in, buffers.segment_offsets, buffers.candidates);
  size_t temp_bytes = buffers.temp_bytes;
  cudaError_t status =
      sort_segments(buffers.keys_in, buffers.keys_out, buffers.order_in, buffers.order_out, items,
                    segments, buffers.segment_offsets, buffers.temp, temp_bytes, stream);
  if (status != cudaSuccess) return status;
  nms_suppress_kernel<<<grid, kThreads, 0, stream>>>(buffers.corners, buffers.order_out,
                                                     buffers.candidates, params, buffers.selected,
                                                     buffers.selected_counts);
  temp_bytes = buffers.temp_bytes;
  return cub::DeviceScan::ExclusiveSum(buffers.temp, temp_bytes, buffers.selected_counts,
                                       buffers.output_offsets, segments + 1, stream);
}

void launch_nms_write(const NmsParams& params, const NmsBuffers& buffers, int64_t* out,
                      cudaStream_t stream) {
  const int64_t segments = params.batches * params.classes;
  nms_write_kernel<<<static_cast<unsigned>(segments), kThreads, 0, stream>>>(
      buffers.selected, buffers.selected_counts, buffers.output_offsets, params, out);
}

cudaError_t unique_groups(const void* input, Elem elem, int64_t count, UniqueBuffers& buffers,
                          cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  by_elem(elem, [&](auto tag) {
    using T = decltype(tag);
    using K = KeyOf<T>;
    auto* keys_in = static_cast<K*>(buffers.keys_in);
    auto* keys_out = static_cast<K*>(buffers.keys_out);
    if (!buffers.temp) {
      // One temporary storage for every cub call of both passes, sized for `count` items.
      size_t sort_bytes = 0, scan_bytes = 0, first_bytes = 0;
      status =
          cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_in, keys_out, buffers.order_in,
                                          buffers.order_out, count, 0, int{sizeof(K)} * 8, stream);
      if (status != cudaSuccess) return;
      status = cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, buffers.heads, buffers.group_of,
                                             count, stream);
      if (status != cudaSuccess) return;
      status = cub::DeviceRadixSort::SortPairs(nullptr, first_bytes, buffers.firsts,
                                               buffers.firsts_sorted, buffers.order_in,
                                               buffers.group_by_first, count, 0, 64, stream);
      buffers.temp_bytes = std::max({sort_bytes, scan_bytes, first_bytes});
      return;
    }
    unique_keys_kernel<T, K><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(input), count, keys_in, buffers.order_in);
    size_t temp_bytes = buffers.temp_bytes;
    status = cub::DeviceRadixSort::SortPairs(buffers.temp, temp_bytes, keys_in, keys_out,
                                             buffers.order_in, buffers.order_out, count, 0,
                                             int{sizeof(K)} * 8, stream);
    if (status != cudaSuccess) return;
    unique_heads_kernel<K>
        <<<blocks_for(count), kThreads, 0, stream>>>(keys_out, count, buffers.heads);
    temp_bytes = buffers.temp_bytes;
    status = cub::DeviceScan::InclusiveSum(buffers.temp, temp_bytes, buffers.heads,
                                           buffers.group_of, count, stream);
  });
  return status;
}

cudaError_t unique_write(const void* input, Elem elem, int64_t count, int64_t groups, bool sorted,
                         UniqueBuffers& buffers, void* values, int64_t* indices, int64_t* inverse,
                         int64_t* counts, cudaStream_t stream) {
  unique_starts_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      buffers.heads, buffers.group_of, buffers.order_out, count, buffers.starts, buffers.firsts);
  if (sorted) {
    iota_kernel<<<blocks_for(groups), kThreads, 0, stream>>>(buffers.rank, groups);
  } else {
    // Groups in order of first occurrence: sort them by their (distinct) first indices.
    iota_kernel<<<blocks_for(groups), kThreads, 0, stream>>>(buffers.order_in, groups);
    size_t temp_bytes = buffers.temp_bytes;
    const cudaError_t status = cub::DeviceRadixSort::SortPairs(
        buffers.temp, temp_bytes, buffers.firsts, buffers.firsts_sorted, buffers.order_in,
        buffers.group_by_first, groups, 0, 64, stream);
    if (status != cudaSuccess) return status;
    scatter_rank_kernel<<<blocks_for(groups), kThreads, 0, stream>>>(buffers.group_by_first, groups,
                                                                     buffers.rank);
  }
  by_size(elem_size(elem), [&](auto tag) {
    using T = decltype(tag);
    unique_groups_kernel<T><<<blocks_for(groups), kThreads, 0, stream>>>(
        static_cast<const T*>(input), buffers.starts, buffers.firsts, buffers.rank, count, groups,
        static_cast<T*>(values), indices, counts);
  });
  if (inverse) {
    unique_inverse_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        buffers.order_out, buffers.group_of, buffers.rank, count, inverse);
  }
  return cudaSuccess;
}

}  // namespace tandem::cuda
