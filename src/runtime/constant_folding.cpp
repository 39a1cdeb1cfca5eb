#include "runtime/constant_folding.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "backends/cpu/cpu_device.h"
#include "ir/error.h"
#include "ir/infer.h"
#include "ir/op_schema.h"
#include "runtime/executor.h"

namespace tandem {
namespace {

// Ops whose outputs may differ from run to run (Dropout does in training mode).
bool random(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Multinomial" || op == "Bernoulli" || op == "Dropout";
}

bool has_subgraph(const Node& node) {
  for (const auto& [key, attr] : node.attributes) {
    if (std::holds_alternative<std::shared_ptr<Graph>>(attr)) return true;
  }
  return false;
}

class Folder {
 public:
  Folder(Graph& graph, int64_t max_bytes) : graph_(graph), max_bytes_(max_bytes) {
    for (int out : graph.outputs) graph_outputs_.insert(out);
  }

  ConstantFolding run() {
    const auto start = std::chrono::steady_clock::now();
    std::vector<bool> folded(graph_.nodes.size(), false);
    std::set<int> read_by_folded;
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const Node& node = graph_.nodes[n];
      if (!foldable(node)) continue;
      const bool inputs_known = inputs_constant(node);
      std::optional<std::vector<Tensor>> values;
      if (!inputs_known) {
        values = inferred(node);
        if (!values) continue;
      }
      int64_t bytes = 0;
      for (int out : node.outputs) {
        if (out >= 0) bytes += static_cast<int64_t>(type_bytes(graph_.values[out].type));
      }
      if (bytes > max_bytes_) {
        ++stats_.over_cap;
        continue;
      }
      if (inputs_known) {
        values = evaluate(node);
        if (!values) {
          ++stats_.refused;
          continue;
        }
      }
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] >= 0) graph_.values[node.outputs[i]].constant = std::move((*values)[i]);
      }
      for (int in : node.inputs) {
        if (in >= 0) read_by_folded.insert(in);
      }
      folded[n] = true;
      ++stats_.nodes;
      stats_.bytes += bytes;
    }
    if (stats_.nodes > 0) {
      graph_.erase_nodes(folded);
      graph_.sort_topologically();
      drop_unread(read_by_folded);
    }
    stats_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats_;
  }

 private:
  // Whether the node's outputs may become constants: static, not the graph's, the same on
  // every run.
  bool foldable(const Node& node) const {
    if (node.inputs.empty() || !node.domain.empty() || random(node.op_type) || has_subgraph(node))
      return false;
    const OpSchema* schema = OpRegistry::instance().find(node.op_type);
    if (!schema || schema->data_dependent_shape) return false;
    for (int out : node.outputs) {
      if (out >= 0 && (graph_outputs_.count(out) || !is_static(graph_.values[out].type.shape)))
        return false;
    }
    return std::any_of(node.inputs.begin(), node.inputs.end(), [](int in) { return in >= 0; });
  }

  bool inputs_constant(const Node& node) const {
    return std::all_of(node.inputs.begin(), node.inputs.end(),
                       [&](int in) { return in < 0 || graph_.values[in].is_constant(); });
  }

  // The node's outputs as inference knows them from its inputs' types (the Shape or Size of a
  // value whose shape is static); nullopt where it leaves one unknown. Once a folded Resize makes
  // a feature map's shape static, the Shape -> Gather -> Concat chain feeding a detector head's
  // Reshape folds too, and the head's shapes become known to the cost model.
  std::optional<std::vector<Tensor>> inferred(const Node& node) const {
    std::vector<InferredOutput> outputs;
    try {
      outputs = infer_outputs(graph_, node);
    } catch (const InputError&) {
      return std::nullopt;
    }
    std::vector<Tensor> values(node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] < 0) continue;
      if (i >= outputs.size() || !outputs[i].value.defined()) return std::nullopt;
      values[i] = std::move(outputs[i].value);
    }
    return values;
  }

  // The node's outputs computed by the CPU's kernels on a graph of the node alone; nullopt
  // when a kernel refuses (the run will say why, as it would have without folding).
  std::optional<std::vector<Tensor>> evaluate(const Node& node) {
    Graph alone;
    alone.opset = graph_.opset;
    Node copy = node;
    for (int& in : copy.inputs) {
      if (in < 0) continue;
      const Value& value = graph_.values[in];
      const int id = alone.find_value(value.name);
      in = id >= 0 ? id : alone.add_value(value.name, value.type);
      alone.values[in].constant = value.constant;
    }
    for (int& out : copy.outputs) {
      if (out < 0) continue;
      const Value& value = graph_.values[out];
      out = alone.add_value(value.name, value.type);
      alone.outputs.push_back(out);
    }
    alone.nodes.push_back(std::move(copy));
    try {
      alone.sort_topologically();
      GraphExecutor executor(alone, host_);
      std::vector<Tensor> outputs = executor.run({});
      std::vector<Tensor> values(node.outputs.size());
      size_t next = 0;
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] >= 0) values[i] = outputs[next++].to_host();
      }
      return values;
    } catch (const InputError&) {
      return std::nullopt;
    }
  }

  // Constants that only folded nodes read are no longer needed by anything.
  void drop_unread(const std::set<int>& candidates) {
    const std::vector<int> last_use = graph_.last_uses();
    for (int id : candidates) {
      if (last_use[id] < 0 && !graph_outputs_.count(id)) graph_.values[id].constant = Tensor();
    }
  }

  Graph& graph_;
  int64_t max_bytes_;
  std::set<int> graph_outputs_;
  cpu::CpuDevice host_{"host"};
  ConstantFolding stats_;
};

bool has_dynamic_shapes(const Graph& graph) {
  for (const Value& value : graph.values) {
    if (value.type.dtype != DType::kUndefined && !is_static(value.type.shape)) return true;
  }
  return false;
}

}  // namespace

ConstantFolding fold_constants(Graph& graph, int64_t max_bytes) {
  ConstantFolding total;
  // A folded value can make shapes static that depended on it (a Resize whose scales are float
  // arithmetic on the input's shape): inference runs again, every node kept as a node so that
  // only folding here removes any, and what became computable folds in the next round.
  constexpr int kMaxRounds = 8;
  for (int round = 0; round < kMaxRounds; ++round) {
    const ConstantFolding folded = Folder(graph, max_bytes).run();
    total.nodes += folded.nodes;
    total.bytes += folded.bytes;
    total.over_cap = folded.over_cap;  // those left in the last round
    total.refused = folded.refused;
    total.seconds += folded.seconds;
    if (folded.nodes == 0 || !has_dynamic_shapes(graph)) break;
    const auto start = std::chrono::steady_clock::now();
    reinfer_keeping_nodes(graph);
    total.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return total;
}

InferencePreparation prepare_for_inference(Graph& graph) {
  InferencePreparation done;
  done.constants = fold_constants(graph);
  done.fusion = fuse_for_inference(graph);
  return done;
}

}  // namespace tandem
