#include "plan/synthetic.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cost/memory_footprint.h"
#include "ir/error.h"
#include "ir/infer.h"

namespace tandem {
namespace {

// The prototype ops, in the order prototype_graph builds them.
enum Prototype {
  kProjection,  // [T,h] x [h,h], weights h*h
  kFfnUp,       // [T,h] x [h,4h]
  kFfnDown,     // [T,4h] x [4h,h]
  kScores,      // [heads,T,64] x [heads,64,T], no weights
  kSoftmax,     // over [heads,T,T]
  kNorm,        // LayerNormalization of [T,h]
  kAdd,         // residual add of [T,h]
  kActivation,  // Tanh of [T,4h]
  kNonZero,     // data-dependent output: no TPU
  kPrototypeCount
};

constexpr int64_t kTokens = 1024, kHidden = 1024, kHeads = 16, kHeadDim = 64;

Graph prototype_graph() {
  Graph graph;
  graph.opset = 17;
  const DType type = DType::kBFloat16;
  auto input = [&](const std::string& name, Shape shape) {
    const int id = graph.add_value(name, {type, shape});
    graph.inputs.push_back(id);
    return id;
  };
  auto constant = [&](const std::string& name, Shape shape) {
    const int id = graph.add_value(name, {type, shape});
    graph.values[id].constant = Tensor::zeros(type, shape);
    return id;
  };
  auto node = [&](const std::string& op, std::vector<int> inputs) {
    Node added;
    added.name = op + std::to_string(graph.nodes.size());
    added.op_type = op;
    added.inputs = std::move(inputs);
    added.outputs = {graph.add_value(added.name + "_out")};
    graph.nodes.push_back(std::move(added));
    graph.outputs.push_back(graph.nodes.back().outputs[0]);
  };
  const int x = input("x", {kTokens, kHidden});
  const int wide = input("wide", {kTokens, 4 * kHidden});
  const int queries = input("queries", {kHeads, kTokens, kHeadDim});
  const int keys = input("keys", {kHeads, kHeadDim, kTokens});
  const int scores = input("scores", {kHeads, kTokens, kTokens});
  node("MatMul", {x, constant("w_projection", {kHidden, kHidden})});
  node("MatMul", {x, constant("w_up", {kHidden, 4 * kHidden})});
  node("MatMul", {wide, constant("w_down", {4 * kHidden, kHidden})});
  node("MatMul", {queries, keys});
  node("Softmax", {scores});
  node("LayerNormalization", {x, constant("scale", {kHidden}), constant("bias", {kHidden})});
  node("Add", {x, x});
  node("Tanh", {wide});
  node("NonZero", {x});
  infer_graph(graph);
  if (graph.nodes.size() != kPrototypeCount) {
    throw std::logic_error("synthetic prototypes: inference dropped a node");
  }
  return graph;
}

double output_bytes(const Graph& graph, const Node& node) {
  const TensorType& type = graph.values[node.outputs[0]].type;
  double elements = 1;
  for (int64_t dim : type.shape) elements *= dim == kDynamicDim ? 1.0 : static_cast<double>(dim);
  return elements * static_cast<double>(dtype_size(type.dtype));
}

struct PrototypeCosts {
  std::vector<std::array<double, kPrototypeCount>> seconds;  // per device
  std::array<double, kPrototypeCount> weight_bytes{}, output_bytes{};
};

PrototypeCosts cost_prototypes(const CostModel& cost) {
  const Graph graph = prototype_graph();
  PrototypeCosts costs;
  costs.seconds.resize(cost.cluster().devices.size());
  for (int p = 0; p < kPrototypeCount; ++p) {
    const Node& node = graph.nodes[p];
    const int index = p;
    costs.weight_bytes[p] = weights_bytes(graph, std::span<const int>(&index, 1));
    costs.output_bytes[p] = output_bytes(graph, node);
    for (size_t d = 0; d < costs.seconds.size(); ++d) {
      costs.seconds[d][p] = cost.op_seconds(node, graph, static_cast<int>(d));
    }
  }
  return costs;
}

// A node's prototype and the nodes it reads (all earlier in index order).
struct DagNode {
  Prototype prototype = kAdd;
  std::vector<int> inputs;
};

// The mix of ops in a transformer layer, by count; NonZero stands for the rare
// data-dependent op (a mask, a top-k) that pins work to an eager device.
Prototype random_prototype(std::mt19937_64& random) {
  static constexpr std::array<std::pair<Prototype, int>, kPrototypeCount> kMix = {{
      {kProjection, 24},
      {kFfnUp, 8},
      {kFfnDown, 8},
      {kScores, 8},
      {kSoftmax, 6},
      {kNorm, 14},
      {kAdd, 14},
      {kActivation, 16},
      {kNonZero, 2},
  }};
  int pick = static_cast<int>(random() % 100);
  for (const auto& [prototype, share] : kMix) {
    if (pick < share) return prototype;
    pick -= share;
  }
  return kAdd;
}

// Up to `count` distinct nodes from [first, last).
std::vector<int> pick_inputs(std::mt19937_64& random, int first, int last, int count) {
  std::vector<int> inputs;
  for (int i = 0; i < count && static_cast<int>(inputs.size()) < last - first; ++i) {
    int input = first + static_cast<int>(random() % static_cast<uint64_t>(last - first));
    while (std::find(inputs.begin(), inputs.end(), input) != inputs.end()) {
      input = input + 1 < last ? input + 1 : first;
    }
    inputs.push_back(input);
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

std::vector<DagNode> transformer_dag(int count) {
  // One block: norm, Q, K, V, scores, softmax, context, output projection, residual add,
  // norm, FFN up, activation, FFN down, residual add. Offsets are within the block; -1 is the
  // previous block's last node (the residual stream).
  struct BlockNode {
    Prototype prototype;
    std::vector<int> inputs;
  };
  static const std::vector<BlockNode> kBlock = {
      {kNorm, {-1}},     {kProjection, {0}}, {kProjection, {0}}, {kProjection, {0}},
      {kScores, {1, 2}}, {kSoftmax, {4}},    {kScores, {5, 3}},  {kProjection, {6}},
      {kAdd, {7, -1}},   {kNorm, {8}},       {kFfnUp, {9}},      {kActivation, {10}},
      {kFfnDown, {11}},  {kAdd, {12, 8}},
  };
  const int block_size = static_cast<int>(kBlock.size());
  std::vector<DagNode> dag(count);
  for (int i = 0; i < count; ++i) {
    const int start = i - i % block_size;
    const BlockNode& shape = kBlock[i % block_size];
    dag[i].prototype = shape.prototype;
    for (int offset : shape.inputs) {
      const int input = start + offset;
      if (input >= 0) dag[i].inputs.push_back(input);
    }
  }
  return dag;
}

std::vector<DagNode> make_dag(const SyntheticSpec& spec) {
  if (spec.shape == DagShape::kTransformer) return transformer_dag(spec.nodes);
  std::mt19937_64 random(spec.seed);
  constexpr int kLayerWidth = 8, kWindow = 64;
  std::vector<DagNode> dag(spec.nodes);
  for (int i = 0; i < spec.nodes; ++i) {
    dag[i].prototype = random_prototype(random);
    const int fan_in = 1 + static_cast<int>(random() % 3);
    switch (spec.shape) {
      case DagShape::kChain:
        if (i > 0) dag[i].inputs = {i - 1};
        break;
      case DagShape::kLayered: {
        const int layer_start = i - i % kLayerWidth;
        if (layer_start > 0) {
          dag[i].inputs = pick_inputs(random, layer_start - kLayerWidth, layer_start, fan_in);
        }
        break;
      }
      case DagShape::kRandom:
        dag[i].inputs = pick_inputs(random, std::max(0, i - kWindow), i, fan_in);
        break;
      case DagShape::kTransformer: break;
    }
  }
  return dag;
}

// Cluster files are the one validated way to build a cluster from presets.
Cluster load_cluster_text(const std::string& text) {
  static std::atomic<int> counter = 0;
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("tandem-synthetic-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".yaml");
  std::ofstream(path) << text;
  Cluster cluster;
  try {
    cluster = load_cluster(path.string());
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);
  cluster.file = "";
  return cluster;
}

}  // namespace

std::string_view dag_shape_name(DagShape shape) {
  switch (shape) {
    case DagShape::kChain: return "chain";
    case DagShape::kLayered: return "layered";
    case DagShape::kTransformer: return "transformer";
    case DagShape::kRandom: return "random";
  }
  return "?";
}

Cluster synthetic_cluster(int devices) {
  if (devices < 1) throw InputError("synthetic cluster", "needs at least one device");
  struct Slot {
    const char* kind;
    const char* preset;
  };
  static constexpr std::array<Slot, 8> kHost = {{
      {"gpu", "nvidia-h100-sxm"},
      {"tpu", "google-tpu-v5e"},
      {"gpu", "nvidia-a100-80gb"},
      {"cpu", "cpu-generic-avx2"},
      {"gpu", "nvidia-h100-sxm"},
      {"tpu", "google-tpu-v6e"},
      {"gpu", "nvidia-l4"},
      {"tpu", "google-tpu-v5e"},
  }};
  const int hosts = (devices + static_cast<int>(kHost.size()) - 1) / static_cast<int>(kHost.size());
  std::string text = "hosts: [";
  for (int h = 0; h < hosts; ++h) text += (h ? ", h" : "h") + std::to_string(h);
  text += "]\ndevices:\n";
  std::map<std::string, int> per_kind;
  for (int d = 0; d < devices; ++d) {
    const Slot& slot = kHost[d % kHost.size()];
    const std::string id = slot.kind + std::to_string(per_kind[slot.kind]++);
    text += "  - {id: " + id + ", preset: " + slot.preset + ", host: h" +
            std::to_string(d / kHost.size()) + ", backend: none" +
            (std::string(slot.kind) == "cpu" ? ", cores: 1}\n" : "}\n");
  }
  if (hosts > 1) {
    text += "links:\n  - between: [";
    for (int h = 0; h < hosts; ++h) text += (h ? ", h" : "h") + std::to_string(h);
    text += "]\n    preset: network-200g\n";
  }
  return load_cluster_text(text);
}

SyntheticProblem make_synthetic_problem(const SyntheticSpec& spec) {
  if (spec.nodes < 1) throw InputError("synthetic problem", "needs at least one node");
  SyntheticProblem result;
  result.cost = std::make_unique<const CostModel>(synthetic_cluster(spec.devices));
  const PrototypeCosts costs = cost_prototypes(*result.cost);
  const std::vector<DagNode> dag = make_dag(spec);
  const int count = spec.nodes;
  std::vector<std::vector<double>> seconds(count, std::vector<double>(spec.devices));
  std::vector<std::vector<std::pair<int, double>>> successors(count);
  std::vector<double> weights(count), outputs(count);
  for (int i = 0; i < count; ++i) {
    const Prototype prototype = dag[i].prototype;
    for (int d = 0; d < spec.devices; ++d) seconds[i][d] = costs.seconds[d][prototype];
    weights[i] = costs.weight_bytes[prototype];
    outputs[i] = costs.output_bytes[prototype];
    for (int input : dag[i].inputs) successors[input].emplace_back(i, outputs[input]);
  }
  result.problem = std::make_unique<const PlanningProblem>(
      result.cost->cluster(), *result.cost, std::move(seconds), std::move(successors),
      std::move(weights), std::move(outputs), spec.options);
  return result;
}

}  // namespace tandem
