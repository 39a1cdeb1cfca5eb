#include "train/autodiff.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "ir/error.h"
#include "train/gradient_registry.h"

namespace tandem::train {
namespace {

bool carries_float(const Graph& graph, int id) {
  return id >= 0 && is_floating(graph.values[id].type.dtype);
}

// Which values depend on `sources` through differentiable inputs (carries), and which the loss
// depends on that way (reaches). A node without a rule passes dependence through every input, so
// that a path through it is found, and refused, rather than silently cut.
struct Paths {
  std::vector<bool> carries, reaches;
  bool on_path(int id) const { return id >= 0 && carries[id] && reaches[id]; }
};

Paths find_paths(const Graph& graph, int loss, const std::vector<int>& sources) {
  const GradientRegistry& registry = GradientRegistry::instance();
  Paths paths{std::vector<bool>(graph.values.size()), std::vector<bool>(graph.values.size())};
  for (int id : sources) paths.carries[id] = true;
  for (const Node& node : graph.nodes) {
    const GradientEntry* entry = registry.find(node.op_type);
    bool carried = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      if (id >= 0 && paths.carries[id] &&
          (!entry || entry->differentiable_input(static_cast<int>(i))))
        carried = true;
    }
    if (!entry) {
      for (int id : graph.values_read(node)) carried = carried || paths.carries[id];
    }
    for (int id : node.outputs)
      if (carries_float(graph, id)) paths.carries[id] = carried;
  }
  paths.reaches[loss] = true;
  for (auto it = graph.nodes.rbegin(); it != graph.nodes.rend(); ++it) {
    const Node& node = *it;
    bool reached = false;
    for (int id : node.outputs) reached = reached || (id >= 0 && paths.reaches[id]);
    if (!reached) continue;
    const GradientEntry* entry = registry.find(node.op_type);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      if (id >= 0 && (!entry || entry->differentiable_input(static_cast<int>(i))))
        paths.reaches[id] = true;
    }
    if (!entry) {
      for (int id : graph.values_read(node)) paths.reaches[id] = true;
    }
  }
  return paths;
}

std::string known_ops() {
  std::string list;
  for (const std::string& op : GradientRegistry::instance().op_types())
    list += (list.empty() ? "" : ", ") + op;
  return list;
}

}  // namespace

std::vector<int> values_loss_depends_on(const Graph& graph, int loss,
                                        const std::vector<int>& candidates) {
  const Paths paths = find_paths(graph, loss, candidates);
  std::vector<int> found;
  for (int id : candidates)
    if (paths.on_path(id)) found.push_back(id);
  return found;
}

// Recomputes forward values for the backward pass from kept ones (gradient checkpointing).
class Recomputation {
 public:
  // Keeps the outputs of every k-th cut of the forward pass (k about the square root of the
  // number of cuts), besides the graph's inputs and constants. A cut is a node whose outputs are
  // the only values crossing its position in the node order (a chain's every link, the residual
  // stream between transformer blocks): recomputation from a kept cut never reaches further back.
  Recomputation(Graph& graph, GraphBuilder& builder, size_t forward_nodes)
      : graph_(graph), builder_(builder), kept_(graph.values.size(), false) {
    std::vector<int> last_read(graph.values.size(), -1);
    for (size_t n = 0; n < forward_nodes; ++n)
      for (int id : graph.values_read(graph.nodes[n])) last_read[id] = static_cast<int>(n);
    for (int id : graph.outputs) last_read[id] = static_cast<int>(forward_nodes);
    std::vector<size_t> cuts;
    std::vector<int> crossing;  // values made so far and read after the current node
    for (size_t n = 0; n < forward_nodes; ++n) {
      const Node& node = graph.nodes[n];
      for (int id : node.outputs)
        if (id >= 0) {
          producer_[id] = n;
          crossing.push_back(id);
        }
      std::erase_if(crossing, [&](int id) { return last_read[id] <= static_cast<int>(n); });
      const bool cut =
          !crossing.empty() && std::all_of(crossing.begin(), crossing.end(), [&](int id) {
            return std::find(node.outputs.begin(), node.outputs.end(), id) != node.outputs.end();
          });
      if (cut) cuts.push_back(n);
    }
    const size_t every =
        std::max<size_t>(1, static_cast<size_t>(std::ceil(std::sqrt(cuts.size()))));
    for (size_t i = every - 1; i < cuts.size(); i += every)
      for (int id : graph.nodes[cuts[i]].outputs)
        if (id >= 0) kept_[id] = true;
  }

