// The training graph: which inputs it takes, and one step's arithmetic checked by hand for SGD,
// momentum, Adam and AdamW, BatchNorm's running statistics, and what it refuses.
#include "train/training_graph.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_device.h"
#include "ir/error.h"
#include "ir/infer.h"
#include "runtime/executor.h"
#include "train/trainer.h"

namespace tandem::train {
namespace {

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_vector(DType::kFloat32, std::move(shape), values);
}

int add_constant(Graph& graph, const std::string& name, Tensor value) {
  const int id = graph.add_value(name, {value.dtype(), value.shape()});
  graph.values[id].constant = std::move(value);
  return id;
}

int add_node(Graph& graph, const std::string& op, std::vector<int> inputs,
             std::map<std::string, Attribute, std::less<>> attributes = {}) {
  Node node;
  node.name = op + std::to_string(graph.nodes.size());
  node.op_type = op;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  node.outputs = {graph.add_value(node.name + "_out")};
  graph.nodes.push_back(node);
  return node.outputs[0];
}

// y = x W^T + b: x [4, 3], W [2, 3], b [2].
Graph linear_model() {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {4, 3}});
  graph.inputs = {x};
  const int w = add_constant(graph, "W", floats({2, 3}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}));
  const int b = add_constant(graph, "b", floats({2}, {0.05f, -0.05f}));
  graph.outputs = {add_node(graph, "Gemm", {x, w, b}, {{"transB", int64_t{1}}})};
  infer_graph(graph);
  return graph;
}

const Tensor kX = floats({4, 3}, {1, 2, 3, -1, 0, 1, 0.5f, -0.5f, 2, 3, 1, -2});
const Tensor kTarget = floats({4, 2}, {1, 0, 0, 1, -1, 2, 0.5f, 0.5f});

// d mse / dW and d mse / db of the linear model, by hand.
std::pair<std::vector<double>, std::vector<double>> linear_grads(const Graph& model) {
  const float* w = model.values[model.find_value("W")].constant.data<float>();
  const float* b = model.values[model.find_value("b")].constant.data<float>();
  std::vector<double> dw(6, 0), db(2, 0);
  for (int n = 0; n < 4; ++n) {
    for (int o = 0; o < 2; ++o) {
      double y = b[o];
      for (int i = 0; i < 3; ++i) y += kX.data<float>()[n * 3 + i] * w[o * 3 + i];
      const double g = 2 * (y - kTarget.data<float>()[n * 2 + o]) / 8;  // mean over 8 elements
      db[o] += g;
      for (int i = 0; i < 3; ++i) dw[o * 3 + i] += g * kX.data<float>()[n * 3 + i];
    }
  }
  return {dw, db};
}

// Runs steps of the training step's two graphs on the CPU; returns every kept value after them.
std::map<std::string, std::vector<double>> run_steps(const TrainingStep& step,
                                                     const TrainingOptions& options,
                                                     float learning_rate, const Tensor& x,
                                                     const Tensor& target, int steps = 1) {
  const TrainingGraph evaluation;  // step() does not evaluate
  Trainer trainer(step, evaluation, options);
  cpu::CpuDevice device;
  GraphExecutor gradients(step.gradients.graph, device), update(step.update.graph, device);
  const Runners runners{[&](std::span<const Tensor> in) { return gradients.run(in); },
                        [&](std::span<const Tensor> in) { return update.run(in); }, nullptr};
  for (int s = 0; s < steps; ++s)
    trainer.step(runners, std::vector<Tensor>{x}, target, learning_rate);
  std::map<std::string, std::vector<double>> values;
  for (const auto& [name, value] : trainer.values()) values[name] = value.to_doubles();
  return values;
}

std::map<std::string, std::vector<double>> one_step(const TrainingStep& step,
                                                    const TrainingOptions& options,
                                                    float learning_rate) {
  return run_steps(step, options, learning_rate, kX, kTarget);
}

