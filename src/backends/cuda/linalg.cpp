// The linalg family: MatMul and Gemm through cuBLASLt, Conv through cuDNN, pooling; the
// pieces its files share.
#include <cstdlib>
#include <limits>
#include <string_view>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/linalg_internal.h"
#include "ir/error.h"

namespace tandem::cuda {

Activation fused_activation(const Node& node) {
  const std::string name = node.attr_string("activation", "");
  if (name.empty()) return {};
  struct Default {
    std::string_view name;
    ActivationKind kind;
    float alpha, beta;
  };
  // Defaults follow the ONNX ops of the same name (as the CPU backend's FusedActivation).
  static constexpr Default kDefaults[] = {
      {"Relu", ActivationKind::kRelu, 0, 0},
      {"LeakyRelu", ActivationKind::kLeakyRelu, 0.01f, 0},
      {"Clip", ActivationKind::kClip, std::numeric_limits<float>::lowest(),
       std::numeric_limits<float>::max()},
      {"HardSwish", ActivationKind::kHardSwish, 0, 0},
      {"HardSigmoid", ActivationKind::kHardSigmoid, 0.2f, 0.5f},
      {"Sigmoid", ActivationKind::kSigmoid, 0, 0},
      {"Tanh", ActivationKind::kTanh, 0, 0},
      {"Gelu", ActivationKind::kGelu, 0, 0}};
  for (const Default& d : kDefaults) {
    if (name != d.name) continue;
    return {d.kind, node.attr_float("activation_alpha", d.alpha),
            node.attr_float("activation_beta", d.beta)};
  }
  throw InputError(node.label() + ": unsupported fused activation '" + name + "'");
}

std::string activation_refusal(const Node& node) {
  try {
    fused_activation(node);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

bool tf32_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("TANDEM_CUDA_TF32");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return enabled;
}

cudnnDataType_t dnn_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return CUDNN_DATA_HALF;
    case DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::kFloat64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

DnnTensor make_dnn_tensor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w) {
  cudnnTensorDescriptor_t desc = nullptr;
  check(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
  DnnTensor owned(desc);
  check(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, dnn_type(dtype), static_cast<int>(n),
                                   static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)),
        "cudnnSetTensor4dDescriptor");
  return owned;
}

bool fits_dnn(int64_t n, int64_t c, int64_t h, int64_t w) {
  return n <= kMaxDnnValue && c <= kMaxDnnValue && h <= kMaxDnnValue && w <= kMaxDnnValue &&
         n * c <= kMaxDnnValue && n * c * h <= kMaxDnnValue && n * c * h * w <= kMaxDnnValue;
}

std::vector<int64_t> shape_key(std::initializer_list<const Shape*> shapes) {
  std::vector<int64_t> key;
  for (const Shape* shape : shapes) {
    if (!shape) {
      key.push_back(-1);
      continue;
    }
    key.push_back(static_cast<int64_t>(shape->size()));
    key.insert(key.end(), shape->begin(), shape->end());
  }
  return key;
}

std::vector<CudaOp> linalg_ops() {
  std::vector<CudaOp> ops = matmul_ops();
  for (auto* family : {conv_ops, pool_ops}) {
    const std::vector<CudaOp> more = family();
    ops.insert(ops.end(), more.begin(), more.end());
  }
  return ops;
}

}  // namespace tandem::cuda
