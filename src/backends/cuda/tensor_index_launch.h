#pragma once
// Launchers of the indexing kernels: Gather, GatherElements, GatherND, ScatterND,
// ScatterElements, OneHot, EmbeddingBag. Indices are known only on the device, so they are not
// range-checked as the CPU does (which throws): negative ones wrap as ONNX says, and an index out
// of range reads 0 (gathers) or is skipped (scatters) instead of touching memory outside the
// tensor.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

// Gather along one axis: data as [outer, dim, inner], dst as [outer, count, inner] where
// `count` is the number of indices (int32 or int64 by `index_elem`).
void launch_gather(const void* data, const void* indices, Elem index_elem, void* dst, int64_t outer,
                   int64_t dim, int64_t inner, int64_t count, int elem_bytes, cudaStream_t stream);

// EmbeddingBag over a float32 table of [rows, width]: bag b sums (or averages) the rows that
// indices[starts[b]:ends[b]] name (Slice's rules for the bounds; indices, starts and ends all
// of `index_elem`); `length` is the number of indices.
void launch_embedding_bag(const float* table, const void* indices, const void* starts,
                          const void* ends, Elem index_elem, float* dst, int64_t rows,
                          int64_t width, int64_t length, int64_t bags, bool mean,
                          cudaStream_t stream);

// GatherElements / ScatterElements: `size` is the shape of indices (and of the gathered output
// or the updates), `data_size` and `data_stride` the data's; `axis` is where indices apply.
struct ElementsLayout {
  int rank = 0;
  int axis = 0;
  int64_t size[kMaxRank] = {};
  int64_t data_size[kMaxRank] = {};
  int64_t data_stride[kMaxRank] = {};
};
void launch_gather_elements(const void* data, const void* indices, Elem index_elem, void* dst,
                            const ElementsLayout& layout, int elem_bytes, cudaStream_t stream);
// `out` already holds a copy of the data; reduction none (later duplicates win in no set order).
void launch_scatter_elements(void* out, const void* indices, Elem index_elem, const void* updates,
                             const ElementsLayout& layout, int elem_bytes, cudaStream_t stream);

// GatherND / ScatterND: `tuples` int64 index tuples of `depth` coordinates into the data dims
// dim[0..depth) (those after the batch dims), whose strides are `stride`; each selects a slice of
// `slice` elements. Tuple t is in batch t / per_batch, whose data starts at batch * batch_stride.
struct TupleLayout {
  int depth = 0;
  int64_t dim[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t tuples = 0;
  int64_t per_batch = 1;
  int64_t batch_stride = 0;
  int64_t slice = 1;
};
void launch_gather_nd(const void* data, const int64_t* indices, void* dst,
                      const TupleLayout& layout, int elem_bytes, cudaStream_t stream);
// `out` already holds a copy of the data; reduction none.
void launch_scatter_nd(void* out, const int64_t* indices, const void* updates,
                       const TupleLayout& layout, int elem_bytes, cudaStream_t stream);

// OneHot: dst as [outer, depth, inner] of values[0] (off) or values[1] (on, where the class of
// indices[outer, inner] is the middle index); classes are indices of any numeric `index_elem`
// truncated to integers, negative ones counted from depth.
void launch_one_hot(const void* indices, Elem index_elem, const void* values, void* dst,
                    int64_t outer, int64_t depth, int64_t inner, int elem_bytes,
                    cudaStream_t stream);

}  // namespace tandem::cuda
