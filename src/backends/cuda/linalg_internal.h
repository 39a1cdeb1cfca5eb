#pragma once
// What the linalg family's files share: the fused activation of a node, the TF32 switch,
// cuDNN descriptors, and each file's part of the op table.
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/linalg_launch.h"

namespace tandem::cuda {

// The activation graph fusion attached to a Conv, Gemm or MatMul node (attributes
// `activation`, `activation_alpha`, `activation_beta`), with the ONNX ops' defaults; kNone
// without one. Throws InputError naming the node for an unknown activation.
Activation fused_activation(const Node& node);
// Why fused_activation would throw for this node, or "".
std::string activation_refusal(const Node& node);

// TANDEM_CUDA_TF32=1 lets float32 MatMul, Gemm and Conv round their inputs to TF32 on tensor
// cores (about 10 mantissa bits, several times faster); by default they compute in exact fp32.
bool tf32_enabled();

// cuDNN's legacy API counts in int: tensors of at most this many elements, dims and window
// attributes up to it.
inline constexpr int64_t kMaxDnnValue = INT32_MAX;

// cuDNN descriptors, destroyed with their owners.
template <typename Handle, cudnnStatus_t (*destroy)(Handle)>
struct DnnDeleter {
  void operator()(Handle handle) const { destroy(handle); }
};
template <typename Handle, cudnnStatus_t (*destroy)(Handle)>
using DnnPtr = std::unique_ptr<std::remove_pointer_t<Handle>, DnnDeleter<Handle, destroy>>;
using DnnTensor = DnnPtr<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;

// float32, float16, bfloat16 and float64 as cuDNN's types.
cudnnDataType_t dnn_type(DType dtype);
// A dense NCHW tensor descriptor.
DnnTensor make_dnn_tensor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w);

std::vector<CudaOp> matmul_ops();  // linalg_matmul.cpp: MatMul, Gemm
std::vector<CudaOp> conv_ops();    // linalg_conv.cpp: Conv, ConvTranspose
std::vector<CudaOp> pool_ops();    // linalg_pool.cpp: MaxPool, AveragePool, Global*Pool

}  // namespace tandem::cuda
