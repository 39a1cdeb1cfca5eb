#pragma once
// What the linalg family's files share: the fused activation of a node, the TF32 switch, and
// each file's part of the op table.
#include <string>
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

std::vector<CudaOp> matmul_ops();  // linalg_matmul.cpp: MatMul, Gemm
std::vector<CudaOp> conv_ops();    // linalg_conv.cpp: Conv, ConvTranspose
std::vector<CudaOp> pool_ops();    // linalg_pool.cpp: MaxPool, AveragePool, Global*Pool

}  // namespace tandem::cuda
