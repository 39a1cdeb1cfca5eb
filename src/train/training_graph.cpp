#include "train/training_graph.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/infer.h"
#include "train/autodiff.h"
#include "train/graph_builder.h"
#include "util/glob.h"

namespace tandem::train {
namespace {

// Scatter and gather with reduction need opset 16; nothing this graph holds changed meaning
// between 13 and 16 for a float model (the changes were added types and reductions).
constexpr int kTrainingOpset = 16;

void replace_uses(Graph& graph, int from, int to) {
  for (Node& node : graph.nodes) std::replace(node.inputs.begin(), node.inputs.end(), from, to);
  std::replace(graph.outputs.begin(), graph.outputs.end(), from, to);
}

int output_named(const Graph& graph, const std::string& name) {
  if (name.empty()) {
    if (graph.outputs.empty()) throw InputError("the model has no outputs");
    return graph.outputs.front();
  }
  for (int id : graph.outputs)
    if (graph.values[id].name == name) return id;
  std::string names;
  for (int id : graph.outputs) names += (names.empty() ? "" : ", ") + graph.values[id].name;
  throw InputError("--output " + name, "the model has no such output (it has " + names + ")");
}

struct RunningStatistic {
  int value;         // the initializer
  int contribution;  // the batch's (or piece's) share of its update
  float momentum;    // new = momentum * old + the contributions of every piece
};

// BatchNormalization with the batch's statistics, as ops that have gradients. Each running
// statistic moves as torch's train mode moves it, new = m old + (1 - m) batch statistic; a piece
// of n samples of a batch of `batch` contributes (1 - m) (n / batch) of its own statistic, so that
// the pieces' contributions add up (to the batch's exactly when the batch is not split).
std::vector<RunningStatistic> lower_batch_norms(Graph& graph, int64_t batch) {
  GraphBuilder b(graph, "batchnorm");
  std::vector<RunningStatistic> statistics;
  std::vector<size_t> lowered;
  const size_t forward = graph.nodes.size();
  for (size_t n = 0; n < forward; ++n) {
    if (graph.nodes[n].op_type != "BatchNormalization") continue;
    const Node node = graph.nodes[n];
    const int x = node.inputs[0], scale = node.inputs[1], bias = node.inputs[2];
    const Shape shape = b.shape(x);
    if (shape.size() < 2) throw InputError(node.label() + ": cannot train on an input of rank < 2");
    std::vector<int64_t> axes = {0};
    int64_t count = shape[0];
    for (size_t a = 2; a < shape.size(); ++a) {
      axes.push_back(static_cast<int64_t>(a));
      count *= shape[a];
    }
    if (count < 2)
      throw InputError(node.label() + ": batch statistics need 2 or more elements per channel");
    const float epsilon = node.attr_float("epsilon", 1e-5f);
    const float momentum = node.attr_float("momentum", 0.9f);
    const DType t = b.dtype(x);
    Shape per_channel(shape.size(), 1);
    per_channel[1] = shape[1];
    const float inverse = 1.0f / static_cast<float>(count);
    const int mean = b.scale(b.reduce_sum(x, axes, true), inverse);
    const int centred = b.sub(x, mean);
    const int variance = b.scale(b.reduce_sum(b.mul(centred, centred), axes, true), inverse);
    const int rstd = b.add("Reciprocal", {b.add("Sqrt", {b.sum(variance, b.scalar(epsilon, t))})});
    const int y = b.sum(b.mul(b.mul(centred, rstd), b.reshape(scale, per_channel)),
                        b.reshape(bias, per_channel));
    const float share = (1 - momentum) * static_cast<float>(shape[0]) / static_cast<float>(batch);
    const float unbiased = static_cast<float>(count) / static_cast<float>(count - 1);
    const int mean_share = b.scale(b.reshape(mean, {shape[1]}), share);
    const int var_share = b.scale(b.reshape(variance, {shape[1]}), share * unbiased);
    statistics.push_back({node.inputs[3], mean_share, momentum});
    statistics.push_back({node.inputs[4], var_share, momentum});
    replace_uses(graph, node.outputs[0], y);
    if (node.outputs.size() > 1 && node.outputs[1] >= 0)
      throw InputError(node.label() +
                       ": reads its running statistics' new values as outputs "
                       "(export the model in eval mode)");
    lowered.push_back(n);
  }
  for (auto it = lowered.rbegin(); it != lowered.rend(); ++it)
    graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(*it));
  graph.sort_topologically();
  return statistics;
}

// MaxPool's gradient scatters through its Indices output: ask every MaxPool for it.
void keep_max_pool_indices(Graph& graph) {
  for (Node& node : graph.nodes) {
    if (node.op_type != "MaxPool" || (node.outputs.size() > 1 && node.outputs[1] >= 0)) continue;
    const int id = graph.add_value(node.name + "/indices");
    node.outputs.resize(2);
    node.outputs[1] = id;
    infer_node(graph, node, /*keep=*/true);
  }
  graph.sort_topologically();
}

int add_input(Graph& graph, const std::string& name, TensorType type) {
  const int id = graph.add_value(name, std::move(type));
  graph.inputs.push_back(id);
  return id;
}

// The loss, a scalar, of `prediction` against a new labels input.
int add_loss(Graph& graph, int prediction, Loss loss, const std::string& labels_name,
             int64_t batch) {
  GraphBuilder b(graph, "loss");
  const Value value = graph.values[prediction];  // a copy: adding nodes moves the values
  const Shape shape = value.type.shape;
  const DType t = value.type.dtype;
  if (!is_floating(t) || t == DType::kFloat16 || t == DType::kBFloat16)
    throw InputError("output '" + value.name + "' is " + std::string(dtype_name(t)) +
                     ": training needs float32 or float64");
  if (loss == Loss::kCrossEntropy) {
    if (shape.size() != 2) {
      throw InputError("cross-entropy needs logits [batch, classes]; output '" + value.name +
                       "' is " + shape_str(shape) + " (use --loss mse, or --output)");
    }
    const int labels = add_input(graph, labels_name, {DType::kInt64, {shape[0]}});
    const int log_probabilities = b.add("LogSoftmax", {prediction}, {{"axis", int64_t{1}}});
    // Each label's log-probability through a one-hot mask: elementwise ops every backend runs
    // (a gather's gradient would be a scatter).
    std::vector<int64_t> classes(static_cast<size_t>(shape[1]));
    std::iota(classes.begin(), classes.end(), 0);
    const int one_hot = b.add(
        "Cast", {b.add("Equal", {b.add("Unsqueeze", {labels, b.int64s({1})}), b.int64s(classes)})},
        {{"to", int64_t{t == DType::kFloat64 ? 11 : 1}}});  // DOUBLE, FLOAT
    const int picked = b.mul(log_probabilities, one_hot);
    return b.scale(b.reduce_sum(picked, {0, 1}, false), -1.0f / static_cast<float>(batch));
  }
  const int target = add_input(graph, labels_name, {t, shape});
  const int difference = b.sub(prediction, target);
  std::vector<int64_t> all(shape.size());
  for (size_t a = 0; a < all.size(); ++a) all[a] = static_cast<int64_t>(a);
  const int squared = b.reduce_sum(b.mul(difference, difference), all, false);
  const int64_t per_sample = numel(shape) / shape[0];
  return b.scale(squared, 1.0f / static_cast<float>(batch * per_sample));
}

// Turns constants into graph inputs with their values as the slots' initial values.
void make_inputs(Graph& graph, std::vector<Slot>& slots, const std::vector<int>& ids,
                 SlotRole role) {
  for (int id : ids) {
    Value& value = graph.values[id];
    slots.push_back({role, value.name, value.constant, -1, -1});
    value.constant = Tensor();
    graph.inputs.push_back(id);
  }
}

// Drops nodes that no output needs (a second head the loss does not read).
void prune(Graph& graph) {
  std::vector<bool> live(graph.values.size(), false);
  for (int id : graph.outputs) live[id] = true;
  std::vector<bool> dead(graph.nodes.size(), true);
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    const Node& node = graph.nodes[n];
    for (int id : node.outputs) {
      if (id >= 0 && live[id]) dead[n] = false;
    }
    if (dead[n]) continue;
    for (int id : graph.values_read(node)) live[id] = true;
  }
  graph.erase_nodes(dead);
  // Left in the order built (a topological one): a sort could move recomputation forward.
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (int id : graph.nodes[n].outputs)
      if (id >= 0) graph.values[id].producer = static_cast<int>(n);
}