  // `value` as the backward pass reads it: itself when kept (or not made by a forward node),
  // else its recomputed copy.
  int operator()(int value) {
    if (value < 0 || kept_[value]) return value;
    auto made = producer_.find(value);
    if (made == producer_.end()) return value;
    auto done = copies_.find(value);
    if (done != copies_.end()) return done->second;
    const Node original = graph_.nodes[made->second];
    std::vector<int> inputs;
    for (int id : original.inputs) inputs.push_back((*this)(id));
    const std::vector<int> outputs = builder_.add_multi(
        original.op_type, inputs, original.attributes, static_cast<int>(original.outputs.size()));
    for (size_t i = 0; i < outputs.size(); ++i)
      if (original.outputs[i] >= 0) copies_[original.outputs[i]] = outputs[i];
    return copies_.at(value);
  }

 private:
  Graph& graph_;
  GraphBuilder& builder_;
  std::vector<bool> kept_;
  std::unordered_map<int, size_t> producer_;
  std::unordered_map<int, int> copies_;
};

std::vector<int> append_gradients(Graph& graph, int loss, const std::vector<int>& wrt,
                                  bool recompute, std::vector<int>* origins) {
  const GradientRegistry& registry = GradientRegistry::instance();
  const Paths paths = find_paths(graph, loss, wrt);
  const size_t forward_nodes = graph.nodes.size();
  GraphBuilder builder(graph, "grad");
  std::vector<int> grads(graph.values.size(), -1);
  const Value loss_value = graph.values[loss];  // a copy: the builder moves the values
  if (numel(loss_value.type.shape) != 1 || !is_floating(loss_value.type.dtype))
    throw InputError("the loss '" + loss_value.name + "' must be one float value");
  std::vector<int> origin(forward_nodes, -1);
  grads[loss] = builder.filled(1.0f, loss_value.type.shape, loss_value.type.dtype);
  origin.resize(graph.nodes.size(), graph.values[loss].producer);
  std::optional<Recomputation> recomputed;
  if (recompute) recomputed.emplace(graph, builder, forward_nodes);

  for (size_t n = forward_nodes; n-- > 0;) {
    // A copy: the rule appends nodes, which moves graph.nodes.
    const Node node = graph.nodes[n];
    std::vector<int> output_grads;
    bool any = false;
    for (int id : node.outputs) {
      const bool flows = id >= 0 && paths.on_path(id) && grads[id] >= 0;
      output_grads.push_back(flows ? grads[id] : -1);
      any = any || flows;
    }
    if (!any) continue;
    const GradientEntry* entry = registry.find(node.op_type);
    if (!entry) {
      throw InputError(node.label() + ": cannot differentiate: no gradient for " + node.op_type +
                       " (ops with gradients: " + known_ops() + ")");
    }
    std::vector<bool> wanted;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      wanted.push_back(paths.on_path(id) && entry->differentiable_input(static_cast<int>(i)));
    }
    // The rule reads the forward values as the backward pass has them (recomputed or kept).
    Node read = node;
    if (recomputed) {
      for (int& id : read.inputs) id = (*recomputed)(id);
      for (int& id : read.outputs) id = (*recomputed)(id);
    }
    GradientContext context(builder, std::move(read), output_grads, wanted);
    const std::vector<int> input_grads = entry->rule(context);
    for (size_t i = 0; i < node.inputs.size() && i < input_grads.size(); ++i) {
      const int id = node.inputs[i], grad = input_grads[i];
      if (grad < 0 || !wanted[i]) continue;
      if (graph.values[grad].type.shape != graph.values[id].type.shape) {
        throw std::logic_error(node.label() + ": gradient of input " + std::to_string(i) +
                               " has shape " + shape_str(graph.values[grad].type.shape) +
                               ", the input " + shape_str(graph.values[id].type.shape));
      }
      grads[id] = grads[id] < 0 ? grad : builder.sum(grads[id], grad);
    }
    origin.resize(graph.nodes.size(), static_cast<int>(n));
  }
  if (origins) *origins = std::move(origin);
  std::vector<int> result;
  for (int id : wrt) result.push_back(grads[id]);
  return result;
}

}  // namespace tandem::train
