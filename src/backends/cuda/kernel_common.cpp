#include "backends/cuda/kernel_common.h"

#include "backends/cuda/cuda_context.h"
#include "ir/error.h"

namespace tandem::cuda {

std::optional<Elem> elem_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return Elem::kF32;
    case DType::kFloat16: return Elem::kF16;
    case DType::kBFloat16: return Elem::kBF16;
    case DType::kFloat64: return Elem::kF64;
    case DType::kInt64: return Elem::kI64;
    case DType::kInt32: return Elem::kI32;
    case DType::kInt8: return Elem::kI8;
    case DType::kUInt8: return Elem::kU8;
    case DType::kBool: return Elem::kBool;
    default: return std::nullopt;
  }
}

Elem require_elem(DType dtype, const Node& node) {
  if (const auto elem = elem_of(dtype)) return *elem;
  throw InputError(node.label() + ": no CUDA kernel for " + std::string(dtype_name(dtype)));
}

Elem input_elem(const KernelSpec& spec, size_t index) {
  return require_elem(spec.input_types[index].dtype, spec.node);
}

bool has_input(const Node& node, size_t index) {
  return index < node.inputs.size() && node.inputs[index] >= 0;
}

int64_t extent_of(const Shape& shape, size_t first, size_t end) {
  int64_t count = 1;
  for (size_t d = first; d < end; ++d) count *= shape[d];
  return count;
}

void copy_device(CudaContext& context, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context.stream()),
        "cudaMemcpyAsync");
}

void copy_tensor(const Tensor& from, const Tensor& to, CudaContext& context) {
  copy_device(context, to.raw(), from.raw(), to.nbytes());
}

Dims contiguous(const Shape& shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank)) {
    throw InputError("rank " + std::to_string(shape.size()) + " is above the CUDA kernels' " +
                     std::to_string(kMaxRank));
  }
  Dims dims;
  dims.rank = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = dims.rank - 1; d >= 0; --d) {
    dims.size[d] = shape[static_cast<size_t>(d)];
    dims.stride[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  return dims;
}

Dims broadcast_to(const Shape& from, const Shape& to) {
  const Dims dense = contiguous(from);
  Dims dims = contiguous(to);
  const int offset = dims.rank - dense.rank;
  for (int d = 0; d < dims.rank; ++d) {
    const int source = d - offset;
    dims.stride[d] = source < 0 || dense.size[source] == 1 ? 0 : dense.stride[source];
  }
  return dims;
}

DType input_dtype(const Node& node, const Graph& graph, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] < 0) return DType::kUndefined;
  return graph.values[static_cast<size_t>(node.inputs[i])].type.dtype;
}

std::string dtype_refusal(const Node& node, const Graph& graph,
                          std::initializer_list<DType> allowed) {
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[static_cast<size_t>(id)];
      if (value.type.dtype == DType::kUndefined) continue;
      bool ok = false;
      for (DType dtype : allowed) ok = ok || dtype == value.type.dtype;
      if (!ok) return std::string(dtype_name(value.type.dtype)) + " " + value.name;
    }
  }
  return "";
}

std::string rank_refusal(const Node& node, const Graph& graph) {
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[static_cast<size_t>(id)];
      if (value.type.shape.size() > static_cast<size_t>(kMaxRank)) {
        return "rank " + std::to_string(value.type.shape.size()) + " of " + value.name +
               " (the CUDA kernels take up to " + std::to_string(kMaxRank) + ")";
      }
    }
  }
  return "";
}

}  // namespace tandem::cuda
