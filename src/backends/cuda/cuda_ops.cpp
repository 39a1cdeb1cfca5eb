#include "backends/cuda/cuda_ops.h"

#include <algorithm>
#include <stdexcept>

namespace tandem::cuda {

const std::vector<CudaOp>& op_table() {
  static const std::vector<CudaOp> table = [] {
    std::vector<CudaOp> all;
    for (auto family :
         {&elementwise_ops, &reduction_ops, &tensor_ops, &data_dependent_ops, &linalg_ops}) {
      const std::vector<CudaOp> ops = family();
      all.insert(all.end(), ops.begin(), ops.end());
    }
    std::sort(all.begin(), all.end(), [](const CudaOp& a, const CudaOp& b) {
      return std::string_view(a.op_type) < std::string_view(b.op_type);
    });
    for (size_t i = 1; i < all.size(); ++i) {
      if (std::string_view(all[i - 1].op_type) == all[i].op_type) {
        throw std::logic_error(std::string("CUDA op listed twice: ") + all[i].op_type);
      }
    }
    return all;
  }();
  return table;
}

const CudaOp* find_op(std::string_view op_type) {
  const std::vector<CudaOp>& table = op_table();
  const auto it = std::lower_bound(
      table.begin(), table.end(), op_type,
      [](const CudaOp& op, std::string_view type) { return std::string_view(op.op_type) < type; });
  return it != table.end() && op_type == it->op_type ? &*it : nullptr;
}

std::string refusal(const Node& node, const Graph& graph) {
  const CudaOp* op = node.domain.empty() ? find_op(node.op_type) : nullptr;
  if (!op) return "no CUDA kernel for " + node.op_type;
  return op->refusal ? op->refusal(node, graph) : "";
}

}  // namespace tandem::cuda
