#include "ir/fuse_embedding_bag.h"

#include <set>

namespace tandem {
namespace {

// Matches one Loop body against the embedding-bag pattern, remembering the nodes it used.
class BagMatcher {
 public:
  BagMatcher(const Graph& outer, const Graph& body) : outer_(outer), body_(body) {}

  std::optional<Node> match(const Node& loop) {
    if (loop.inputs.size() != 2 || loop.outputs.size() != 1 || loop.outputs[0] < 0 ||
        body_.inputs.size() != 2 || body_.outputs.size() != 2) {
      return std::nullopt;
    }
    const Tensor* trips = outer_constant(loop.inputs[0]);
    if (!trips || trips->numel() != 1 || !is_integer(trips->dtype())) return std::nullopt;
    const int64_t bags = trips->to_int64s()[0];
    if (bags < 0 || !stays_true(loop)) return std::nullopt;

    const Node* reduce = producer(body_.outputs[1]);
    if (!reduce || (reduce->op_type != "ReduceSum" && reduce->op_type != "ReduceMean") ||
        reduce->attr_int("keepdims", 1) != 0 || !axes_are_zero(*reduce, 2)) {
      return std::nullopt;
    }
    const Node* rows = producer(reduce->inputs[0]);
    if (!rows || rows->op_type != "Gather" || rows->inputs.size() != 2 ||
        rows->attr_int("axis", 0) != 0) {
      return std::nullopt;
    }
    const int table = outer_id(rows->inputs[0]);
    if (table < 0 || outer_.values[table].type.dtype != DType::kFloat32 ||
        outer_.values[table].type.shape.size() != 2) {
      return std::nullopt;
    }
    const Node* slice = producer(rows->inputs[1]);
    if (!slice || slice->op_type != "Slice" || slice->inputs.size() < 3 ||
        !optional_input_is(*slice, 3, 0) || !optional_input_is(*slice, 4, 1)) {
      return std::nullopt;
    }
    const int indices = outer_id(slice->inputs[0]);
    const int starts = bag_bound(slice->inputs[1]);
    const int ends = bag_bound(slice->inputs[2]);
    if (indices < 0 || starts < 0 || ends < 0 || outer_.values[indices].type.shape.size() != 1) {
      return std::nullopt;
    }
    // Nothing else in the body: any other node would be work (or an error) the fusion drops.
    if (used_.size() != body_.nodes.size()) return std::nullopt;

    Node fused;
    fused.name = loop.name;
    fused.op_type = "EmbeddingBag";
    fused.inputs = {table, indices, starts, ends};
    fused.outputs = loop.outputs;
    fused.attributes["mode"] = std::string(reduce->op_type == "ReduceSum" ? "sum" : "mean");
    fused.attributes["bags"] = bags;
    return fused;
  }

 private:
  static bool is_integer(DType dtype) { return dtype == DType::kInt64 || dtype == DType::kInt32; }

  const Tensor* outer_constant(int id) const {
    return id >= 0 && outer_.values[id].is_constant() ? &outer_.values[id].constant : nullptr;
  }
  const Tensor* body_constant(int id) const {
    return id >= 0 && body_.values[id].is_constant() ? &body_.values[id].constant : nullptr;
  }
  static bool is_true(const Tensor* value) {
    return value && value->dtype() == DType::kBool && value->numel() == 1 &&
           value->to_doubles()[0] != 0;
  }

  // The loop never stops early: its condition starts true (or absent) and the body passes it
  // on or returns a constant true.
  bool stays_true(const Node& loop) const {
    if (loop.inputs[1] >= 0 && !is_true(outer_constant(loop.inputs[1]))) return false;
    return body_.outputs[0] == body_.inputs[1] || is_true(body_constant(body_.outputs[0]));
  }

  // The body node producing `id`, counted as used; nullptr for inputs and constants.
  const Node* producer(int id) {
    if (id < 0 || body_.values[id].producer < 0) return nullptr;
    used_.insert(body_.values[id].producer);
    return &body_.nodes[static_cast<size_t>(body_.values[id].producer)];
  }

  // The outer graph's id of a value the body reads from it, or -1.
  int outer_id(int body_id) const {
    if (body_id < 0 || !body_.values[body_id].outer_scope) return -1;
    return outer_.find_value(body_.values[body_id].name);
  }

  // Whether the reduction (or Unsqueeze) axes are exactly dim 0 of a tensor of `rank`.
  bool axes_are_zero(const Node& node, int64_t rank) const {
    std::vector<int64_t> axes;
    if (node.has("axes")) {
      axes = node.attr_ints("axes");
    } else if (const Tensor* value =
                   node.inputs.size() > 1 ? body_constant(node.inputs[1]) : nullptr) {
      axes = value->to_int64s();
    }
    return axes.size() == 1 && (axes[0] == 0 || axes[0] == -rank);
  }

  // Slice's optional input `i` is absent or the constant [value].
  bool optional_input_is(const Node& slice, size_t i, int64_t value) const {
    if (slice.inputs.size() <= i || slice.inputs[i] < 0) return true;  // axes [0], steps [1]
    const Tensor* known = body_constant(slice.inputs[i]);
    return known && known->numel() == 1 && known->to_int64s()[0] == value;
  }

  // A slice bound Unsqueeze(Gather(bounds, iteration), [0]): the outer id of `bounds`, or -1.
  int bag_bound(int id) {
    const Node* unsqueeze = producer(id);
    if (!unsqueeze || unsqueeze->op_type != "Unsqueeze" || !axes_are_zero(*unsqueeze, 1)) return -1;
    const Node* gather = producer(unsqueeze->inputs[0]);
    if (!gather || gather->op_type != "Gather" || gather->inputs.size() != 2 ||
        gather->attr_int("axis", 0) != 0 || gather->inputs[1] != body_.inputs[0]) {
      return -1;
    }
    const int bounds = outer_id(gather->inputs[0]);
    if (bounds < 0 || outer_.values[bounds].type.shape.size() != 1 ||
        !is_integer(outer_.values[bounds].type.dtype)) {
      return -1;
    }
    return bounds;
  }

  const Graph& outer_;
  const Graph& body_;
  std::set<int> used_;
};

}  // namespace

std::optional<Node> embedding_bag_from_loop(const Graph& graph, const Node& loop) {
  if (loop.op_type != "Loop" || !loop.domain.empty()) return std::nullopt;
  const std::shared_ptr<Graph> body = loop.attr_graph("body");
  if (!body) return std::nullopt;
  return BagMatcher(graph, *body).match(loop);
}

}  // namespace tandem
