// Lowering rules: MatMul, Gemm, Conv, BatchNormalization and pooling.
#include "backends/pjrt/lower_rules.h"

namespace tandem::pjrt {
namespace {

// ONNX MatMul (numpy matmul): batch dims broadcast, 1-D operands promoted and squeezed back.
void lower_matmul(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  HloValue a = context.input(node, 0);
  HloValue w = context.input(node, 1);
  const TensorType& out = context.output_type(node, 0);
  if (a.shape.size() == 1) a = b.reshape(a, {1, a.shape[0]});
  if (w.shape.size() == 1) w = b.reshape(w, {w.shape[0], 1});
  const size_t rank = std::max(a.shape.size(), w.shape.size());
  Shape batch;
  for (size_t i = 0; i + 2 < rank; ++i) {
    const auto dim = [&](const Shape& s) {
      const size_t offset = rank - s.size();
      return i < offset ? int64_t{1} : s[i - offset];
    };
    batch.push_back(std::max(dim(a.shape), dim(w.shape)));
  }
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = w.shape.back();
  Shape a_shape = batch, w_shape = batch, result_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  w_shape.insert(w_shape.end(), {k, n});
  result_shape.insert(result_shape.end(), {m, n});
  a = b.broadcast_to(a, a_shape);
  w = b.broadcast_to(w, w_shape);
  std::vector<int64_t> batch_dims;
  for (size_t i = 0; i < batch.size(); ++i) batch_dims.push_back(static_cast<int64_t>(i));
  std::string dims;
  for (size_t i = 0; i < batch_dims.size(); ++i) dims += (i ? ", " : "") + std::to_string(i);
  const int64_t r = static_cast<int64_t>(batch.size());
  const HloValue product = b.op(
      "dot_general", {a, w}, out.dtype, result_shape,
      "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [" + dims +
          "], rhs_batching_dimensions = [" + dims + "], lhs_contracting_dimensions = [" +
          std::to_string(r + 1) + "], rhs_contracting_dimensions = [" + std::to_string(r) + "]>");
  context.set_output(node, 0, apply_fused_activation(b, node, b.reshape(product, out.shape)));
}

}  // namespace

void add_linalg_rules(RuleTable& rules) { rules["MatMul"] = lower_matmul; }

}  // namespace tandem::pjrt