std::vector<Slot> data_slots(const Graph& forward) {
  std::vector<Slot> slots;
  for (int id : forward.inputs)
    slots.push_back({SlotRole::kData, forward.values[id].name, {}, -1, -1});
  return slots;
}

bool frozen(const TrainingOptions& options, const std::string& name) {
  return std::any_of(options.frozen.begin(), options.frozen.end(),
                     [&](const std::string& pattern) { return glob_matches(pattern, name); });
}

// The optimiser's update of one parameter: returns its new value, adding its state to `graph`
// as inputs (zero at the start) with their new values.
struct Update {
  int parameter;
  std::vector<std::pair<int, int>> state;  // state input, its new value
};

Update optimise(GraphBuilder& b, const TrainingOptions& options, int parameter, int grad,
                int learning_rate, int correction1, int correction2, std::vector<Slot>& slots) {
  Graph& graph = b.graph();
  const std::string name = graph.values[parameter].name;
  const TensorType type = graph.values[parameter].type;
  const auto state = [&](const std::string& suffix) {
    const int id = add_input(graph, name + "/" + suffix, type);
    slots.push_back({SlotRole::kOptimizerState, name + "/" + suffix,
                     Tensor::zeros(type.dtype, type.shape), -1, -1});
    return id;
  };
  Update update{-1, {}};
  const bool decoupled = options.optimizer == Optimizer::kAdamW;
  if (options.weight_decay != 0 && !decoupled)
    grad = b.sum(grad, b.scale(parameter, options.weight_decay));
  if (options.optimizer == Optimizer::kSgd) {
    int step = grad;
    if (options.momentum != 0) {
      const int velocity = state("momentum");
      step = b.sum(b.scale(velocity, options.momentum), grad);
      update.state.push_back({velocity, step});
    }
    update.parameter = b.sub(parameter, b.mul(learning_rate, step));
    return update;
  }
  int base = parameter;
  if (decoupled && options.weight_decay != 0) {
    const int shrink =
        b.sub(b.scalar(1.0f, type.dtype), b.scale(learning_rate, options.weight_decay));
    base = b.mul(parameter, shrink);
  }
  const int m = state("adam_m"), v = state("adam_v");
  const int new_m = b.sum(b.scale(m, options.beta1), b.scale(grad, 1 - options.beta1));
  const int new_v = b.sum(b.scale(v, options.beta2), b.scale(b.mul(grad, grad), 1 - options.beta2));
  const int denominator =
      b.sum(b.add("Sqrt", {b.div(new_v, correction2)}), b.scalar(options.epsilon, type.dtype));
  const int step = b.div(b.div(new_m, correction1), denominator);
  update.parameter = b.sub(base, b.mul(learning_rate, step));
  update.state = {{m, new_m}, {v, new_v}};
  return update;
}