TEST(TrainingGraph, SlotsAndOutputs) {
  const Graph model = linear_model();
  TrainingOptions options;
  options.loss = Loss::kMeanSquaredError;
  options.optimizer = Optimizer::kAdam;
  const TrainingStep step = build_training_step(model, {"W", "b"}, options);
  EXPECT_EQ(step.gradients.parameters, (std::vector<std::string>{"W", "b"}));
  const auto roles = [](const TrainingGraph& graph) {
    std::vector<SlotRole> roles;
    for (const Slot& slot : graph.slots) roles.push_back(slot.role);
    return roles;
  };
  EXPECT_EQ(roles(step.gradients),
            (std::vector<SlotRole>{SlotRole::kData, SlotRole::kLabels, SlotRole::kParameter,
                                   SlotRole::kParameter}));
  EXPECT_EQ(roles(step.update),
            (std::vector<SlotRole>{SlotRole::kParameter, SlotRole::kGradient, SlotRole::kParameter,
                                   SlotRole::kGradient, SlotRole::kLearningRate,
                                   SlotRole::kBiasCorrection1, SlotRole::kBiasCorrection2,
                                   SlotRole::kOptimizerState, SlotRole::kOptimizerState,
                                   SlotRole::kOptimizerState, SlotRole::kOptimizerState}));
  // Loss and gradients add up over pieces of a batch; the prediction joins along it.
  EXPECT_EQ(step.gradients.joins, (std::vector<OutputJoin>{OutputJoin::kSum, OutputJoin::kConcat,
                                                           OutputJoin::kSum, OutputJoin::kSum}));
  for (const TrainingGraph* graph : {&step.gradients, &step.update}) {
    ASSERT_EQ(graph->slots.size(), graph->graph.inputs.size());
    for (int id : graph->graph.inputs) EXPECT_FALSE(graph->graph.values[id].is_constant());
  }
  for (const Slot& slot : step.update.slots) {
    const bool updated =
        slot.role == SlotRole::kParameter || slot.role == SlotRole::kOptimizerState;
    EXPECT_EQ(slot.updated_output >= 0, updated) << slot.name;
    EXPECT_EQ(slot.source_output >= 0, slot.role == SlotRole::kGradient) << slot.name;
  }
}

TEST(TrainingGraph, SgdStepMatchesHandGradients) {
  const Graph model = linear_model();
  TrainingOptions options;
  options.loss = Loss::kMeanSquaredError;
  const auto [dw, db] = linear_grads(model);
  const auto after = one_step(build_training_step(model, {"W", "b"}, options), options, 0.1f);
  const float* w = model.values[model.find_value("W")].constant.data<float>();
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(after.at("W")[i], w[i] - 0.1 * dw[i], 1e-6) << i;
  const float* b = model.values[model.find_value("b")].constant.data<float>();
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(after.at("b")[i], b[i] - 0.1 * db[i], 1e-6) << i;
}

TEST(TrainingGraph, MomentumAndWeightDecay) {
  const Graph model = linear_model();
  TrainingOptions options;
  options.loss = Loss::kMeanSquaredError;
  options.momentum = 0.9f;
  options.weight_decay = 0.01f;
  const auto [dw, db] = linear_grads(model);
  const auto after = one_step(build_training_step(model, {"W", "b"}, options), options, 0.1f);
  const float* w = model.values[model.find_value("W")].constant.data<float>();
  for (int i = 0; i < 6; ++i) {
    const double g = dw[i] + 0.01 * w[i];  // the first step's velocity is the gradient
    EXPECT_NEAR(after.at("W/momentum")[i], g, 1e-6) << i;
    EXPECT_NEAR(after.at("W")[i], w[i] - 0.1 * g, 1e-6) << i;
  }
}

