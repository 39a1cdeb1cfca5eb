#include "ir/batch_flow.h"

#include <algorithm>
#include <optional>
#include <set>

namespace tandem {
namespace {

// What a value holds with respect to the batch. A batched value keeps each sample in one
// block: its batch axis has size before * batch * after, where `before` and `after` are dims a
// reshape merged into it (heads, sequence), and each sample's block is `after` long on it.
struct BatchState {
  bool batched = false;
  int axis = -1;
  int64_t before = 1, after = 1;
};

int64_t product(const Shape& shape, size_t from, size_t to) {
  int64_t total = 1;
  for (size_t i = from; i < to && i < shape.size(); ++i) total *= shape[i];
  return total;
}

int normalized_axis(int64_t axis, size_t rank) {
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

// The integers of a constant input, or nullopt when it is absent or not constant.
std::optional<std::vector<int64_t>> constant_ints(const Graph& graph, const Node& node,
                                                  size_t input) {
  if (input >= node.inputs.size() || node.inputs[input] < 0) return std::nullopt;
  const Value& value = graph.values[node.inputs[input]];
  if (!value.is_constant()) return std::nullopt;
  const Tensor& tensor = value.constant;
  std::vector<int64_t> ints;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if (tensor.dtype() == DType::kInt64)
      ints.push_back(tensor.data<int64_t>()[i]);
    else if (tensor.dtype() == DType::kInt32)
      ints.push_back(tensor.data<int32_t>()[i]);
    else
      return std::nullopt;
  }
  return ints;
}

bool has_subgraph(const Node& node) {
  return std::any_of(node.attributes.begin(), node.attributes.end(), [](const auto& attribute) {
    return std::holds_alternative<std::shared_ptr<Graph>>(attribute.second);
  });
}

const std::set<std::string, std::less<>> kLeadingBatchOps = {"Conv",
                                                             "ConvTranspose",
                                                             "MaxPool",
                                                             "AveragePool",
                                                             "LpPool",
                                                             "GlobalAveragePool",
                                                             "GlobalMaxPool",
                                                             "GlobalLpPool",
                                                             "BatchNormalization",
                                                             "InstanceNormalization",
                                                             "LRN",
                                                             "GroupNormalization",
                                                             "DepthToSpace",
                                                             "SpaceToDepth",
                                                             "MaxUnpool",
                                                             "ConvInteger",
                                                             "QLinearConv"};
const std::set<std::string, std::less<>> kViewOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                     "Identity"};

// Why `node` works across the batch axis of its first input (in state `in`, shape `shape`),
// or "" when it does not.
std::string across_the_batch(const Graph& graph, const Node& node, const BatchState& in,
                             const Shape& shape) {
  const std::string& op = node.op_type;
  const size_t rank = shape.size();
  const auto along = [&](int64_t axis) { return normalized_axis(axis, rank) == in.axis; };
  if (!node.domain.empty()) return "an op of domain " + node.domain + ", which is not analysed";
  if (kLeadingBatchOps.count(op) && in.axis != 0) return "it needs the batch first";
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") &&
      along(node.attr_int("axis", -1)))
    return "it normalizes along the batch";
  if (op == "LayerNormalization" && in.axis >= normalized_axis(node.attr_int("axis", -1), rank))
    return "it normalizes over the batch";
  if (op == "MeanVarianceNormalization") {
    const std::vector<int64_t> axes = node.attr_ints("axes", {0, 2, 3});
    if (std::any_of(axes.begin(), axes.end(), along)) return "it normalizes over the batch";
  }
  if ((op == "Concat" || op == "Split" || op == "TopK" || op == "GatherElements" ||
       op == "Gather" || op == "Compress" || op == "ReverseSequence") &&
      along(node.attr_int("axis", op == "TopK" ? -1 : 0)))
    return "it works along the batch axis";
  if (op == "CumSum") {
    const auto axis = constant_ints(graph, node, 1);
    if (!axis || axis->size() != 1 || along(axis->front())) return "it may sum along the batch";
  }
  if (op == "Slice") {
    const auto starts = constant_ints(graph, node, 1), ends = constant_ints(graph, node, 2);
    auto axes = constant_ints(graph, node, 3);
    auto steps = constant_ints(graph, node, 4);
    if (!starts || !ends) return "its range is known only at run time";
    if (!axes) {
      if (node.inputs.size() > 3 && node.inputs[3] >= 0)
        return "its axes are known only at run time";
      axes = std::vector<int64_t>(starts->size());
      for (size_t i = 0; i < axes->size(); ++i) (*axes)[i] = static_cast<int64_t>(i);
    }
    if (!steps && node.inputs.size() > 4 && node.inputs[4] >= 0)
      return "its steps are known only at run time";
    for (size_t i = 0; i < axes->size() && i < starts->size() && i < ends->size(); ++i) {
      if (!along((*axes)[i])) continue;
      const int64_t step = steps && i < steps->size() ? (*steps)[i] : 1;
      const int64_t start = (*starts)[i], end = (*ends)[i];
      if (step != 1 || start != 0 || (end >= 0 && end < shape[in.axis]))
        return "it slices the batch axis";
    }
  }
  if (op == "GatherND" || op == "ScatterND" || op == "ScatterElements" || op == "Scatter" ||
      op == "Einsum" || op == "RoiAlign" || op == "NonMaxSuppression")
    return "it indexes batched data in ways that are not analysed";
  if (op == "RNN" || op == "GRU" || op == "LSTM") {
    if (in.axis != (node.attr_int("layout", 0) == 0 ? 1 : 0)) return "its batch axis is another";
  }
  return "";
}

}  // namespace

