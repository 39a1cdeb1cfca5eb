#include <algorithm>
#include <array>
#include <string>

#include "ir/error.h"
#include "ir/ops/families.h"
#include "ir/ops/linalg_internal.h"

namespace tandem {

double known_product(const Shape& shape, size_t first_axis) {
  double product = 1;
  for (auto it = shape.begin() + static_cast<int64_t>(std::min(first_axis, shape.size()));
       it != shape.end(); ++it) {
    if (*it > 0) product *= static_cast<double>(*it);
  }
  return product;
}

void check_fused_activation(const InferContext& ctx, DType dtype) {
  const Node& node = ctx.node();
  if (!node.has("activation")) return;
  static constexpr std::array<std::string_view, 8> kActivations = {
      "Relu", "LeakyRelu", "Clip", "HardSwish", "HardSigmoid", "Sigmoid", "Tanh", "Gelu"};
  const std::string name = node.attr_string("activation", "");
  if (std::find(kActivations.begin(), kActivations.end(), name) == kActivations.end()) {
    ctx.fail("unsupported fused activation '" + name + "'");
  }
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    ctx.fail("a fused activation needs float32 or float64 operands");
  }
  node.attr_float("activation_alpha", 0);  // throws when present with the wrong type
  node.attr_float("activation_beta", 0);
}

namespace {

bool is_matmul_dtype(DType dtype) {
  return is_floating(dtype) || dtype == DType::kInt32 || dtype == DType::kInt64;
}

bool dims_conflict(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

std::vector<InferredOutput> infer_matmul(const InferContext& ctx) {
  const ValueInfo& a = ctx.input(0);
  const ValueInfo& b = ctx.input(1);
  if (a.dtype != b.dtype) ctx.fail("operands have different dtypes");
  if (!is_matmul_dtype(a.dtype)) ctx.fail("unsupported dtype " + std::string(dtype_name(a.dtype)));
  if (a.shape.empty() || b.shape.empty()) ctx.fail("operands must have rank 1 or more");
  // Numpy semantics: a 1-D operand becomes a matrix, and its added axis is dropped afterwards.
  const Shape a2 = a.shape.size() == 1 ? Shape{1, a.shape[0]} : a.shape;
  const Shape b2 = b.shape.size() == 1 ? Shape{b.shape[0], 1} : b.shape;
  if (dims_conflict(a2.back(), b2[b2.size() - 2])) {
    ctx.fail("inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  }
  Shape batch;
  try {
    batch = broadcast_shapes(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  } catch (const InputError& e) {
    ctx.fail(std::string("batch dimensions: ") + e.what());
  }
  check_fused_activation(ctx, a.dtype);
  Shape out = batch;
  if (a.shape.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.shape.size() > 1) out.push_back(b2.back());
  return {{a.dtype, out, {}}};
}

OpCost matmul_cost(const Node& node, std::span<const TensorType> inputs,
                   std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  const Shape& a = inputs[0].shape;
  const double k = a.back() > 0 ? static_cast<double>(a.back()) : 1.0;
  cost.flops = 2 * known_product(outputs[0].shape) * k;  // output elements times K
  return cost;
}

std::vector<InferredOutput> infer_gemm(const InferContext& ctx) {
  const ValueInfo& a = ctx.input(0);
  const ValueInfo& b = ctx.input(1);
  if (a.dtype != b.dtype) ctx.fail("operands have different dtypes");
  if (!is_matmul_dtype(a.dtype)) ctx.fail("unsupported dtype " + std::string(dtype_name(a.dtype)));
  if (a.shape.size() != 2 || b.shape.size() != 2) ctx.fail("A and B must be matrices");
  const Node& node = ctx.node();
  const int64_t trans_a = node.attr_int("transA", 0);
  const int64_t trans_b = node.attr_int("transB", 0);
  if ((trans_a != 0 && trans_a != 1) || (trans_b != 0 && trans_b != 1)) {
    ctx.fail("transA and transB must be 0 or 1");
  }
  node.attr_float("alpha", 1);
  node.attr_float("beta", 1);
  const int64_t m = a.shape[trans_a];
  const int64_t k = a.shape[1 - trans_a];
  if (dims_conflict(k, b.shape[trans_b])) {
    ctx.fail("inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  }
  const int64_t n = b.shape[1 - trans_b];
  if (ctx.has_input(2)) {
    const ValueInfo& c = ctx.input(2);
    if (c.dtype != a.dtype) ctx.fail("C has a different dtype");
    if (c.shape.size() > 2) ctx.fail("C must have rank 2 or less");
    const Shape out{m, n};
    for (size_t i = 0; i < c.shape.size(); ++i) {
      const int64_t target = out[2 - c.shape.size() + i];
      if (c.shape[i] != 1 && dims_conflict(c.shape[i], target)) {
        ctx.fail("C of shape " + shape_str(c.shape) + " does not broadcast to " + shape_str(out));
      }
    }
  }
  check_fused_activation(ctx, a.dtype);
  return {{a.dtype, {m, n}, {}}};
}

OpCost gemm_cost(const Node& node, std::span<const TensorType> inputs,
                 std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  // A node inference refused (no output, A not a matrix) has no product to count.
  if (inputs.empty() || outputs.empty() || inputs[0].shape.size() != 2) return cost;
  const Shape& a = inputs[0].shape;
  const int64_t k = a[node.attr_int("transA", 0) == 0 ? 1 : 0];
  cost.flops = 2 * known_product(outputs[0].shape) * (k > 0 ? static_cast<double>(k) : 1.0);
  return cost;
}

}  // namespace

void register_linalg_ops(OpRegistry& registry) {
  registry.add({.name = "MatMul",
                .min_inputs = 2,
                .max_inputs = 2,
                .infer = infer_matmul,
                .cost = matmul_cost});
  registry.add(
      {.name = "Gemm", .min_inputs = 2, .max_inputs = 3, .infer = infer_gemm, .cost = gemm_cost});
  add_conv_schemas(registry);
  add_pool_schemas(registry);
}

}  // namespace tandem
