#include "ir/op_schema.h"
#include "ir/ops/families.h"

namespace tandem {
namespace {

const Graph& subgraph(const InferContext& ctx, std::string_view attr) {
  std::shared_ptr<Graph> graph = ctx.node().attr_graph(attr);
  if (!graph) ctx.fail("attribute '" + std::string(attr) + "' (a graph) is missing");
  return *graph;
}

// The type two values of one output can both have: equal dims stay, others become dynamic.
Shape merge_shapes(const InferContext& ctx, const Shape& a, const Shape& b) {
  if (a.size() != b.size()) {
    ctx.fail("branches give an output ranks " + std::to_string(a.size()) + " and " +
             std::to_string(b.size()));
  }
  Shape merged(a.size());
  for (size_t i = 0; i < a.size(); ++i) merged[i] = a[i] == b[i] ? a[i] : kDynamicDim;
  return merged;
}

std::vector<InferredOutput> infer_if(const InferContext& ctx) {
  const ValueInfo& cond = ctx.input(0);
  if (cond.dtype != DType::kBool || numel(cond.shape) != 1)
    ctx.fail("the condition must be one bool");
  const Graph& then_branch = subgraph(ctx, "then_branch");
  const Graph& else_branch = subgraph(ctx, "else_branch");
  if (then_branch.outputs.size() != else_branch.outputs.size()) {
    ctx.fail("then_branch and else_branch have different output counts");
  }
  std::vector<InferredOutput> outputs;
  for (size_t i = 0; i < then_branch.outputs.size(); ++i) {
    const TensorType& a = then_branch.values[then_branch.outputs[i]].type;
    const TensorType& b = else_branch.values[else_branch.outputs[i]].type;
    if (a.dtype != b.dtype)
      ctx.fail("branches give output " + std::to_string(i) + " different dtypes");
    outputs.push_back({a.dtype, merge_shapes(ctx, a.shape, b.shape), {}});
  }
  return outputs;
}

std::vector<InferredOutput> infer_loop(const InferContext& ctx) {
  const Graph& body = subgraph(ctx, "body");
  const size_t carried = ctx.num_inputs() - 2;
  if (body.outputs.size() < 1 + carried) {
    ctx.fail("the body must return the condition and " + std::to_string(carried) +
             " loop-carried values");
  }
  if (ctx.has_input(0) && (ctx.input(0).dtype != DType::kInt64 || numel(ctx.input(0).shape) != 1)) {
    ctx.fail("the trip count must be one int64");
  }
  if (ctx.has_input(1) && (ctx.input(1).dtype != DType::kBool || numel(ctx.input(1).shape) != 1)) {
    ctx.fail("the condition must be one bool");
  }
  std::vector<InferredOutput> outputs;
  for (size_t i = 0; i < carried; ++i) {
    const ValueInfo& initial = ctx.input(2 + i);
    const TensorType& next = body.values[body.outputs[1 + i]].type;
    if (next.dtype != initial.dtype)
      ctx.fail("loop-carried value " + std::to_string(i) + " changes dtype");
    outputs.push_back({initial.dtype, merge_shapes(ctx, initial.shape, next.shape), {}});
  }
  for (size_t i = 1 + carried; i < body.outputs.size(); ++i) {
    const TensorType& scanned = body.values[body.outputs[i]].type;
    Shape shape{kDynamicDim};  // one slice per iteration; the count is known only at run time
    shape.insert(shape.end(), scanned.shape.begin(), scanned.shape.end());
    outputs.push_back({scanned.dtype, shape, {}});
  }
  return outputs;
}

// Control flow moves no data itself; its cost is that of its subgraphs (added by inference).
OpCost no_cost(const Node&, std::span<const TensorType>, std::span<const TensorType>) { return {}; }

}  // namespace

void register_control_flow_ops(OpRegistry& registry) {
  registry.add({.name = "If",
                .min_inputs = 1,
                .max_inputs = 1,
                .infer = infer_if,
                .cost = no_cost,
                .data_dependent_shape = true});
  registry.add({.name = "Loop",
                .min_inputs = 2,
                .max_inputs = 1 << 16,
                .infer = infer_loop,
                .cost = no_cost,
                .data_dependent_shape = true});
}

}  // namespace tandem
