#include "backends/cpu/conv_layout.h"

#include <set>

namespace tandem::cpu {
namespace {

bool channels_last_conv(const Graph& graph, const Node& node) {
  if (node.op_type != "Conv" || !node.domain.empty() || node.inputs.size() < 2 ||
      node.inputs[0] < 0 || node.inputs[1] < 0 || node.outputs.size() != 1) {
    return false;
  }
  const TensorType& x = graph.values[node.inputs[0]].type;
  const Shape& w = graph.values[node.inputs[1]].type.shape;
  return x.dtype == DType::kFloat32 && x.shape.size() == 4 && w.size() == 4 && is_static(x.shape) &&
         is_static(w);
}

// A pooling that oneDNN runs, hence on any layout (linalg_pool.cpp): float32, 2-D, no Indices
// output, and no count_include_pad (whose windows past the end padding the loop counts).
bool channels_last_pool(const Graph& graph, const Node& node) {
  if ((node.op_type != "MaxPool" && node.op_type != "AveragePool") || !node.domain.empty() ||
      node.inputs.empty() || node.inputs[0] < 0 || node.outputs.empty() ||
      (node.outputs.size() > 1 && node.outputs[1] >= 0) ||
      node.attr_int("count_include_pad", 0) != 0) {
    return false;
  }
  const TensorType& x = graph.values[node.inputs[0]].type;
  return x.dtype == DType::kFloat32 && x.shape.size() == 4 && is_static(x.shape);
}

// Which inputs of a layout-aware node may be channels-last: a convolution's source and fused
// residual (never its weights or bias), a pooling's source.
bool channels_last_input(const Node& node, size_t input) {
  return input == 0 || (node.op_type == "Conv" && input == 3);
}

// Each chained value: the node making it and who reads it, at which input.
struct ChainedValue {
  size_t producer;
  std::vector<std::pair<size_t, size_t>> readers;
};

std::vector<ChainedValue> channels_last_values(const Graph& graph) {
  // Who reads each value, at which input; values read by subgraphs or the caller stay NCHW.
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(graph.values.size());
  std::set<int> pinned(graph.outputs.begin(), graph.outputs.end());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] >= 0) readers[node.inputs[i]].emplace_back(n, i);
    }
    for (const auto& [key, attribute] : node.attributes) {
      if (const auto* sub = std::get_if<std::shared_ptr<Graph>>(&attribute)) {
        for (const std::string& name : Graph::captured_names(**sub))
          pinned.insert(graph.find_value(name));
      }
    }
  }
  std::vector<bool> capable(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    capable[n] =
        channels_last_conv(graph, graph.nodes[n]) || channels_last_pool(graph, graph.nodes[n]);
  }
  std::vector<ChainedValue> chained_values;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!capable[n]) continue;
    const int out = graph.nodes[n].outputs[0];
    if (out < 0 || pinned.count(out) || readers[out].empty()) continue;
    bool chained = true;
    for (const auto& [reader, input] : readers[out]) {
      chained = chained && capable[reader] && channels_last_input(graph.nodes[reader], input);
    }
    if (chained) chained_values.push_back({n, std::move(readers[out])});
  }
  return chained_values;
}

}  // namespace

std::optional<Graph> with_channels_last_conv_chains(const Graph& graph) {
  const std::vector<ChainedValue> chained = channels_last_values(graph);
  if (chained.empty()) return std::nullopt;
  Graph marked = graph;
  for (const ChainedValue& value : chained) {
    marked.nodes[value.producer].attributes[kDstLayoutAttribute] = std::string(kChannelsLast);
    for (const auto& [reader, input] : value.readers) {
      marked.nodes[reader].attributes[input == 0 ? kSrcLayoutAttribute : kResidualLayoutAttribute] =
          std::string(kChannelsLast);
    }
  }
  return marked;
}

std::vector<ActivationLayout> activation_layouts(const Graph& graph) {
  std::vector<ActivationLayout> layouts(graph.nodes.size());
  for (const ChainedValue& value : channels_last_values(graph)) {
    layouts[value.producer].output_channels_last = true;
    for (const auto& [reader, input] : value.readers) {
      if (input == 0) layouts[reader].input_channels_last = true;
    }
  }
  // A (not depthwise) convolution computes in oneDNN's layout: an NCHW side is reordered, unless
  // both are NCHW and the plain GEMM is preferred (linalg_conv.cpp decides the same way).
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (!channels_last_conv(graph, node)) continue;
    const Shape& x = graph.values[node.inputs[0]].type.shape;
    const Shape& w = graph.values[node.inputs[1]].type.shape;
    const Shape& y = graph.values[node.outputs[0]].type.shape;
    const int64_t group = node.attr_int("group", 1);
    if (group > 1 && w[1] == 1) continue;  // depthwise: its own kernels, priced by their layouts
    ActivationLayout& layout = layouts[n];
    const bool plain = !layout.input_channels_last && !layout.output_channels_last &&
                       y.size() == 4 && prefer_plain_layout(x[1], group, w[2] * w[3], y[2] * y[3]);
    layout.reorders_input = !layout.input_channels_last && !plain;
    layout.reorders_output = !layout.output_channels_last && !plain;
  }
  return layouts;
}

}  // namespace tandem::cpu
