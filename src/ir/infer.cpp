#include "ir/infer.h"

#include <algorithm>
#include <set>
#include <variant>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace tandem {
namespace {

const OpSchema& schema_for(const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") {
    throw InputError(node.label() + ": op domain '" + node.domain + "' is not supported");
  }
  const OpSchema* schema = OpRegistry::instance().find(node.op_type);
  if (!schema) throw InputError(node.label() + ": unsupported op '" + node.op_type + "'");
  return *schema;
}

// Gives a subgraph's outer-scope values the types (and constant contents) of the values they
// name in `scope`.
void bind_outer_scope(const Graph& scope, Graph& subgraph) {
  for (int id : subgraph.outer_scope_values()) {
    Value& captured = subgraph.values[id];
    const int outer = scope.find_value(captured.name);
    if (outer < 0) {
      throw InputError("subgraph reads '" + captured.name + "', which no enclosing graph defines");
    }
    captured.type = scope.values[outer].type;
    captured.constant = scope.values[outer].constant;
  }
}

bool has_subgraphs(const Graph& graph) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const Node& node) {
    return std::any_of(node.attributes.begin(), node.attributes.end(), [](const auto& attr) {
      return std::holds_alternative<std::shared_ptr<Graph>>(attr.second);
    });
  });
}

// A Loop body that declares a carried value with unknown dims (an exporter's "batch") but,
// given the value's static shape, hands back that same shape keeps it every iteration: the
// body is then inferred with it, so that its steps run with planned buffers and no shape
// inference per iteration (the zoo's RNN Loop ran 5-10% faster on one thread). Tried on a copy;
// false, with `body` untouched, where a carried value's shape is not invariant. Bodies with
// subgraphs of their own are left dynamic: the copy would share those.
bool infer_with_invariant_carried_shapes(const Graph& graph, const Node& loop, Graph& body) {
  if (has_subgraphs(body)) return false;
  Graph trial = body;
  bool refined = false;
  for (size_t i = 2; i < loop.inputs.size(); ++i) {
    Shape& formal = trial.values[trial.inputs[i]].type.shape;
    const Shape& actual = graph.values[loop.inputs[i]].type.shape;
    if (is_static(formal) || !is_static(actual) || formal.size() != actual.size()) continue;
    for (size_t axis = 0; axis < formal.size(); ++axis) {
      if (formal[axis] != kDynamicDim && formal[axis] != actual[axis]) return false;
    }
    formal = actual;
    refined = true;
  }
  if (!refined) return false;
  infer_subgraph(trial);
  // Body outputs: the condition, then the carried values in the inputs' order.
  for (size_t i = 2; i < loop.inputs.size(); ++i) {
    if (i - 1 >= trial.outputs.size()) return false;
    if (trial.values[trial.outputs[i - 1]].type.shape != trial.values[trial.inputs[i]].type.shape)
      return false;
  }
  body = std::move(trial);
  return true;
}

void infer_node_subgraphs(const Graph& graph, Node& node) {
  for (auto& [key, attr] : node.attributes) {
    auto* sub = std::get_if<std::shared_ptr<Graph>>(&attr);
    if (!sub) continue;
    Graph& subgraph = **sub;
    bind_outer_scope(graph, subgraph);
    if (node.op_type == "Loop") {
      // Body inputs: iteration number, condition, then the loop-carried values.
      if (subgraph.inputs.size() < 2 || subgraph.inputs.size() != node.inputs.size()) {
        throw InputError(node.label() +
                         ": the body must take 2 + N inputs for N loop-carried values");
      }
      subgraph.values[subgraph.inputs[0]].type = {DType::kInt64, {}};
      subgraph.values[subgraph.inputs[1]].type = {DType::kBool, {}};
      for (size_t i = 2; i < node.inputs.size(); ++i) {
        if (node.inputs[i] < 0)
          throw InputError(node.label() + ": loop-carried input " + std::to_string(i) +
                           " is missing");
        TensorType& formal = subgraph.values[subgraph.inputs[i]].type;
        const TensorType& actual = graph.values[node.inputs[i]].type;
        formal.dtype = actual.dtype;
        // A carried value may change shape between iterations unless the body declares it.
        if (formal.shape.size() != actual.shape.size())
          formal.shape.assign(actual.shape.size(), kDynamicDim);
      }
      if (infer_with_invariant_carried_shapes(graph, node, subgraph)) continue;
    }
    infer_subgraph(subgraph);
  }
}

