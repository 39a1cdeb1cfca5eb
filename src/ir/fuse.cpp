#include "ir/fuse.h"

#include <cmath>

#include "ir/fuse_embedding_bag.h"
#include "ir/infer.h"

namespace tandem {
namespace {

class Fuser {
 public:
  explicit Fuser(Graph& graph) : graph_(graph), removed_(graph.nodes.size(), false) {
    count_uses();
  }

  FusionStats run() {
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      if (removed_[n]) continue;
      const std::string& op = graph_.nodes[n].op_type;
      if (op == "Conv") {
        fold_batch_norm(n);
        fuse_residual(n);
      }
      if (op == "Conv" || op == "Gemm" || op == "MatMul") fuse_activation(n);
      if (op == "Loop") fuse_embedding_bag(n);
    }
    graph_.erase_nodes(removed_);
    graph_.sort_topologically();
    // A Loop's outputs have shapes only a run knows, the EmbeddingBag it became static ones: the
    // nodes after it take theirs now (a compiled device needs every shape static).
    if (stats_.embedding_bags_fused > 0) reinfer_keeping_nodes(graph_);
    return stats_;
  }

 private:
  void count_uses() {
    uses_.assign(graph_.values.size(), 0);
    consumer_.assign(graph_.values.size(), -1);
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      for (int in : graph_.nodes[n].inputs) {
        if (in < 0) continue;
        ++uses_[in];
        consumer_[in] = static_cast<int>(n);
      }
      for (const auto& [key, attr] : graph_.nodes[n].attributes) {
        if (const auto* sub = std::get_if<std::shared_ptr<Graph>>(&attr)) {
          for (const std::string& name : Graph::captured_names(**sub)) {
            const int id = graph_.find_value(name);
            if (id >= 0) uses_[id] += 2;  // never fuse away a value a subgraph reads
          }
        }
      }
    }
    for (int out : graph_.outputs) uses_[out] += 2;
  }

  // The only node reading node n's single output, or -1.
  int sole_consumer(size_t n) const {
    const Node& node = graph_.nodes[n];
    if (node.outputs.size() != 1 || node.outputs[0] < 0 || uses_[node.outputs[0]] != 1) return -1;
    const int next = consumer_[node.outputs[0]];
    return next >= 0 && !removed_[next] ? next : -1;
  }

  const Tensor* constant(int value) const {
    return value >= 0 && graph_.values[value].is_constant() ? &graph_.values[value].constant
                                                            : nullptr;
  }

  // Node n takes over the outputs of `absorbed`, which disappears.
  void absorb(size_t n, size_t absorbed) {
    Node& node = graph_.nodes[n];
    Node& gone = graph_.nodes[absorbed];
    const double between =
        intermediate_bytes(node.outputs[0]);  // written once and read once, no more
    node.outputs = gone.outputs;
    node.cost.flops += gone.cost.flops;
    node.cost.bytes += gone.cost.bytes - between;
    removed_[absorbed] = true;
    for (int out : node.outputs) {
      if (out >= 0) graph_.values[out].producer = static_cast<int>(n);
    }
  }

  double intermediate_bytes(int value) const {
    const TensorType& type = graph_.values[value].type;
    double count = 1;
    for (int64_t d : type.shape) count *= static_cast<double>(std::max<int64_t>(d, 0));
    return 2 * count * static_cast<double>(dtype_size(type.dtype));
  }

  int add_constant(const std::string& name, Tensor tensor) {
    std::string unique = name;
    for (int i = 1; graph_.find_value(unique) >= 0; ++i) unique = name + "_" + std::to_string(i);
    const int id = graph_.add_value(unique, {tensor.dtype(), tensor.shape()});
    graph_.values[id].constant = std::move(tensor);
    uses_.push_back(1);
    consumer_.push_back(-1);
    return id;
  }

