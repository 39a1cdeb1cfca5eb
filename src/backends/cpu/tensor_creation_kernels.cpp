// Kernels of the tensor-making ops: Shape, Size, Constant, ConstantOfShape, Range, EyeLike.
// Shape inference folds most of them at import; these run when it could not (dynamic shapes,
// Constant nodes inside subgraphs).
#include <algorithm>
#include <cstring>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/tensor_kernels.h"
#include "ir/op_schema.h"

namespace tandem::cpu {
namespace {

void shape(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  // The output length was fixed by shape inference from start/end; only the offset is needed.
  const auto rank = inputs[0].rank();
  int64_t start = node.attr_int("start", 0);
  if (start < 0) start += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  auto* out = outputs[0].data<int64_t>();
  for (int64_t i = 0; i < outputs[0].numel(); ++i) out[i] = inputs[0].dim(start + i);
}

void size(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  outputs[0].data<int64_t>()[0] = inputs[0].numel();
}

void constant(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  const Tensor value = constant_node_value(node);
  std::memcpy(outputs[0].raw(), value.raw(), outputs[0].nbytes());
}

void constant_of_shape(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const Tensor* value = node.attr_tensor("value");
  dispatch_by_size(out.dtype(), [&]<typename T>() {
    T fill{};
    if (value) std::memcpy(&fill, value->raw(), sizeof(T));
    std::fill_n(out.data<T>(), out.numel(), fill);
  });
}

// Repeated addition, as ONNX Runtime computes Range.
template <typename T>
void fill_range(const std::span<const Tensor> inputs, Tensor& out) {
  T value = inputs[0].data<T>()[0];
  const T delta = inputs[2].data<T>()[0];
  T* to = out.data<T>();
  for (int64_t i = 0; i < out.numel(); ++i, value += delta) to[i] = value;
}

void range(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  switch (outputs[0].dtype()) {
    case DType::kFloat32: return fill_range<float>(inputs, outputs[0]);
    case DType::kFloat64: return fill_range<double>(inputs, outputs[0]);
    case DType::kInt16: return fill_range<int16_t>(inputs, outputs[0]);
    case DType::kInt32: return fill_range<int32_t>(inputs, outputs[0]);
    default: return fill_range<int64_t>(inputs, outputs[0]);
  }
}

void eye_like(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  std::memset(out.raw(), 0, out.nbytes());
  const int64_t rows = out.dim(0);
  const int64_t cols = out.dim(1);
  const int64_t k = std::clamp<int64_t>(node.attr_int("k", 0), -rows, cols);
  auto set_diagonal = [&]<typename T>(T one) {
    T* data = out.data<T>();
    for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) {
      data[i * cols + i + k] = one;
    }
  };
  switch (out.dtype()) {
    case DType::kFloat16: return set_diagonal(float_to_half(1.0f));
    case DType::kBFloat16: return set_diagonal(float_to_bfloat16(1.0f));
    default:
      return dispatch_numeric(out.dtype(), [&]<typename T>() { set_diagonal(static_cast<T>(1)); });
  }
}

}  // namespace

void register_creation_kernels(KernelRegistry& registry) {
  registry.add("Shape", shape, Elements::kAny);
  registry.add("Size", size, Elements::kAny);
  registry.add("Constant", constant, Elements::kAny);
  registry.add("ConstantOfShape", constant_of_shape, Elements::kAny);
  registry.add("Range", range);
  registry.add("EyeLike", eye_like);
}

}  // namespace tandem::cpu
