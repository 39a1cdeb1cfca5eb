#include "cost/memory_footprint.h"

#include <algorithm>
#include <set>

#include "ir/op_schema.h"

namespace tandem {
namespace {

void add_constants(const Graph& graph, const std::vector<int>& values, std::set<const void*>& seen,
                   double& bytes);

// The constants a subgraph holds itself (its own initializers), recursively.
void add_subgraph_constants(const Node& node, std::set<const void*>& seen, double& bytes) {
  for (const auto& [key, attribute] : node.attributes) {
    const auto* subgraph = std::get_if<std::shared_ptr<Graph>>(&attribute);
    if (!subgraph || !*subgraph) continue;
    const Graph& inner = **subgraph;
    for (const Node& inner_node : inner.nodes) {
      add_constants(inner, inner_node.inputs, seen, bytes);
      add_subgraph_constants(inner_node, seen, bytes);
    }
  }
}

void add_constants(const Graph& graph, const std::vector<int>& values, std::set<const void*>& seen,
                   double& bytes) {
  for (int id : values) {
    if (id < 0 || !graph.values[id].is_constant()) continue;
    // Keyed by the value itself: a weight shared by several nodes is stored once.
    if (seen.insert(&graph.values[id]).second) {
      bytes += static_cast<double>(graph.values[id].constant.nbytes());
    }
  }
}

}  // namespace

double weights_bytes(const Graph& graph, std::span<const int> nodes) {
  std::set<const void*> seen;
  double bytes = 0;
  for (int n : nodes) {
    add_constants(graph, graph.values_read(graph.nodes[n]), seen, bytes);
    add_subgraph_constants(graph.nodes[n], seen, bytes);
  }
  return bytes;
}

double peak_activation_bytes(const Graph& graph, std::span<const int> order) {
  if (order.empty()) return 0;
  const int last_step = static_cast<int>(order.size()) - 1;
  std::vector<bool> in_order(graph.nodes.size(), false);
  for (int n : order) in_order[n] = true;
  // Values that must outlive the sequence: graph outputs and what other nodes read.
  std::vector<bool> leaves(graph.values.size(), false);
  for (int out : graph.outputs) leaves[out] = true;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (in_order[n]) continue;
    for (int id : graph.values_read(graph.nodes[n])) leaves[id] = true;
  }

  struct Buffer {
    double bytes;
    int first, last;
  };
  std::vector<Buffer> buffers;
  // A view shares its source's buffer, so reading the view keeps the source alive.
  std::vector<int> buffer_of(graph.values.size(), -1);
  const auto extend = [&](int value, int step) {
    if (buffer_of[value] >= 0) {
      Buffer& buffer = buffers[buffer_of[value]];
      buffer.last = std::max(buffer.last, leaves[value] ? last_step : step);
    }
  };
  for (int step = 0; step <= last_step; ++step) {
    const Node& node = graph.nodes[order[step]];
    for (int id : graph.values_read(node)) {
      if (graph.values[id].is_constant()) continue;
      if (buffer_of[id] < 0) {  // arrives from outside the sequence
        buffer_of[id] = static_cast<int>(buffers.size());
        buffers.push_back({type_bytes(graph.values[id].type), step, step});
      }
      extend(id, step);
    }
    const bool view = is_view(node) && !node.inputs.empty() && node.inputs[0] >= 0 &&
                      buffer_of[node.inputs[0]] >= 0;
    for (int out : node.outputs) {
      if (out < 0) continue;
      if (view) {
        buffer_of[out] = buffer_of[node.inputs[0]];
      } else {
        buffer_of[out] = static_cast<int>(buffers.size());
        buffers.push_back({type_bytes(graph.values[out].type), step, step});
      }
      extend(out, step);
    }
  }
  std::vector<double> delta(order.size() + 1, 0);
  for (const Buffer& buffer : buffers) {
    delta[buffer.first] += buffer.bytes;
    delta[buffer.last + 1] -= buffer.bytes;
  }
  double live = 0, peak = 0;
  for (int step = 0; step <= last_step; ++step) {
    live += delta[step];
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace tandem
