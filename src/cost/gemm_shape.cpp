#include "cost/gemm_shape.h"

namespace tandem {
namespace {

int64_t known(int64_t dim) { return dim < 0 ? 1 : dim; }

double known_product(const Shape& shape, size_t first, size_t last) {
  double product = 1;
  for (size_t i = first; i < last && i < shape.size(); ++i) {
    product *= static_cast<double>(known(shape[i]));
  }
  return product;
}

const Shape* input_shape(const Node& node, const Graph& graph, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] < 0) return nullptr;
  return &graph.values[node.inputs[i]].type.shape;
}

std::optional<GemmShape> matmul(const Shape& a, const Shape& b, const Shape& out) {
  if (a.empty() || b.empty()) return std::nullopt;
  GemmShape gemm;
  gemm.m = a.size() > 1 ? known(a[a.size() - 2]) : 1;
  gemm.k = known(a.back());
  gemm.n = b.size() > 1 ? known(b.back()) : 1;
  // The output is batch dims, then m unless A is a vector, then n unless B is a vector.
  const size_t matrix_dims = (a.size() > 1) + (b.size() > 1);
  gemm.batch = known_product(out, 0, out.size() >= matrix_dims ? out.size() - matrix_dims : 0);
  // Where B has no batch of its own, A's batch is more rows of one product: oneDNN and XLA run
  // a [2, 128, 384] by [384, 1536] MatMul as one 256-row GEMM.
  const bool b_batched = b.size() > 2 && known_product(b, 0, b.size() - 2) > 1;
  if (a.size() > 1 && !b_batched) {
    gemm.m = static_cast<int64_t>(gemm.batch * static_cast<double>(gemm.m));
    gemm.batch = 1;
  }
  return gemm;
}

std::optional<GemmShape> gemm(const Node& node, const Shape& a, const Shape& b) {
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  const size_t trans_a = node.attr_int("transA", 0) != 0;
  const size_t trans_b = node.attr_int("transB", 0) != 0;
  GemmShape shape;
  shape.m = known(a[trans_a]);
  shape.k = known(a[1 - trans_a]);
  shape.n = known(b[1 - trans_b]);
  return shape;
}

// Conv: x [N, C, spatial], w [Cout, C/group, kernel], y [N, Cout, output spatial].
std::optional<GemmShape> conv(const Node& node, const Shape& w, const Shape& y) {
  const int64_t group = node.attr_int("group", 1);
  if (w.size() < 3 || y.size() != w.size() || group < 1) return std::nullopt;
  const int64_t channels_per_group = known(w[1]);
  if (group > 1 && channels_per_group == 1) return std::nullopt;  // depthwise
  GemmShape shape;
  shape.batch = static_cast<double>(group);
  shape.m = static_cast<int64_t>(known(y[0]) * known_product(y, 2, y.size()));
  shape.n = known(w[0]) / group;
  shape.k = static_cast<int64_t>(channels_per_group * known_product(w, 2, w.size()));
  return shape;
}

// ConvTranspose: x [N, C, spatial], w [C, Cout/group, kernel]; each input pixel's channels
// times the weights give every kernel tap of every output channel, scattered afterwards.
std::optional<GemmShape> conv_transpose(const Node& node, const Shape& x, const Shape& w) {
  const int64_t group = node.attr_int("group", 1);
  if (w.size() < 3 || x.size() != w.size() || group < 1) return std::nullopt;
  const int64_t channels_per_group = known(w[0]) / group;
  if (group > 1 && channels_per_group == 1) return std::nullopt;  // depthwise
  GemmShape shape;
  shape.batch = static_cast<double>(group);
  shape.m = static_cast<int64_t>(known(x[0]) * known_product(x, 2, x.size()));
  shape.n = static_cast<int64_t>(known(w[1]) * known_product(w, 2, w.size()));
  shape.k = channels_per_group;
  return shape;
}

int64_t round_up(int64_t value, int64_t granule) {
  return (value + granule - 1) / granule * granule;
}

}  // namespace

std::optional<GemmShape> gemm_shape(const Node& node, const Graph& graph) {
  const Shape* a = input_shape(node, graph, 0);
  const Shape* b = input_shape(node, graph, 1);
  if (!node.domain.empty() || !a || !b || node.outputs.empty() || node.outputs[0] < 0) {
    return std::nullopt;
  }
  const Shape& out = graph.values[node.outputs[0]].type.shape;
  if (node.op_type == "MatMul") return matmul(*a, *b, out);
  if (node.op_type == "Gemm") return gemm(node, *a, *b);
  if (node.op_type == "Conv") return conv(node, *b, out);
  if (node.op_type == "ConvTranspose") return conv_transpose(node, *a, *b);
  return std::nullopt;
}

GemmShape padded(const GemmShape& shape, int64_t granule) {
  if (granule <= 1) return shape;
  GemmShape result = shape;
  result.m = round_up(shape.m, granule);
  result.n = round_up(shape.n, granule);
  result.k = round_up(shape.k, granule);
  return result;
}

bool is_depthwise_conv(const Node& node, const Graph& graph) {
  if (node.op_type != "Conv" || !node.domain.empty() || node.inputs.size() < 2 ||
      node.inputs[1] < 0 || node.attr_int("group", 1) < 2)
    return false;
  const Shape& w = graph.values[node.inputs[1]].type.shape;
  return w.size() >= 3 && w[1] == 1;
}

}  // namespace tandem
