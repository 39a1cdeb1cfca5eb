#pragma once
// The CUDA backend's ops, in families: for each op type, what it accepts and how its kernel is
// made. The backend's support check and its compile() both read this one table (cuda_ops.cpp),
// so the planner never places a node the kernels would refuse.
#include <memory>
#include <string>
#include <vector>

#include "backends/device.h"

namespace tandem::cuda {

class CudaContext;

struct CudaOp {
  const char* op_type;
  // Why this node cannot run on the CUDA backend ("float64 input", "mode cubic"), or "".
  // Called by the planner with the whole graph; shapes may be dynamic.
  std::string (*refusal)(const Node& node, const Graph& graph);
  // The kernel for one node; may throw InputError naming the node.
  std::unique_ptr<Kernel> (*make)(const KernelSpec& spec, CudaContext& context);
};

// Each family in its own files; cuda_ops.cpp joins them.
std::vector<CudaOp> elementwise_ops();     // elementwise.cpp: unary, binary, Where, Cast...
std::vector<CudaOp> reduction_ops();       // reduction.cpp: Reduce*, ArgMax, Softmax, norms
std::vector<CudaOp> tensor_ops();          // tensor.cpp: layout, indexing, creation
std::vector<CudaOp> data_dependent_ops();  // data_dependent.cpp: NonZero, TopK, NMS
std::vector<CudaOp> linalg_ops();          // linalg.cpp: MatMul/Gemm (cuBLASLt), Conv, pools

// The whole table, by op type.
const std::vector<CudaOp>& op_table();
const CudaOp* find_op(std::string_view op_type);

}  // namespace tandem::cuda

namespace tandem::cuda {

// Why the CUDA backend cannot run `node` of `graph` ("no CUDA kernel for Unique", the op's own
// refusal), or "" when it can.
std::string refusal(const Node& node, const Graph& graph);

}  // namespace tandem::cuda
