#include "runtime/segment_graph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tandem {
namespace {

// Values a node reads: its inputs and what its subgraphs capture from the enclosing graph.
std::vector<int> values_read(const Graph& graph, const Node& node) {
  std::vector<int> ids;
  for (int in : node.inputs) {
    if (in >= 0) ids.push_back(in);
  }
  for (const auto& [name, attribute] : node.attributes) {
    const auto* sub = std::get_if<std::shared_ptr<Graph>>(&attribute);
    if (!sub || !*sub) continue;
    for (const std::string& captured : Graph::captured_names(**sub)) {
      const int id = graph.find_value(captured);
      if (id >= 0) ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace

std::vector<std::vector<int>> value_readers(const Graph& graph) {
  std::vector<std::vector<int>> readers(graph.values.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int id : values_read(graph, graph.nodes[n])) {
      if (readers[id].empty() || readers[id].back() != static_cast<int>(n))
        readers[id].push_back(static_cast<int>(n));
    }
  }
  return readers;
}

SegmentGraph extract_segment(const Graph& graph, const std::vector<int>& nodes,
                             const std::vector<std::vector<int>>& readers) {
  SegmentGraph segment;
  Graph& sub = segment.graph;
  sub.opset = graph.opset;
  const std::unordered_set<int> members(nodes.begin(), nodes.end());
  std::unordered_map<int, int> new_id;
  auto map_value = [&](int id) {
    if (id < 0) return -1;
    auto found = new_id.find(id);
    if (found != new_id.end()) return found->second;
    const Value& value = graph.values[id];
    const int created = sub.add_value(value.name, value.type);
    sub.values[created].constant = value.constant;
    new_id[id] = created;
    return created;
  };
  std::unordered_set<int> produced;
  for (int n : nodes) {
    const Node& node = graph.nodes[n];
    for (int id : values_read(graph, node)) {
      if (!graph.values[id].is_constant() && !produced.count(id) &&
          std::find(segment.inputs.begin(), segment.inputs.end(), id) == segment.inputs.end()) {
        segment.inputs.push_back(id);
      }
      map_value(id);
    }
    Node copy = node;
    for (int& in : copy.inputs) in = map_value(in);
    for (int& out : copy.outputs) {
      if (out >= 0) produced.insert(out);
      out = map_value(out);
    }
    sub.nodes.push_back(std::move(copy));
  }
  for (int n : nodes) {
    for (int out : graph.nodes[n].outputs) {
      if (out < 0) continue;
      const bool returned =
          std::find(graph.outputs.begin(), graph.outputs.end(), out) != graph.outputs.end();
      const bool read_outside = std::any_of(readers[out].begin(), readers[out].end(),
                                            [&](int reader) { return !members.count(reader); });
      if (returned || read_outside) segment.outputs.push_back(out);
    }
  }
  for (int id : segment.inputs) sub.inputs.push_back(new_id[id]);
  for (int id : segment.outputs) sub.outputs.push_back(new_id[id]);
  sub.sort_topologically();
  return segment;
}

}  // namespace tandem