void set_cost(const Graph& graph, Node& node, const OpSchema& schema) {
  std::vector<TensorType> inputs, outputs;
  for (int id : node.inputs) inputs.push_back(id >= 0 ? graph.values[id].type : TensorType{});
  for (int id : node.outputs) outputs.push_back(id >= 0 ? graph.values[id].type : TensorType{});
  node.cost =
      schema.cost ? schema.cost(node, inputs, outputs) : default_cost(node, inputs, outputs);
  for (const auto& [key, attr] : node.attributes) {
    if (const auto* sub = std::get_if<std::shared_ptr<Graph>>(&attr)) {
      for (const Node& inner : (*sub)->nodes) {
        node.cost.flops += inner.cost.flops;
        node.cost.bytes += inner.cost.bytes;
      }
    }
  }
}

void infer_nodes(Graph& graph, const std::set<std::string>& keep) {
  std::vector<bool> folded(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    Node& node = graph.nodes[n];
    folded[n] = infer_node(graph, node, keep.count(node.name) > 0);
  }
  // Folded nodes are gone: their outputs are constants now.
  graph.erase_nodes(folded);
  graph.sort_topologically();
}

}  // namespace

std::vector<InferredOutput> infer_outputs(const Graph& graph, const Node& node) {
  const OpSchema& schema = schema_for(node);
  const int arity = static_cast<int>(node.inputs.size());
  if (arity < schema.min_inputs || arity > schema.max_inputs) {
    throw InputError(node.label() + ": takes " + std::to_string(schema.min_inputs) + " to " +
                     std::to_string(schema.max_inputs) + " inputs, got " + std::to_string(arity));
  }
  std::vector<ValueInfo> inputs;
  for (int id : node.inputs) {
    if (id < 0) {
      inputs.emplace_back();
      continue;
    }
    const Value& v = graph.values[id];
    if (v.type.dtype == DType::kUndefined) {
      throw InputError(node.label() + ": input '" + v.name + "' has no known type");
    }
    inputs.push_back({v.type.dtype, v.type.shape, v.is_constant() ? &v.constant : nullptr});
  }
  InferContext context(node, graph.opset, inputs);
  std::vector<InferredOutput> outputs;
  try {
    outputs = schema.infer(context);
  } catch (const InputError& e) {
    // Errors from shared helpers (broadcasting, axes) don't know the node: name it here.
    const std::string what = e.what();
    if (what.rfind(node.label(), 0) == 0) throw;
    throw InputError(node.label() + ": " + what);
  }
  return outputs;
}

bool infer_node(Graph& graph, Node& node, bool keep) {
  const OpSchema& schema = schema_for(node);
  infer_node_subgraphs(graph, node);
  std::vector<InferredOutput> outputs = infer_outputs(graph, node);
  if (outputs.size() < node.outputs.size()) {
    throw InputError(node.label() + ": has " + std::to_string(node.outputs.size()) +
                     " outputs, the op produces at most " + std::to_string(outputs.size()));
  }
  bool all_known = !node.outputs.empty();
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const int id = node.outputs[i];
    if (id < 0) continue;
    Value& out = graph.values[id];
    out.type = {outputs[i].dtype, outputs[i].shape};
    if (outputs[i].value.defined() && !keep) {
      out.constant = outputs[i].value;
    } else {
      all_known = false;
    }
  }
  set_cost(graph, node, schema);
  return all_known;
}

void infer_subgraph(Graph& subgraph) { infer_nodes(subgraph, {}); }

void infer_graph(Graph& graph, const std::set<std::string>& keep) {
  for (int id : graph.inputs) {
    const Value& v = graph.values[id];
    if (!is_static(v.type.shape)) {
      throw InputError("input '" + v.name + "' has shape " + shape_str(v.type.shape) +
                       ": bind its dimensions with --dim or --shape");
    }
    numel(v.type.shape);  // rejects absurd sizes before anything is allocated
  }
  infer_nodes(graph, keep);
}

void reinfer_keeping_nodes(Graph& graph) {
  std::set<std::string> every_node;
  for (const Node& node : graph.nodes) every_node.insert(node.name);
  infer_graph(graph, every_node);
}

}  // namespace tandem
