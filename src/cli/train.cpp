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
#include "cli/run_cluster.h"
#include "cost/cost_model.h"
#include "ir/error.h"
#include "onnx/export.h"
#include "plan/plan_json.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "report/json_schema.h"
#include "report/table.h"
#include "runtime/fault.h"
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
  result.weight_decay = static_cast<float>(
      options.weight_decay.value_or(result.optimizer == train::Optimizer::kAdamW ? 0.01 : 0.0));
  result.beta1 = static_cast<float>(options.beta1);
  result.beta2 = static_cast<float>(options.beta2);
  result.epsilon = static_cast<float>(options.epsilon);
  result.output = options.output;
  result.frozen = options.frozen;
  result.recompute = options.recompute;
  if (options.momentum != 0 && result.optimizer != train::Optimizer::kSgd)
    throw InputError("--momentum", "applies to --optimizer sgd only");
  return result;
}

// The model bound to the batch: every input's shape is the batch then its rows' shape in the data.
ImportedModel load_bound(const TrainOptions& options, const train::DataSplit& split,
                         const std::vector<std::string>& names, int64_t batch) {
  ImportOptions bound;
  for (size_t i = 0; i < names.size(); ++i) {
    Shape shape = split.inputs[i].shape();
    shape[0] = batch;
    bound.shapes[names[i]] = GivenShape(shape, split.files[i]);
  }
  ImportedModel model = import_onnx(options.model, bound);
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

Plan plan_with(const PlanningProblem& problem, const Strategy& planner, const std::string& strategy,
               const std::string& what) {
  const std::optional<Plan> plan = planner.plan(problem);
  if (plan) return *plan;
  std::string why;
  if (strategy.starts_with("single:")) {
    for (const DeviceSpec& device : problem.cluster().devices)
      if (device.id == strategy.substr(7)) why = refusals(*problem.graph(), device);
  }
  throw InputError(
      "--strategy " + strategy,
      "found no plan of the " + what + " that fits the cluster" + (why.empty() ? "" : ": " + why));
}

Plan plan_graph(const PlanningProblem& problem, const std::string& strategy,
                const std::string& what) {
  return plan_with(problem, *make_strategy(strategy, problem.cluster()), strategy, what);
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

// How the gradient graph's batch splits: data and labels along axis 0, parameters whole to every
// piece; the prediction joins, the loss and the gradients add up. A piece runs the model
// re-imported at its size (a gradient graph of the same nodes).
BatchSplit gradient_split(const train::TrainingGraph& gradients, const TrainOptions& options,
                          const train::DataSplit& split, const std::vector<std::string>& names,
                          const std::vector<std::string>& initializers,
                          const train::TrainingOptions& settings) {
  BatchSplit result;
  result.batch = options.batch;
  for (const train::Slot& slot : gradients.slots) {
    const bool per_sample =
        slot.role == train::SlotRole::kData || slot.role == train::SlotRole::kLabels;
    result.input_axis.push_back(per_sample ? 0 : -1);
  }
  for (train::OutputJoin join : gradients.joins) {
    result.output_axis.push_back(0);
    result.output_summed.push_back(join == train::OutputJoin::kSum);
  }
  result.graph_for = [&options, &split, &gradients, names, initializers,
                      settings](int64_t samples) {
    const ImportedModel piece = load_bound(options, split, names, samples);
    auto graph = std::make_shared<train::TrainingGraph>(
        train::build_gradient_graph(piece.graph, initializers, settings, options.batch));
    // A gradient sums a broadcast operand over its size-1 axes; with one sample the batch axis
    // is size 1 too, and the piece's graph can come out with other nodes than the batch's.
    const auto& built = graph->graph.nodes;
    const auto& whole = gradients.graph.nodes;
    if (built.size() != whole.size() ||
        !std::equal(built.begin(), built.end(), whole.begin(),
                    [](const Node& a, const Node& b) { return a.name == b.name; })) {
      throw InputError("--batch " + std::to_string(options.batch),
                       "a piece of " + std::to_string(samples) +
                           " sample(s) gives this model a gradient graph of other nodes than "
                           "the whole batch's (a broadcast over the batch axis looks alike at "
                           "one sample): use fewer micro-batches or shares of 2 or more samples");
    }
    return std::shared_ptr<const Graph>(graph, &graph->graph);
  };
  return result;
}

// What a checkpoint records of the run's options: a resumed run must repeat them, or its
// optimiser state and data order would not be the ones the checkpoint goes on from.
std::map<std::string, std::string> resumable_settings(const TrainOptions& options,
                                                      const train::TrainingOptions& settings) {
  return {{"--optimizer", options.optimizer},
          {"--loss", options.loss},
          {"--batch", std::to_string(options.batch)},
          {"--seed", std::to_string(options.seed)},
          {"--shuffle", options.shuffle ? "yes" : "no (--no-shuffle)"},
          {"--recompute", settings.recompute ? "yes" : "no"}};
}

int train(const TrainOptions& options) {
  // Under mpirun, MPI starts before any thread does.
  const std::shared_ptr<RankWorld> world = join_ranks_if_launched();
  if (world && options.cluster.empty())
    throw InputError("mpirun", "tandem train across ranks needs --cluster (whose hosts they run)");
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

  const ImportedModel model = load_bound(options, train_split, names, options.batch);
  const train::TrainingStep step = [&] {
    try {
      return train::build_training_step(model.graph, model.initializers, settings);
    } catch (InputError& error) {  // about the model: name it
      if (error.subject().empty()) error.set_subject(options.model);
      throw;
    }
  }();
  const train::TrainingGraph evaluation =
      train::build_evaluation_graph(model.graph, step, settings);
  Trainer trainer(step, evaluation, settings);
  trainer.check_labels(train_split);
  if (test_split) trainer.check_labels(*test_split);
  if (!options.resume.empty()) {
    const train::Checkpoint checkpoint = train::read_checkpoint(options.resume);
    const std::string manifest = (fs::path(options.resume) / "checkpoint.json").string();
    for (const auto& [option, value] : resumable_settings(options, settings)) {
      auto written = checkpoint.settings.find(option);
      if (written != checkpoint.settings.end() && written->second != value) {
        throw InputError(manifest, "was written with " + option + " " + written->second +
                                       "; this run has " + value +
                                       " (a resumed run repeats the checkpoint's settings)");
      }
    }
    trainer.restore(checkpoint.values, checkpoint.steps, manifest);
  }

  const Cluster cluster = options.cluster.empty() ? local_cluster() : load_cluster(options.cluster);
  const CostModel cost(cluster);
  // Under mpirun each rank starts the devices of its host; rank 0 plans, feeds the batches and
  // runs the update and the evaluation on its own devices, the others join each gradient run.
  std::optional<RankRuns> ranks;
  if (world) ranks.emplace(*world, cost.cluster(), options.rank_hosts, options.cluster);
  const bool root = !ranks || ranks->root();
  const auto devices =
      ranks ? ranks->start_devices(cost.cluster()) : make_devices(cost.cluster(), terminal);
  // The gradient graph splits: pieces (micro-batches, data-parallel shares) each run the model
  // bound to their size, and their losses and gradients add up.
  const BatchSplit split =
      gradient_split(step.gradients, options, train_split, names, model.initializers, settings);
  PlanOptions gradient_options;
  gradient_options.batch = options.batch;
  gradient_options.microbatches = options.microbatches;
  for (int origin : step.gradients.forward_of) gradient_options.node_phase.push_back(origin >= 0);
  PlanOptions whole;  // the update and the evaluation run whole, on rank 0's devices
  whole.batch = options.batch;
  whole.batch_unsplittable = "it runs once per step, on the summed gradients";
  if (ranks) {
    for (size_t d = 0; d < cost.cluster().devices.size(); ++d)
      if (ranks->rank_of_device()[d] != 0) whole.excluded.push_back(cost.cluster().devices[d].id);
  }
  const PlanningProblem gradient_problem(step.gradients.graph, cost.cluster(), cost,
                                         gradient_options);
  // A pipeline of a training step keeps each layer's backward beside its forward.
  const auto plan_gradients = [&] {
    if (options.strategy != "pipeline")
      return plan_graph(gradient_problem, options.strategy, "gradient graph");
    Plan plan =
        plan_with(gradient_problem, *make_colocated_pipeline_strategy(step.gradients.forward_of),
                  "pipeline", "gradient graph");
    if (plan.microbatches > 1) plan.piece_order = *piece_order_named(options.schedule);
    return plan;
  };
  Plan gradient_plan;
  if (ranks) {  // rank 0's plan, the same on every rank
    std::string text, error;
    if (root) {
      try {
        gradient_plan = plan_gradients();
        text = plan_json(gradient_plan, gradient_problem, PlanProvenance{}).dump();
      } catch (const std::exception& failure) {
        error = failure.what();
      }
    }
    ranks->agree(error, "cannot plan");
    text = ranks->broadcast(text);
    if (!root)
      gradient_plan =
          plan_from_json(nlohmann::json::parse(text), gradient_problem, "rank 0's plan");
  } else {
    gradient_plan = plan_gradients();
  }

  if (root && options.microbatches > gradient_plan.microbatches && !options.json) {
    std::fprintf(
        stderr, "note: %d micro-batch(es), not %d: the %s plan runs each batch so\n",
        gradient_plan.microbatches, options.microbatches,
        (gradient_plan.chosen.empty() ? gradient_plan.strategy : gradient_plan.chosen).c_str());
  }
  std::vector<Device*> pointers;
  for (const auto& device : devices) pointers.push_back(device.get());
  PlanExecutorOptions gradient_executor_options =
      ranks ? ranks->executor_options() : PlanExecutorOptions{};
  gradient_executor_options.faults = faults_from_environment();  // TANDEM_FAULT, as run takes it
  if (gradient_plan.microbatches > 1) {
    for (int origin : step.gradients.forward_of)
      gradient_executor_options.backward_nodes.push_back(origin >= 0);
  }
  std::string prepared;
  std::unique_ptr<PlanExecutor> gradient_executor;
  try {
    gradient_executor = std::make_unique<PlanExecutor>(step.gradients.graph, gradient_plan,
                                                       pointers, split, gradient_executor_options);
  } catch (const std::exception& failure) {
    if (!ranks) throw;
    prepared = failure.what();
  }
  if (ranks) ranks->agree(prepared, "cannot prepare its segments");
  if (!root) {  // this rank's devices join rank 0's gradient runs until it stops them
    ranks->serve(*gradient_executor);
    return kExitOk;
  }

  const PlanningProblem update_problem(step.update.graph, cost.cluster(), cost, whole);
  const Plan update_plan = plan_graph(update_problem, "auto", "update graph");
  const SimulationResult simulated = simulate(gradient_problem, gradient_plan, {});
  const SimulationResult simulated_update = simulate(update_problem, update_plan, {});
  const std::string eval_strategy =
      options.strategy == "data-parallel" || ranks ? std::string("auto") : options.strategy;
  const PlanningProblem eval_problem(evaluation.graph, cost.cluster(), cost, whole);
  const Plan eval_plan = plan_graph(eval_problem, eval_strategy, "evaluation graph");
  const double predicted_step =
      gradient_plan.predicted.latency_seconds + update_plan.predicted.latency_seconds;
  const double simulated_step = simulated.latency_seconds + simulated_update.latency_seconds;
  // What no plan of the two graphs beats on this cluster, and how close this one comes.
  const double bound_step = gradient_plan.lower_bound + update_plan.lower_bound;
  const double efficiency = predicted_step > 0 ? bound_step / predicted_step : 0;
  PlanExecutor update_executor(step.update.graph, update_plan, pointers);
  PlanExecutor eval_executor(evaluation.graph, eval_plan, pointers);
  const train::Runners runners{
      [&](std::span<const Tensor> inputs) {
        return ranks ? ranks->run(*gradient_executor, inputs) : gradient_executor->run(inputs);
      },
      [&](std::span<const Tensor> inputs) { return update_executor.run(inputs); },
      [&](std::span<const Tensor> inputs) { return eval_executor.run(inputs); }};
  // Rank 0 stops the others however it ends, but for a device failure, which stopped them all.
  struct StopRanks {
    std::optional<RankRuns>& ranks;
    bool failed = false;
    ~StopRanks() {
      if (ranks && !failed) ranks->stop();
    }
  } stop_ranks{ranks};

  size_t parameter_count = 0;
  for (const train::Slot& slot : step.gradients.slots)
    if (slot.role == train::SlotRole::kParameter)
      parameter_count += static_cast<size_t>(slot.initial.numel());
  const int64_t steps_per_epoch = train_split.samples() / options.batch;
  if (options.json) {
    nlohmann::json start = {
        {"schema_version", kJsonSchemaVersion},
        {"event", "start"},
        {"model", options.model},
        {"parameters", step.gradients.parameters.size()},
        {"parameter_elements", parameter_count},
        {"gradient_graph_nodes", step.gradients.graph.nodes.size()},
        {"update_graph_nodes", step.update.graph.nodes.size()},
        {"microbatches", gradient_plan.microbatches},
        {"segments", gradient_plan.segments.size()},

        {"steps_per_epoch", steps_per_epoch},
        {"strategy", gradient_plan.chosen.empty() ? gradient_plan.strategy : gradient_plan.chosen},
        {"predicted_step_s", predicted_step},
        {"simulated_step_s", simulated_step},
        {"lower_bound_step_s", bound_step},
        {"efficiency", efficiency}};
    std::printf("%s\n", start.dump().c_str());
  } else {
    std::printf("training %s: %zu parameters (%s elements), %lld steps per epoch of %lld samples\n",
                options.model.c_str(), step.gradients.parameters.size(),
                si(static_cast<double>(parameter_count)).c_str(),
                static_cast<long long>(steps_per_epoch), static_cast<long long>(options.batch));
    std::printf("plan: %s; a step predicted %s (simulated %s), bound %s (efficiency %.0f%%)\n",
                plan_summary(gradient_plan, cost.cluster()).c_str(),
                seconds_text(predicted_step).c_str(), seconds_text(simulated_step).c_str(),
                seconds_text(bound_step).c_str(), 100 * efficiency);
  }
  std::fflush(stdout);

  train::Schedule schedule;
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
          {"schema_version", kJsonSchemaVersion},
          {"event", "step"},
          {"step", step.step},
          {"epoch", step.epoch},
          {"loss", step.loss},
          {"step_s", step.seconds},
          {"samples_per_s", static_cast<double>(step.samples) / step.seconds}};
      std::printf("%s\n", line.dump().c_str());
    } else if (terminal) {
      std::fprintf(stderr, "\r  epoch %d  step %lld  loss %.4f  %.0f samples/s   ", step.epoch,
                   static_cast<long long>(step.step), step.loss,
                   static_cast<double>(step.samples) / step.seconds);
    }
    if (!options.checkpoint.empty() && options.checkpoint_every > 0 &&
        step.step % options.checkpoint_every == 0)
      train::write_checkpoint(options.checkpoint, options.model, trainer,
                              resumable_settings(options, settings));
  };
  const auto on_epoch = [&](const train::EpochRecord& epoch) {
    last_epoch = epoch;
    if (options.json) {
      nlohmann::json line = {{"schema_version", kJsonSchemaVersion},
                             {"event", "epoch"},
                             {"epoch", epoch.epoch},
                             {"train_loss", epoch.train_loss},
                             {"epoch_s", epoch.seconds}};
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
  try {
    trainer.fit(runners, train_split, test_split ? &*test_split : nullptr, schedule, on_step,
                on_epoch);
  } catch (const DeviceFailure&) {
    stop_ranks.failed = true;
    throw;
  }
  if (!options.checkpoint.empty())
    train::write_checkpoint(options.checkpoint, options.model, trainer,
                            resumable_settings(options, settings));
  if (!options.save.empty())
    write_with_initializers(options.model, options.save, trainer.initializers());

  // The first step compiles kernels: the steady state is the median of the rest.
  const std::vector<double> steady(
      step_seconds.size() > 1 ? step_seconds.begin() + 1 : step_seconds.begin(),
      step_seconds.end());
  const double measured = steady.empty() ? 0 : median(steady);
  if (options.json) {
    nlohmann::json done = {
        {"schema_version", kJsonSchemaVersion},
        {"event", "done"},
        {"steps", trainer.steps_taken()},
        {"median_step_s", measured},
        {"samples_per_s", measured > 0 ? static_cast<double>(options.batch) / measured : 0},
        {"predicted_step_s", predicted_step},
        {"simulated_step_s", simulated_step}};
    nlohmann::json memory = nlohmann::json::object();
    for (const DeviceActivity& device : simulated.devices)
      if (device.peak_memory_bytes > 0)
        memory[device.id] = static_cast<int64_t>(device.peak_memory_bytes);
    done["simulated_peak_memory_bytes"] = memory;
    if (!options.save.empty()) done["saved"] = options.save;
    std::printf("%s\n", done.dump().c_str());
  } else {
    Table table({"", "step"});
    table.add_row({"measured (median)", seconds_text(measured)});
    table.add_row({"predicted", seconds_text(predicted_step)});
    table.add_row({"simulated", seconds_text(simulated_step)});
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

}  // namespace

int train_command(const TrainOptions& options) {
  try {
    return train(options);
  } catch (const DeviceFailure& failure) {
    std::fprintf(stderr, "tandem: error: device failed: %s\n", failure.what());
    return kExitDeviceFailed;
  }
}

}  // namespace tandem::cli