  // Conv -> BatchNormalization(scale, bias, mean, var): W' = W*s, b' = (b - mean)*s + bias
  // with s = scale / sqrt(var + eps), per output channel.
  void fold_batch_norm(size_t n) {
    const int next = sole_consumer(n);
    if (next < 0) return;
    const Node& bn = graph_.nodes[next];
    Node& conv = graph_.nodes[n];
    if (bn.op_type != "BatchNormalization" || bn.outputs.size() != 1 || conv.has("activation") ||
        conv.inputs.size() > 3) {
      return;
    }
    const Tensor* weight = constant(conv.inputs[1]);
    const Tensor* bias = conv.inputs.size() > 2 ? constant(conv.inputs[2]) : nullptr;
    if (!weight || weight->dtype() != DType::kFloat32 ||
        (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !bias))
      return;
    const Tensor* scale = constant(bn.inputs[1]);
    const Tensor* shift = constant(bn.inputs[2]);
    const Tensor* mean = constant(bn.inputs[3]);
    const Tensor* var = constant(bn.inputs[4]);
    const int64_t channels = weight->dim(0);
    for (const Tensor* t : {scale, shift, mean, var}) {
      if (!t || t->dtype() != DType::kFloat32 || t->numel() != channels) return;
    }
    const double epsilon = bn.attr_float("epsilon", 1e-5f);
    Tensor folded_weight = weight->clone();
    Tensor folded_bias = Tensor::allocate(DType::kFloat32, {channels});
    const int64_t per_channel = weight->numel() / channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double s =
          scale->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + epsilon);
      float* w = folded_weight.data<float>() + c * per_channel;
      for (int64_t i = 0; i < per_channel; ++i) w[i] = static_cast<float>(w[i] * s);
      const double b = bias ? bias->data<float>()[c] : 0.0;
      folded_bias.data<float>()[c] =
          static_cast<float>((b - mean->data<float>()[c]) * s + shift->data<float>()[c]);
    }
    const std::string base = conv.name.empty() ? "conv" : conv.name;
    conv.inputs.resize(3);
    conv.inputs[1] = add_constant(base + ".folded_weight", std::move(folded_weight));
    conv.inputs[2] = add_constant(base + ".folded_bias", std::move(folded_bias));
    absorb(n, static_cast<size_t>(next));
    ++stats_.batch_norms_folded;
  }

  // Conv -> Add(conv, other) with other of the output's exact shape: `other` becomes the
  // Conv's residual input, summed before any activation.
  void fuse_residual(size_t n) {
    const int next = sole_consumer(n);
    Node& conv = graph_.nodes[n];
    if (next < 0 || conv.has("activation") || conv.inputs.size() > 3) return;
    const Node& add = graph_.nodes[next];
    if (add.op_type != "Add" || add.inputs.size() != 2) return;
    const int mine = conv.outputs[0];
    const int other = add.inputs[0] == mine ? add.inputs[1] : add.inputs[0];
    if (other < 0 || other == mine ||
        graph_.values[other].type.shape != graph_.values[mine].type.shape ||
        graph_.values[mine].type.dtype != DType::kFloat32 ||
        graph_.values[other].type.dtype != DType::kFloat32 ||
        !is_static(graph_.values[mine].type.shape)) {
      return;
    }
    conv.inputs.resize(3, -1);
    conv.inputs.push_back(other);
    absorb(n, static_cast<size_t>(next));
    ++stats_.residuals_fused;
  }

  void fuse_embedding_bag(size_t n) {
    std::optional<Node> fused = embedding_bag_from_loop(graph_, graph_.nodes[n]);
    if (!fused) return;
    graph_.nodes[n] = std::move(*fused);
    infer_node(graph_, graph_.nodes[n]);
    ++stats_.embedding_bags_fused;
  }

  void fuse_activation(size_t n) {
    const int next = sole_consumer(n);
    Node& node = graph_.nodes[n];
    if (next < 0 || node.has("activation")) return;
    const Node& act = graph_.nodes[next];
    const std::string& op = act.op_type;
    if (graph_.values[node.outputs[0]].type.dtype != DType::kFloat32) return;
    if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") {
      node.attributes["activation"] = op;
    } else if (op == "LeakyRelu") {
      node.attributes["activation"] = op;
      node.attributes["activation_alpha"] = act.attr_float("alpha", 0.01f);
    } else if (op == "HardSigmoid") {
      node.attributes["activation"] = op;
      node.attributes["activation_alpha"] = act.attr_float("alpha", 0.2f);
      node.attributes["activation_beta"] = act.attr_float("beta", 0.5f);
    } else if (op == "Gelu" && act.attr_string("approximate", "none") == "none") {
      node.attributes["activation"] = op;
    } else if (op == "Clip") {
      const Tensor* low = act.inputs.size() > 1 ? constant(act.inputs[1]) : nullptr;
      const Tensor* high = act.inputs.size() > 2 ? constant(act.inputs[2]) : nullptr;
      const auto unusable = [&](size_t i, const Tensor* bound) {
        return act.inputs.size() > i && act.inputs[i] >= 0 && (!bound || bound->numel() != 1);
      };
      if (unusable(1, low) || unusable(2, high)) return;
      node.attributes["activation"] = op;
      if (low) node.attributes["activation_alpha"] = static_cast<float>(low->to_doubles().at(0));
      if (high) node.attributes["activation_beta"] = static_cast<float>(high->to_doubles().at(0));
    } else {
      return;
    }
    absorb(n, static_cast<size_t>(next));
    ++stats_.activations_fused;
  }

  Graph& graph_;
  std::vector<bool> removed_;
  std::vector<int> uses_;
  std::vector<int> consumer_;
  FusionStats stats_;
};

}  // namespace

FusionStats fuse_for_inference(Graph& graph) { return Fuser(graph).run(); }

}  // namespace tandem
