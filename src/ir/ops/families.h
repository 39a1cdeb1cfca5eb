#pragma once

namespace tandem {

class OpRegistry;

// One function per op family, each in its own file of this folder.
void register_elementwise_ops(OpRegistry& registry);  // unary, binary, Where, Cast, activations
void register_reduction_ops(
    OpRegistry& registry);                       // Reduce*, ArgMax/Min, Softmax, norms, BatchNorm
void register_linalg_ops(OpRegistry& registry);  // MatMul, Gemm, Conv, pooling
void register_tensor_ops(OpRegistry& registry);  // shape, indexing, data-dependent ops
void register_control_flow_ops(OpRegistry& registry);  // If, Loop

inline void register_all_op_families(OpRegistry& registry) {
  register_elementwise_ops(registry);
  register_reduction_ops(registry);
  register_linalg_ops(registry);
  register_tensor_ops(registry);
  register_control_flow_ops(registry);
}

}  // namespace tandem
