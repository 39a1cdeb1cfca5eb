#include "onnx/batch_split.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "ir/batch_flow.h"
#include "ir/error.h"

namespace tandem {
namespace {

bool named_like_a_batch(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("batch") != std::string::npos || lower == "n" || lower == "b" || lower == "bs";
}

// The batch dimension: one named like a batch, else the symbol every input that has symbols
// leads with; "" when neither exists.
std::string choose_batch_dim(const ImportedModel& model) {
  for (const auto& names : model.input_dim_names) {
    for (const std::string& name : names) {
      if (!name.empty() && named_like_a_batch(name)) return name;
    }
  }
  std::string leading;
  for (const auto& names : model.input_dim_names) {
    const bool symbolic = std::any_of(names.begin(), names.end(),
                                      [](const std::string& name) { return !name.empty(); });
    if (!symbolic) continue;
    if (names[0].empty() || (!leading.empty() && names[0] != leading)) return "";
    leading = names[0];
  }
  return leading;
}

// The axes on which two shapes of one rank differ.
std::vector<int> differing_axes(const Shape& a, const Shape& b) {
  std::vector<int> axes;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) axes.push_back(static_cast<int>(i));
  }
  return axes;
}

// Why `piece` (the model at one sample) is not `whole` with a smaller batch, and whether every
// output sample depends on its own input sample only; fills the output axes when it splits.
std::string compare_with_piece(const Graph& whole, const Graph& piece, BatchSplit& split) {
  const bool same_nodes = piece.nodes.size() == whole.nodes.size() &&
                          std::equal(whole.nodes.begin(), whole.nodes.end(), piece.nodes.begin(),
                                     [](const Node& a, const Node& b) { return a.name == b.name; });
  if (!same_nodes) return "at one sample the model imports as other nodes";
  for (size_t i = 0; i < whole.inputs.size(); ++i) {
    const Value& value = whole.values[whole.inputs[i]];
    const Shape& piece_shape = piece.values[piece.inputs[i]].type.shape;
    const std::vector<int> changed = differing_axes(value.type.shape, piece_shape);
    const std::vector<int> expected =
        split.input_axis[i] < 0 ? std::vector<int>{} : std::vector<int>{split.input_axis[i]};
    if (changed != expected)
      return "input '" + value.name + "' changes on other axes than its batch axis";
  }
  BatchFlow flow = follow_batch(whole, piece, split.batch, split.input_axis);
  split.output_axis = std::move(flow.output_axis);
  return flow.refusal;
}

}  // namespace

BatchSplit find_batch_split(const ImportedModel& model, const ImportOptions& options,
                            std::function<void(Graph&)> prepare) {
  const Graph& graph = model.graph;
  BatchSplit split;
  split.dim = choose_batch_dim(model);
  if (split.dim.empty()) {
    split.refusal =
        "no input has a symbolic batch dimension (the model was exported with a fixed batch, or "
        "its dynamic axes are not named like a batch)";
    return split;
  }
  split.batch = model.bound_dims.at(split.dim);
  for (const auto& names : model.input_dim_names) {
    const auto count = std::count(names.begin(), names.end(), split.dim);
    if (count > 1) {
      split.refusal = "an input has the batch dimension '" + split.dim + "' on two axes";
      return split;
    }
    const auto axis = std::find(names.begin(), names.end(), split.dim);
    split.input_axis.push_back(axis == names.end() ? -1 : static_cast<int>(axis - names.begin()));
  }
  if (split.batch < 2) {
    split.refusal = "the batch ('" + split.dim + "') is " + std::to_string(split.batch) +
                    " sample" + (split.batch == 1 ? "" : "s");
    return split;
  }

  struct Cache {
    std::mutex mutex;
    std::map<int64_t, std::shared_ptr<const Graph>> graphs;
  };
  auto cache = std::make_shared<Cache>();
  ImportOptions rebound = options;
  rebound.progress = nullptr;
  for (const Node& node : graph.nodes) rebound.keep_nodes.insert(node.name);
  std::vector<std::pair<std::string, int>> given_axes;  // given shapes holding the batch
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const std::string& name = graph.values[graph.inputs[i]].name;
    if (split.input_axis[i] >= 0 && rebound.shapes.count(name))
      given_axes.emplace_back(name, split.input_axis[i]);
  }
  const std::string path = model.path, dim = split.dim;
  split.graph_for = [cache, rebound, given_axes, path, dim,
                     prepare](int64_t samples) -> std::shared_ptr<const Graph> {
    std::lock_guard lock(cache->mutex);
    std::shared_ptr<const Graph>& known = cache->graphs[samples];
    if (known) return known;
    ImportOptions options = rebound;
    options.dims[dim] = samples;
    for (const auto& [name, axis] : given_axes) options.shapes[name].dims[axis] = samples;
    ImportedModel piece = import_onnx(path, options);
    if (prepare) prepare(piece.graph);
    known = std::make_shared<const Graph>(std::move(piece.graph));
    return known;
  };

  try {
    split.refusal = compare_with_piece(graph, *split.graph_for(1), split);
  } catch (const InputError& error) {
    split.refusal = std::string("at one sample the model does not re-infer: ") + error.what();
  }
  if (!split.refusal.empty()) split.output_axis.clear();
  return split;
}

}  // namespace tandem
