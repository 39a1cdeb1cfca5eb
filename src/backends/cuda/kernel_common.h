#pragma once
// Helpers the CUDA op families share: element types, strided views, dtype refusals, device
// copies and the op table's make.
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/launch_common.h"
#include "ir/graph.h"

namespace tandem::cuda {

// The element type a CUDA kernel computes `dtype` in; nullopt for int16 and undefined.
std::optional<Elem> elem_of(DType dtype);
// As elem_of, throwing InputError naming the node when there is none.
Elem require_elem(DType dtype, const Node& node);
// The element type of a kernel's input `index`, as require_elem.
Elem input_elem(const KernelSpec& spec, size_t index);

// Whether the node has input `index` (optional inputs may be left out).
bool has_input(const Node& node, size_t index);
// Element count of shape[first, end).
int64_t extent_of(const Shape& shape, size_t first, size_t end);

// A dense row-major view of `shape` (rank at most kMaxRank, else InputError).
Dims contiguous(const Shape& shape);
// `from`, broadcast numpy-style to `to`: dims aligned on the right, stride 0 where `from` has
// extent 1 (or lacks the dim). `to` must be a broadcast of `from`.
Dims broadcast_to(const Shape& from, const Shape& to);

// The dtype of a node's i-th input in `graph` (kUndefined when absent).
DType input_dtype(const Node& node, const Graph& graph, size_t i);

// "float64 input X" when any present input or output of `node` has a dtype outside `allowed`,
// else "". For refusal functions.
std::string dtype_refusal(const Node& node, const Graph& graph,
                          std::initializer_list<DType> allowed);
// A refusal when any input or output has rank above kMaxRank, else "".
std::string rank_refusal(const Node& node, const Graph& graph);

// Float types the CUDA kernels compute in, and every type they move.
inline constexpr std::initializer_list<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16,
                                                             DType::kBFloat16, DType::kFloat64};
inline constexpr std::initializer_list<DType> kNumericTypes = {
    DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
    DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};

// Copies `bytes` between two device buffers on the context's stream.
void copy_device(CudaContext& context, void* dst, const void* src, size_t bytes);
// Copies device tensor `from` into `to`, of the same size.
void copy_tensor(const Tensor& from, const Tensor& to, CudaContext& context);

// An op table's make for the kernels built from the spec and the context alone.
template <typename K>
std::unique_ptr<Kernel> make_kernel(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<K>(spec, context);
}

}  // namespace tandem::cuda
