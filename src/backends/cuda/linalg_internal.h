#pragma once
// What the linalg family's files share: the fused activation of a node, the TF32 switch,
// library handles, cuDNN descriptors, plan caches, and each file's part of the op table.
#include <cudnn.h>

#include <cstdint>
#include <initializer_list>
#include <map>
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

// A cuDNN or cuBLASLt handle (descriptors, layouts), destroyed with its owner by `destroy`.
template <typename Handle, auto destroy>
struct HandleDeleter {
  void operator()(Handle handle) const { destroy(handle); }
};
template <typename Handle, auto destroy>
using OwnedHandle = std::unique_ptr<std::remove_pointer_t<Handle>, HandleDeleter<Handle, destroy>>;
using DnnTensor = OwnedHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;

// float32, float16, bfloat16 and float64 as cuDNN's types.
cudnnDataType_t dnn_type(DType dtype);
// A dense NCHW tensor descriptor.
DnnTensor make_dnn_tensor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w);
// Whether an NCHW tensor of these dims fits cuDNN's int-sized descriptors.
bool fits_dnn(int64_t n, int64_t c, int64_t h, int64_t w);

// Operand shapes as one plan-cache key (a null shape: an absent operand).
std::vector<int64_t> shape_key(std::initializer_list<const Shape*> shapes);

// The plan cached in `plans` under `key`, made by make() on first use.
template <typename Plan, typename Make>
Plan& cached_plan(std::map<std::vector<int64_t>, Plan>& plans, const std::vector<int64_t>& key,
                  Make&& make) {
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make()).first;
  return it->second;
}

std::vector<CudaOp> matmul_ops();  // linalg_matmul.cpp: MatMul, Gemm
std::vector<CudaOp> conv_ops();    // linalg_conv.cpp: Conv, ConvTranspose
std::vector<CudaOp> pool_ops();    // linalg_pool.cpp: MaxPool, AveragePool, Global*Pool

}  // namespace tandem::cuda
