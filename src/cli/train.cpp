// `tandem train`: builds the training step of a model (forward, loss, gradients, optimiser) as
// one graph, plans it on a cluster like any graph, and runs it step after step.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_device.h"
#include "backends/registry.h"
#include "cli/commands.h"
#include "cost/cost_model.h"
#include "ir/error.h"
#include "onnx/export.h"
#include "plan/strategy.h"
#include "report/table.h"
#include "runtime/plan_executor.h"
#include "sim/simulator.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "util/statistics.h"

namespace tandem::cli {
namespace {

namespace fs = std::filesystem;
using train::Trainer;

train::TrainingOptions training_options(const TrainOptions& options) {
  train::TrainingOptions result;
  result.loss = options.loss == "mse" ? train::Loss::kMeanSquaredError : train::Loss::kCrossEntropy;
  result.optimizer = options.optimizer == "adam"    ? train::Optimizer::kAdam
                     : options.optimizer == "adamw" ? train::Optimizer::kAdamW
                                                    : train::Optimizer::kSgd;
  result.momentum = static_cast<float>(options.momentum);
  result.weight_decay = static_cast<float>(options.weight_decay);
  result.beta1 = static_cast<float>(options.beta1);
  result.beta2 = static_cast<float>(options.beta2);
  result.epsilon = static_cast<float>(options.epsilon);
  result.output = options.output;
  result.frozen = options.frozen;
  if (options.momentum != 0 && result.optimizer != train::Optimizer::kSgd)
    throw InputError("--momentum", "applies to --optimizer sgd only");
  return result;
}

// The model bound to the batch: every input's shape is the batch then its rows' shape in the data.
ImportedModel load_bound(const TrainOptions& options, const train::DataSplit& split,
                         const std::vector<std::string>& names) {
  ModelOptions bound;
  bound.model = options.model;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string shape = std::to_string(options.batch);
    for (int64_t axis = 1; axis < split.inputs[i].rank(); ++axis)
      shape += "x" + std::to_string(split.inputs[i].dim(axis));
    bound.shapes.push_back(names[i] + "=" + shape);
  }
  ImportedModel model = load_model(bound);
  for (size_t i = 0; i < names.size(); ++i) {
    const Value& input = model.graph.values[model.graph.inputs[i]];
    if (input.type.dtype != split.inputs[i].dtype()) {
      throw InputError(split.path, "input '" + names[i] + "' is " +
                                       std::string(dtype_name(split.inputs[i].dtype())) +
                                       "; the model takes " +
                                       std::string(dtype_name(input.type.dtype)));
    }
  }
  return model;
}

// Why `device` cannot run the whole graph: one refusal per op type.
std::string refusals(const Graph& graph, const DeviceSpec& device) {
  std::map<std::string, std::string> by_op;
  for (const Node& node : graph.nodes) {
    const std::string reason = cannot_run_reason(device, node, graph);
    if (!reason.empty()) by_op.emplace(node.op_type, reason);
  }
  std::string text;
  for (const auto& [op, reason] : by_op) text += (text.empty() ? "" : "; ") + reason;
  return text;
}

Plan plan_graph(const PlanningProblem& problem, const std::string& strategy,
                const std::string& what) {
  const std::optional<Plan> plan = make_strategy(strategy, problem.cluster())->plan(problem);
  if (plan) return *plan;
  std::string why;
  if (strategy.starts_with("single:")) {
    for (const DeviceSpec& device : problem.cluster().devices)
      if (device.id == strategy.substr(7)) why = refusals(*problem.graph(), device);
  }
  throw InputError("--strategy " + strategy, "found no plan of the " + what +
                                                 " that fits the cluster" +
                                                 (why.empty() ? "" : ": " + why));
}

std::string plan_summary(const Plan& plan, const Cluster& cluster) {
  std::vector<int> nodes(cluster.devices.size(), 0);
  for (int device : plan.device_of_node) ++nodes[static_cast<size_t>(device)];
  std::string text;
  for (size_t d = 0; d < nodes.size(); ++d) {
    if (nodes[d] == 0) continue;
    text += (text.empty() ? "" : ", ") + cluster.devices[d].id + " " + std::to_string(nodes[d]) +
            " ops";
  }
  return (plan.chosen.empty() ? plan.strategy : plan.chosen) + " (" + text + ")";
}

double percent(double fraction) { return 100.0 * fraction; }

}  // namespace