void add_output(TrainingGraph& training, size_t slot, int value) {
  training.slots[slot].updated_output = static_cast<int>(training.graph.outputs.size());
  training.graph.outputs.push_back(value);
}

size_t slot_of(const std::vector<Slot>& slots, const std::string& name) {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == name) return i;
  throw std::logic_error("training graph: no slot " + name);
}

// The gradient graph of `forward` as a piece of `batch`, and the update graph that goes with it.
std::pair<TrainingGraph, TrainingGraph> build_step_graphs(
    const Graph& forward, const std::vector<std::string>& initializers,
    const TrainingOptions& options, int64_t batch) {
  TrainingGraph gradients;
  Graph& graph = gradients.graph;
  graph = forward;
  graph.opset = std::max(graph.opset, kTrainingOpset);
  gradients.slots = data_slots(forward);
  // By position: lowering BatchNorm may replace the output's value.
  const auto position =
      std::find(graph.outputs.begin(), graph.outputs.end(), output_named(graph, options.output)) -
      graph.outputs.begin();
  const std::vector<RunningStatistic> statistics = lower_batch_norms(graph, batch);
  keep_max_pool_indices(graph);
  const int prediction = graph.outputs[static_cast<size_t>(position)];
  const int loss = add_loss(graph, prediction, options.loss, "tandem/labels", batch);
  gradients.slots.push_back({SlotRole::kLabels, "tandem/labels", {}, -1, -1});

  std::set<int> statistic_ids;
  for (const RunningStatistic& s : statistics) statistic_ids.insert(s.value);
  const std::set<std::string> named(initializers.begin(), initializers.end());
  std::vector<int> candidates;
  for (size_t id = 0; id < graph.values.size(); ++id) {
    const Value& value = graph.values[id];
    if (value.is_constant() && is_floating(value.type.dtype) && named.count(value.name) &&
        !statistic_ids.count(static_cast<int>(id)) && !frozen(options, value.name))
      candidates.push_back(static_cast<int>(id));
  }
  const std::vector<int> parameters = values_loss_depends_on(graph, loss, candidates);
  if (parameters.empty()) {
    throw InputError("no initializer of the model reaches the loss through a differentiable path" +
                     std::string(options.frozen.empty() ? "" : " (after --freeze)"));
  }
  make_inputs(graph, gradients.slots, parameters, SlotRole::kParameter);
  for (int id : parameters) gradients.parameters.push_back(graph.values[id].name);
  std::vector<int> origins;
  const std::vector<int> grads =
      append_gradients(graph, loss, parameters, options.recompute, &origins);
  std::unordered_map<std::string, std::string> origin_name;  // survives pruning
  for (size_t n = 0; n < origins.size(); ++n)
    if (origins[n] >= 0)
      origin_name[graph.nodes[n].name] = graph.nodes[static_cast<size_t>(origins[n])].name;
  graph.outputs = {loss, prediction};
  gradients.joins = {OutputJoin::kSum, OutputJoin::kConcat};
  gradients.loss_output = 0;
  gradients.prediction_output = 1;
  for (int g : grads) {
    graph.outputs.push_back(g);
    gradients.joins.push_back(OutputJoin::kSum);
  }
  for (const RunningStatistic& s : statistics) {
    graph.outputs.push_back(s.contribution);
    gradients.joins.push_back(OutputJoin::kSum);
  }
  prune(graph);
  std::unordered_map<std::string, int> index_of;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    index_of[graph.nodes[n].name] = static_cast<int>(n);
  for (const Node& node : graph.nodes) {
    auto origin = origin_name.find(node.name);
    gradients.forward_of.push_back(origin == origin_name.end() ? -1 : index_of.at(origin->second));
  }

  // The update: parameters, their gradients and optimiser state; running statistics and the
  // pieces' contributions; learning rate and bias corrections.
  TrainingGraph update;
  Graph& step = update.graph;
  step.opset = graph.opset;
  update.parameters = gradients.parameters;
  const auto add_slot = [&](SlotRole role, const std::string& name, TensorType type, Tensor initial,
                            int source) {
    const int id = add_input(step, name, std::move(type));
    update.slots.push_back({role, name, std::move(initial), -1, source});
    return id;
  };
  std::vector<int> update_parameters, update_grads;
  for (size_t p = 0; p < parameters.size(); ++p) {
    const Value& value = graph.values[parameters[p]];
    const Slot& slot = gradients.slots[gradients.slots.size() - parameters.size() + p];
    update_parameters.push_back(
        add_slot(SlotRole::kParameter, value.name, value.type, slot.initial, -1));
    update_grads.push_back(add_slot(SlotRole::kGradient, value.name + "/grad", value.type, {},
                                    static_cast<int>(2 + p)));
  }
  std::vector<std::pair<int, int>> update_statistics;  // (running, contribution) in `step`
  for (size_t k = 0; k < statistics.size(); ++k) {
    const Value& value = forward.values[statistics[k].value];
    const int running = add_slot(SlotRole::kState, value.name, value.type, value.constant, -1);
    const int contribution = add_slot(SlotRole::kGradient, value.name + "/contribution", value.type,
                                      {}, static_cast<int>(2 + parameters.size() + k));
    update_statistics.push_back({running, contribution});
  }
  const int learning_rate =
      add_slot(SlotRole::kLearningRate, "tandem/learning_rate", {DType::kFloat32, {}}, {}, -1);
  int correction1 = -1, correction2 = -1;
  if (options.optimizer != Optimizer::kSgd) {
    correction1 = add_slot(SlotRole::kBiasCorrection1, "tandem/bias_correction1",
                           {DType::kFloat32, {}}, {}, -1);
    correction2 = add_slot(SlotRole::kBiasCorrection2, "tandem/bias_correction2",
                           {DType::kFloat32, {}}, {}, -1);
  }
  GraphBuilder b(step, "optimizer");
  for (size_t p = 0; p < parameters.size(); ++p) {
    const Update result = optimise(b, options, update_parameters[p], update_grads[p], learning_rate,
                                   correction1, correction2, update.slots);
    add_output(update, slot_of(update.slots, step.values[update_parameters[p]].name),
               result.parameter);
    for (const auto& [input, updated] : result.state)
      add_output(update, slot_of(update.slots, step.values[input].name), updated);
  }
  for (size_t k = 0; k < statistics.size(); ++k) {
    const auto [running, contribution] = update_statistics[k];
    const int moved = b.sum(b.scale(running, statistics[k].momentum), contribution);
    add_output(update, slot_of(update.slots, step.values[running].name), moved);
  }
  step.sort_topologically();
  return {std::move(gradients), std::move(update)};
}

}  // namespace

