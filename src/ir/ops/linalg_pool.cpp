#include <string>

#include "ir/error.h"
#include "ir/ops/linalg_internal.h"
#include "ir/ops/linalg_window.h"

namespace tandem {
namespace {

const ValueInfo& check_pool_input(const InferContext& ctx, bool allow_bytes) {
  const ValueInfo& x = ctx.input(0);
  const bool byte = x.dtype == DType::kInt8 || x.dtype == DType::kUInt8;
  if (!is_floating(x.dtype) && !(allow_bytes && byte)) {
    ctx.fail("unsupported dtype " + std::string(dtype_name(x.dtype)));
  }
  if (x.shape.size() < 3 || x.shape.size() > 5) {
    ctx.fail("input must have 1 to 3 spatial axes, got shape " + shape_str(x.shape));
  }
  return x;
}

int64_t flag_attr(const InferContext& ctx, std::string_view name) {
  const int64_t value = ctx.node().attr_int(name, 0);
  if (value != 0 && value != 1) ctx.fail("attribute '" + std::string(name) + "' must be 0 or 1");
  return value;
}

Shape pooled_shape(const InferContext& ctx, const ValueInfo& x) {
  const size_t rank = x.shape.size() - 2;
  const std::vector<int64_t> kernel = ctx.node().attr_ints("kernel_shape");
  if (kernel.size() != rank) {
    ctx.fail("kernel_shape must have " + std::to_string(rank) + " values");
  }
  const bool ceil_mode = flag_attr(ctx, "ceil_mode") == 1;
  const std::vector<int64_t> spatial(x.shape.begin() + 2, x.shape.end());
  const WindowGeometry g = resolve_window(ctx.node(), spatial, kernel, ceil_mode);
  for (size_t i = 0; i < rank; ++i) {
    // As ONNX Runtime: a window never lies wholly in the padding.
    if (g.pads_begin[i] >= g.extent(i) || g.pads_end[i] >= g.extent(i)) {
      ctx.fail("pads must be smaller than the kernel");
    }
  }
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), g.output.begin(), g.output.end());
  return out;
}

std::vector<InferredOutput> infer_max_pool(const InferContext& ctx) {
  const ValueInfo& x = check_pool_input(ctx, /*allow_bytes=*/true);
  flag_attr(ctx, "storage_order");
  const Shape out = pooled_shape(ctx, x);
  const size_t num_outputs = ctx.node().outputs.size();
  if (num_outputs < 1 || num_outputs > 2) ctx.fail("MaxPool has 1 or 2 outputs");
  std::vector<InferredOutput> outputs{{x.dtype, out, {}}};
  if (num_outputs == 2) outputs.push_back({DType::kInt64, out, {}});
  return outputs;
}

std::vector<InferredOutput> infer_average_pool(const InferContext& ctx) {
  const ValueInfo& x = check_pool_input(ctx, /*allow_bytes=*/false);
  flag_attr(ctx, "count_include_pad");
  return {{x.dtype, pooled_shape(ctx, x), {}}};
}

// One operation per kernel tap of every output element.
OpCost pool_cost(const Node& node, std::span<const TensorType> inputs,
                 std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  double taps = 1;
  for (int64_t k : node.attr_ints("kernel_shape")) taps *= static_cast<double>(k);
  cost.flops = known_product(outputs[0].shape) * taps;
  return cost;
}

std::vector<InferredOutput> infer_global_pool(const InferContext& ctx) {
  const ValueInfo& x = check_pool_input(ctx, /*allow_bytes=*/false);
  Shape out(x.shape.size(), 1);
  out[0] = x.shape[0];
  out[1] = x.shape[1];
  return {{x.dtype, out, {}}};
}

OpCost global_pool_cost(const Node& node, std::span<const TensorType> inputs,
                        std::span<const TensorType> outputs) {
  OpCost cost = default_cost(node, inputs, outputs);
  cost.flops = known_product(inputs[0].shape);
  return cost;
}

}  // namespace

void add_pool_schemas(OpRegistry& registry) {
  registry.add({.name = "MaxPool", .infer = infer_max_pool, .cost = pool_cost});
  registry.add({.name = "AveragePool", .infer = infer_average_pool, .cost = pool_cost});
  registry.add({.name = "GlobalMaxPool", .infer = infer_global_pool, .cost = global_pool_cost});
  registry.add({.name = "GlobalAveragePool", .infer = infer_global_pool, .cost = global_pool_cost});
}

}  // namespace tandem
