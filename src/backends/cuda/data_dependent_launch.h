#pragma once
// Launchers of the ops whose results depend on input contents: NonZero, TopK,
// NonMaxSuppression and Unique. Calls that use cub take its temporary storage in two phases: called
// with temp == nullptr they only set temp_bytes (launching nothing); called again with that much
// device memory they run. They return cub's status.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

// NonZero, first pass: the linear indices of the non-zero elements of `input` (`count` elements
// of `elem`; floats compare by value, so -0.0 is zero and NaN is not), in order, into
// `selected` (room for `count`), and how many into *selected_count.
cudaError_t nonzero_select(const void* input, Elem elem, int64_t count, int64_t* selected,
                           int64_t* selected_count, void* temp, size_t& temp_bytes,
                           cudaStream_t stream);
// NonZero, second pass: out[d * selected_count + k] = coordinate d of selected[k] in the dense
// shape `input`.
void launch_nonzero_coordinates(const int64_t* selected, int64_t selected_count, const Dims& input,
                                int64_t* out, cudaStream_t stream);

// Device buffers of a segmented sort of `items` (key, position) pairs: keys of
// sort_key_bytes(elem) bytes each, positions as int32, and segments + 1 offsets.
struct SortBuffers {
  void* keys_in = nullptr;
  void* keys_out = nullptr;
  int32_t* order_in = nullptr;
  int32_t* order_out = nullptr;
  int64_t* segment_offsets = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
};
int sort_key_bytes(Elem elem);

// TopK along the middle axis of input viewed as [outer, dim, inner]: values and int64 indices
// as [outer, k, inner], ordered by value (descending when `largest`), the lower index first
// among equal values; NaN ranks above every number. Sorts every row whole (stable radix sort
// of order-preserving integer keys); dim must fit int32.
cudaError_t top_k(const void* input, Elem elem, int64_t outer, int64_t dim, int64_t inner,
                  int64_t k, bool largest, void* values, int64_t* indices, SortBuffers& buffers,
                  cudaStream_t stream);

struct NmsParams {
  int64_t batches = 0;
  int64_t classes = 0;
  int64_t boxes = 0;
  bool center_point_box = false;
  int64_t max_per_class = 0;  // in [1, boxes]
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
};

// One segment per (batch, class), `segments` = batches * classes, each over `boxes` boxes.
struct NmsBuffers {
  float* corners = nullptr;            // batches * boxes * 5: y_min, x_min, y_max, x_max, area
  uint32_t* keys_in = nullptr;         // segments * boxes
  uint32_t* keys_out = nullptr;        // segments * boxes
  int32_t* order_in = nullptr;         // segments * boxes
  int32_t* order_out = nullptr;        // segments * boxes: box indices by descending score
  int64_t* segment_offsets = nullptr;  // segments + 1
  int32_t* candidates = nullptr;       // segments: boxes above the score threshold
  int32_t* selected = nullptr;         // segments * boxes: kept box indices, in selection order
  int64_t* selected_counts = nullptr;  // segments + 1 (the last is 0)
  int64_t* output_offsets = nullptr;   // segments + 1: exclusive sum; the last is the total
  void* temp = nullptr;
  size_t temp_bytes = 0;
};

// NonMaxSuppression up to the count: sorts each segment's candidates by score (descending, the
// lower index first among equal scores, as ONNX Runtime does), suppresses greedily (one block
// per segment) and sums the kept counts into output_offsets.
cudaError_t nms_select(const float* boxes, const float* scores, const NmsParams& params,
                       NmsBuffers& buffers, cudaStream_t stream);
// Writes the [total, 3] int64 selected triplets (batch, class, box): by batch, class, then
// selection order.
void launch_nms_write(const NmsParams& params, const NmsBuffers& buffers, int64_t* out,
                      cudaStream_t stream);

// Unique over every element (no axis). Buffers of `count` entries each.
struct UniqueBuffers {
  void* keys_in = nullptr;  // keys of sort_key_bytes(elem) bytes
  void* keys_out = nullptr;
  int64_t* order_in = nullptr;
  int64_t* order_out = nullptr;       // input indices by value, the lower first among equals
  int64_t* heads = nullptr;           // 1 where a group of equal values starts in that order
  int64_t* group_of = nullptr;        // 1 + the group of each sorted position
  int64_t* starts = nullptr;          // per group: its first sorted position
  int64_t* firsts = nullptr;          // per group: its lowest input index
  int64_t* firsts_sorted = nullptr;   // unsorted output: the firsts in order
  int64_t* group_by_first = nullptr;  // unsorted output: the groups in order of first occurrence
  int64_t* rank = nullptr;            // per group: its row in the outputs
  void* temp = nullptr;
  size_t temp_bytes = 0;
};

// Unique, first pass: sorts the elements and numbers the groups of equal values (floats:
// -0.0 equals 0.0, every NaN is one value, above all numbers); group_of[count - 1] is then
// the number of groups.
cudaError_t unique_groups(const void* input, Elem elem, int64_t count, UniqueBuffers& buffers,
                          cudaStream_t stream);
// Unique, second pass, once the number of groups is known: the unique values, the index of
// each one's first occurrence, the inverse indices and the counts, ordered by value when
// `sorted`, else by first occurrence.
cudaError_t unique_write(const void* input, Elem elem, int64_t count, int64_t groups, bool sorted,
                         UniqueBuffers& buffers, void* values, int64_t* indices, int64_t* inverse,
                         int64_t* counts, cudaStream_t stream);

}  // namespace tandem::cuda