TrainingGraph build_gradient_graph(const Graph& forward,
                                   const std::vector<std::string>& initializers,
                                   const TrainingOptions& options, int64_t batch) {
  return build_step_graphs(forward, initializers, options, batch).first;
}

TrainingStep build_training_step(const Graph& forward, const std::vector<std::string>& initializers,
                                 const TrainingOptions& options) {
  const Value& first =
      forward.values.at(static_cast<size_t>(output_named(forward, options.output)));
  if (first.type.shape.empty()) throw InputError("output '" + first.name + "' has no batch axis");
  auto [gradients, update] = build_step_graphs(forward, initializers, options, first.type.shape[0]);
  return {std::move(gradients), std::move(update)};
}

TrainingGraph build_evaluation_graph(const Graph& forward, const TrainingStep& step,
                                     const TrainingOptions& options) {
  TrainingGraph evaluation;
  Graph& graph = evaluation.graph;
  graph = forward;
  evaluation.slots = data_slots(forward);
  const int prediction = output_named(graph, options.output);
  std::vector<int> parameters, states;
  for (const Slot& slot : step.update.slots) {
    if (slot.role != SlotRole::kParameter && slot.role != SlotRole::kState) continue;
    const int id = graph.find_value(slot.name);
    if (id < 0 || !graph.values[id].is_constant()) continue;
    (slot.role == SlotRole::kParameter ? parameters : states).push_back(id);
  }
  make_inputs(graph, evaluation.slots, parameters, SlotRole::kParameter);
  make_inputs(graph, evaluation.slots, states, SlotRole::kState);
  graph.outputs = {prediction};
  evaluation.prediction_output = 0;
  prune(graph);
  return evaluation;
}

}  // namespace tandem::train