TEST(TrainingGraph, AdamFirstStepMovesByTheLearningRate) {
  // After one step m/(1-b1) = g and sqrt(v/(1-b2)) = |g|: every weight moves by lr * sign(g).
  const Graph model = linear_model();
  for (Optimizer optimizer : {Optimizer::kAdam, Optimizer::kAdamW}) {
    TrainingOptions options;
    options.loss = Loss::kMeanSquaredError;
    options.optimizer = optimizer;
    options.weight_decay = optimizer == Optimizer::kAdamW ? 0.5f : 0.0f;
    const auto [dw, db] = linear_grads(model);
    const auto after = one_step(build_training_step(model, {"W", "b"}, options), options, 0.01f);
    const float* w = model.values[model.find_value("W")].constant.data<float>();
    for (int i = 0; i < 6; ++i) {
      const double decayed = w[i] * (1 - 0.01 * options.weight_decay);
      EXPECT_NEAR(after.at("W")[i], decayed - 0.01 * (dw[i] > 0 ? 1 : -1), 1e-5) << i;
      EXPECT_NEAR(after.at("W/adam_m")[i], 0.1 * dw[i], 1e-6) << i;
      // 1 - beta2 in float32 is 0.001 within 1.3e-5 of itself.
      EXPECT_NEAR(after.at("W/adam_v")[i], 0.001 * dw[i] * dw[i], 1e-4 * 0.001 * dw[i] * dw[i])
          << i;
    }
  }
}

TEST(TrainingGraph, FrozenInitializersStayConstants) {
  const Graph model = linear_model();
  TrainingOptions options;
  options.loss = Loss::kMeanSquaredError;
  options.frozen = {"W*"};
  EXPECT_EQ(build_training_step(model, {"W", "b"}, options).gradients.parameters,
            std::vector<std::string>{"b"});
  options.frozen = {"*"};
  EXPECT_THROW(build_training_step(model, {"W", "b"}, options), InputError);
}

TEST(TrainingGraph, BatchNormUsesBatchStatisticsAndUpdatesRunningOnes) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {4, 2}});
  graph.inputs = {x};
  const int scale = add_constant(graph, "scale", floats({2}, {1, 1}));
  const int bias = add_constant(graph, "bias", floats({2}, {0, 0}));
  const int mean = add_constant(graph, "mean", floats({2}, {0.5f, -0.5f}));
  const int var = add_constant(graph, "var", floats({2}, {2, 3}));
  graph.outputs = {add_node(graph, "BatchNormalization", {x, scale, bias, mean, var})};
  infer_graph(graph);
  TrainingOptions options;
  options.loss = Loss::kMeanSquaredError;
  const TrainingStep step = build_training_step(graph, {"scale", "bias", "mean", "var"}, options);
  EXPECT_EQ(step.gradients.parameters, (std::vector<std::string>{"scale", "bias"}));
  const Tensor batch = floats({4, 2}, {1, 10, 2, 20, 3, 30, 6, 40});
  const auto after = run_steps(step, options, 0.0f, batch, Tensor::zeros(DType::kFloat32, {4, 2}));
  // Channel 0: mean 3, unbiased variance 14/3; channel 1: mean 25, unbiased variance 500/3.
  const std::vector<double>& running_mean = after.at("mean");
  const std::vector<double>& running_var = after.at("var");
  EXPECT_NEAR(running_mean[0], 0.9 * 0.5 + 0.1 * 3, 1e-5);
  EXPECT_NEAR(running_mean[1], 0.9 * -0.5 + 0.1 * 25, 1e-5);
  EXPECT_NEAR(running_var[0], 0.9 * 2 + 0.1 * 14.0 / 3, 1e-4);
  EXPECT_NEAR(running_var[1], 0.9 * 3 + 0.1 * 500.0 / 3, 1e-3);
}

TEST(TrainingGraph, CrossEntropyNeedsLogitsOfBatchByClasses) {
  Graph graph = linear_model();
  TrainingOptions options;  // cross-entropy on [4, 2] logits: fine
  EXPECT_NO_THROW(build_training_step(graph, {"W", "b"}, options));
  const int flat = add_node(graph, "Flatten", {graph.outputs[0]}, {{"axis", int64_t{0}}});
  const int wide = add_node(
      graph, "Unsqueeze",
      {flat, add_constant(graph, "axes", Tensor::from_vector<int64_t>(DType::kInt64, {1}, {0}))});
  graph.outputs = {wide};
  infer_graph(graph);
  try {
    build_training_step(graph, {"W", "b"}, options);
    FAIL() << "rank-3 logits";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cross-entropy needs logits [batch, classes]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem::train