namespace {

std::string mixing(const Graph& whole, const Graph& piece, int64_t batch,
                   const std::vector<int>& input_axis, std::vector<int>& output_axis) {
  std::vector<BatchState> state(whole.values.size());
  const std::vector<std::vector<int>> readers = [&] {
    std::vector<std::vector<int>> uses(whole.values.size());
    for (size_t n = 0; n < whole.nodes.size(); ++n) {
      for (int id : whole.values_read(whole.nodes[n])) uses[id].push_back(static_cast<int>(n));
    }
    return uses;
  }();
  for (size_t i = 0; i < whole.inputs.size(); ++i) {
    const int id = whole.inputs[i];
    if (input_axis[i] >= 0) {
      state[id] = {true, input_axis[i], 1, 1};
    } else if (!whole.values[id].is_constant() && !readers[id].empty()) {
      return "input '" + whole.values[id].name +
             "' has no batch axis, so every piece would read all of it";
    }
  }

  for (const Node& node : whole.nodes) {
    const std::vector<int> read = whole.values_read(node);
    const auto batched_input = std::find_if(node.inputs.begin(), node.inputs.end(),
                                            [&](int id) { return id >= 0 && state[id].batched; });
    const bool reads_batched =
        std::any_of(read.begin(), read.end(), [&](int id) { return state[id].batched; });
    if (!reads_batched || node.op_type == "Shape" || node.op_type == "Size") continue;
    const std::string label = "node " + node.label();
    if (has_subgraph(node) || batched_input == node.inputs.end())
      return label + " runs a subgraph over batched data, which is not analysed for mixing samples";
    const BatchState& in = state[*batched_input];
    const Shape& in_shape = whole.values[*batched_input].type.shape;
    if (batched_input == node.inputs.begin()) {
      const std::string across = across_the_batch(whole, node, in, in_shape);
      if (!across.empty()) return label + " mixes samples: " + across;
    } else if (node.op_type == "Gather" && state[node.inputs[0]].batched) {
      return label + " mixes samples: it gathers batched data with batched indices";
    }

    for (int out : node.outputs) {
      if (out < 0) continue;
      const Value& value = whole.values[out];
      const int other = piece.find_value(value.name);
      if (other < 0) return label + ": output '" + value.name + "' is missing at one sample";
      const Shape& shape = value.type.shape;
      const Shape& piece_shape = piece.values[other].type.shape;
      if (!is_static(shape) || !is_static(piece_shape) || shape.size() != piece_shape.size())
        return label + ": output '" + value.name +
               "' has a shape known only at run time, so the batch cannot be followed";
      std::vector<int> scaled;
      bool proportional = true;
      for (size_t a = 0; a < shape.size(); ++a) {
        if (shape[a] == piece_shape[a]) continue;
        scaled.push_back(static_cast<int>(a));
        proportional &= shape[a] == batch * piece_shape[a];
      }
      if (scaled.size() != 1 || !proportional)
        return label + " mixes samples: its output '" + value.name + "' does not follow the batch";
      BatchState next{true, scaled[0], 1, 1};
      const size_t axis = static_cast<size_t>(next.axis);
      if (kViewOps.count(node.op_type)) {
        // The same memory regrouped: each sample must stay one block around the new axis.
        const int64_t outer = product(in_shape, 0, in.axis) * in.before;
        const int64_t inner = in.after * product(in_shape, in.axis + 1, in_shape.size());
        const int64_t leading = product(shape, 0, axis);
        if (leading == 0 || outer % leading != 0) return label + " splits samples apart";
        next.before = outer / leading;
        if (shape[axis] % (next.before * batch) != 0) return label + " splits samples apart";
        next.after = shape[axis] / (next.before * batch);
        if (next.after * product(shape, axis + 1, shape.size()) != inner)
          return label + " splits samples apart";
      } else if (node.op_type == "Transpose") {
        next.before = in.before;
        next.after = in.after;
      } else if (shape[axis] != batch) {
        // Elementwise and friends keep the merged dims of an input aligned with the output.
        bool found = false;
        for (int id : node.inputs) {
          if (id < 0 || !state[id].batched) continue;
          const Shape& source = whole.values[id].type.shape;
          const int aligned = state[id].axis + static_cast<int>(shape.size() - source.size());
          if (aligned == next.axis && source[state[id].axis] == shape[axis]) {
            next.before = state[id].before;
            next.after = state[id].after;
            found = true;
            break;
          }
        }
        if (!found) return label + ": the batch cannot be followed through it";
      }
      state[out] = next;
    }
  }
  for (int id : whole.outputs) {
    const BatchState& out = state[id];
    if (!out.batched) return "output '" + whole.values[id].name + "' does not follow the batch";
    if (out.before != 1)
      return "output '" + whole.values[id].name + "' interleaves samples on its batch axis";
    output_axis.push_back(out.axis);
  }
  return "";
}

}  // namespace

BatchFlow follow_batch(const Graph& whole, const Graph& piece, int64_t batch,
                       const std::vector<int>& input_axis) {
  BatchFlow flow;
  flow.refusal = mixing(whole, piece, batch, input_axis, flow.output_axis);
  if (!flow.refusal.empty()) flow.output_axis.clear();
  return flow;
}

}  // namespace tandem