int train_command(const TrainOptions& options) {
  cpu::set_cpu_threads(options.threads);
  const train::TrainingOptions settings = training_options(options);
  const float learning_rate = static_cast<float>(
      options.learning_rate > 0 ? options.learning_rate
                                : (settings.optimizer == train::Optimizer::kSgd ? 0.01 : 0.001));
  const bool terminal = isatty(fileno(stderr)) && !options.json;

  // The model's input names decide which files each split holds.
  std::vector<std::string> names;
  {
    const ImportedModel unbound = import_onnx(options.model);
    for (int id : unbound.graph.inputs) names.push_back(unbound.graph.values[id].name);
  }
  const fs::path data(options.data);
  if (!fs::is_directory(data)) throw InputError(options.data, "no such folder");
  if (!fs::is_directory(data / "train"))
    throw InputError(options.data, "has no train/ folder (see tandem train --help)");
  const train::DataSplit train_split = train::read_split((data / "train").string(), names);
  std::optional<train::DataSplit> test_split;
  if (fs::is_directory(data / "test"))
    test_split = train::read_split((data / "test").string(), names);
  if (train_split.samples() < options.batch) {
    throw InputError(train_split.path, "has " + std::to_string(train_split.samples()) +
                                           " samples, fewer than one batch of " +
                                           std::to_string(options.batch));
  }

  const ImportedModel model = load_bound(options, train_split, names);
  const train::TrainingGraph training =
      train::build_training_graph(model.graph, model.initializers, settings);
  const train::TrainingGraph evaluation =
      train::build_evaluation_graph(model.graph, training, settings);
  Trainer trainer(training, evaluation, settings.loss, settings);
  trainer.check_labels(train_split);
  if (test_split) trainer.check_labels(*test_split);
  if (!options.resume.empty()) {
    const train::Checkpoint checkpoint = train::read_checkpoint(options.resume);
    trainer.restore(checkpoint.values, checkpoint.steps, options.resume + "/checkpoint.json");
  }

  const Cluster cluster = options.cluster.empty() ? local_cluster() : load_cluster(options.cluster);
  const CostModel cost(cluster);
  const auto devices = make_devices(cost.cluster(), terminal);
  PlanOptions plan_options;
  plan_options.batch = options.batch;
  plan_options.batch_unsplittable =
      "a training step sums its gradients over the whole batch (micro-batched and data-parallel "
      "training schedules are not built yet)";
  const PlanningProblem step_problem(training.graph, cost.cluster(), cost, plan_options);
  const Plan step_plan = plan_graph(step_problem, options.strategy, "training step");
  const SimulationResult simulated = simulate(step_problem, step_plan, {});
  const PlanningProblem eval_problem(evaluation.graph, cost.cluster(), cost, plan_options);
  const Plan eval_plan = plan_graph(eval_problem, options.strategy, "evaluation graph");

  std::vector<Device*> pointers;
  for (const auto& device : devices) pointers.push_back(device.get());
  PlanExecutor step_executor(training.graph, step_plan, pointers);
  PlanExecutor eval_executor(evaluation.graph, eval_plan, pointers);
  const train::GraphRunner step_runner = [&](std::span<const Tensor> inputs) {
    return step_executor.run(inputs);
  };
  const train::GraphRunner eval_runner = [&](std::span<const Tensor> inputs) {
    return eval_executor.run(inputs);
  };

  size_t parameter_count = 0;
  for (const train::Slot& slot : training.slots)
    if (slot.role == train::SlotRole::kParameter)
      parameter_count += static_cast<size_t>(slot.initial.numel());
  const int64_t steps_per_epoch = train_split.samples() / options.batch;
  if (options.json) {
    nlohmann::json start = {
        {"event", "start"},
        {"model", options.model},
        {"parameters", training.parameters.size()},
        {"parameter_elements", parameter_count},
        {"training_graph_nodes", training.graph.nodes.size()},
        {"steps_per_epoch", steps_per_epoch},
        {"strategy", step_plan.chosen.empty() ? step_plan.strategy : step_plan.chosen},
        {"predicted_step_seconds", step_plan.predicted.latency_seconds},
        {"simulated_step_seconds", simulated.latency_seconds}};
    std::printf("%s\n", start.dump().c_str());
  } else {
    std::printf("training %s: %zu parameters (%s elements), %lld steps per epoch of %lld samples\n",
                options.model.c_str(), training.parameters.size(),
                si(static_cast<double>(parameter_count)).c_str(),
                static_cast<long long>(steps_per_epoch), static_cast<long long>(options.batch));
    std::printf("plan: %s; a step predicted %s (simulated %s)\n",
                plan_summary(step_plan, cost.cluster()).c_str(),
                seconds_text(step_plan.predicted.latency_seconds).c_str(),
                seconds_text(simulated.latency_seconds).c_str());
  }
  std::fflush(stdout);

  train::Schedule schedule;
  schedule.batch = options.batch;
  schedule.epochs = options.epochs;
  schedule.max_steps = options.steps;
  schedule.learning_rate = learning_rate;
  schedule.shuffle = options.shuffle;
  schedule.seed = options.seed;
  std::vector<double> step_seconds;
  train::EpochRecord last_epoch;
  const auto on_step = [&](const train::StepRecord& step) {
    step_seconds.push_back(step.seconds);
    if (options.json) {
      const nlohmann::json line = {
          {"event", "step"},
          {"step", step.step},
          {"epoch", step.epoch},
          {"loss", step.loss},
          {"seconds", step.seconds},
          {"samples_per_second", static_cast<double>(step.samples) / step.seconds}};
      std::printf("%s\n", line.dump().c_str());
    } else if (terminal) {
      std::fprintf(stderr, "\r  epoch %d  step %lld  loss %.4f  %.0f samples/s   ", step.epoch,
                   static_cast<long long>(step.step), step.loss,
                   static_cast<double>(step.samples) / step.seconds);
    }
    if (!options.checkpoint.empty() && options.checkpoint_every > 0 &&
        step.step % options.checkpoint_every == 0)
      train::write_checkpoint(options.checkpoint, options.model, trainer);
  };
  const auto on_epoch = [&](const train::EpochRecord& epoch) {
    last_epoch = epoch;
    if (options.json) {
      nlohmann::json line = {{"event", "epoch"},
                             {"epoch", epoch.epoch},
                             {"train_loss", epoch.train_loss},
                             {"seconds", epoch.seconds}};
      if (epoch.train_accuracy >= 0) line["train_accuracy"] = epoch.train_accuracy;
      if (epoch.test_loss) line["test_loss"] = *epoch.test_loss;
      if (epoch.test_accuracy) line["test_accuracy"] = *epoch.test_accuracy;
      std::printf("%s\n", line.dump().c_str());
    } else {
      if (terminal) std::fprintf(stderr, "\r%78s\r", "");
      std::string text = format("epoch %d: train loss %.4f", epoch.epoch, epoch.train_loss);
      if (epoch.train_accuracy >= 0)
        text += format(" (accuracy %.1f%%)", percent(epoch.train_accuracy));
      if (epoch.test_loss) text += format(", test loss %.4f", *epoch.test_loss);
      if (epoch.test_accuracy) text += format(" (accuracy %.1f%%)", percent(*epoch.test_accuracy));
      text += ", " + seconds_text(epoch.seconds);
      std::printf("%s\n", text.c_str());
    }
    std::fflush(stdout);
  };
  trainer.fit(step_runner, eval_runner, train_split, test_split ? &*test_split : nullptr, schedule,
              on_step, on_epoch);
  if (!options.checkpoint.empty())
    train::write_checkpoint(options.checkpoint, options.model, trainer);
  if (!options.save.empty())
    write_with_initializers(options.model, options.save, trainer.initializers());

  // The first step compiles kernels: the steady state is the median of the rest.
  const std::vector<double> steady(
      step_seconds.size() > 1 ? step_seconds.begin() + 1 : step_seconds.begin(),
      step_seconds.end());
  const double measured = steady.empty() ? 0 : median(steady);
  if (options.json) {
    nlohmann::json done = {
        {"event", "done"},
        {"steps", trainer.steps_taken()},
        {"median_step_seconds", measured},
        {"samples_per_second", measured > 0 ? static_cast<double>(options.batch) / measured : 0},
        {"predicted_step_seconds", step_plan.predicted.latency_seconds},
        {"simulated_step_seconds", simulated.latency_seconds}};
    nlohmann::json memory = nlohmann::json::object();
    for (const DeviceActivity& device : simulated.devices)
      if (device.peak_memory_bytes > 0) memory[device.id] = device.peak_memory_bytes;
    done["simulated_peak_memory_bytes"] = memory;
    if (!options.save.empty()) done["saved"] = options.save;
    std::printf("%s\n", done.dump().c_str());
  } else {
    Table table({"", "step"});
    table.add_row({"measured (median)", seconds_text(measured)});
    table.add_row({"predicted", seconds_text(step_plan.predicted.latency_seconds)});
    table.add_row({"simulated", seconds_text(simulated.latency_seconds)});
    for (const DeviceActivity& device : simulated.devices)
      if (device.peak_memory_bytes > 0)
        table.add_row(
            {device.id + " peak memory (simulated)", human_bytes(device.peak_memory_bytes)});
    std::printf("%lld steps, %.0f samples/s\n%s", static_cast<long long>(trainer.steps_taken()),
                measured > 0 ? static_cast<double>(options.batch) / measured : 0.0,
                table.render().c_str());
    if (!options.save.empty()) std::printf("saved %s\n", options.save.c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
