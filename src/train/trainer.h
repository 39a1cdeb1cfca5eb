#pragma once
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "train/dataset.h"
#include "train/training_graph.h"

namespace tandem::train {

// Runs one graph on its devices: inputs follow graph.inputs, outputs graph.outputs (host memory).
using GraphRunner = std::function<std::vector<Tensor>(std::span<const Tensor> inputs)>;

// How fit() goes over the data; the batch is the training graphs' (bound when they were built).
struct Schedule {
  int epochs = 1;
  int64_t max_steps = 0;  // > 0: stop after this many steps in all
  float learning_rate = 0.01f;
  bool shuffle = true;
  uint64_t seed = 0;
};

struct StepRecord {
  int64_t step = 0;  // 1-based, over the whole run
  int epoch = 0;     // 1-based
  double loss = 0;
  double seconds = 0;  // the step's run, batch assembly excluded
  int64_t samples = 0;
  int64_t correct =
      0;  // cross-entropy: samples whose largest logit is the label (before the update)
};

struct EpochRecord {
  int epoch = 0;
  double train_loss = 0;       // mean over the epoch's steps
  double train_accuracy = -1;  // over the epoch's steps, each before its update; -1 for mse
  std::optional<double> test_loss, test_accuracy;  // with a test split
  double seconds = 0;
};

// The runners of a step's two graphs and of the evaluation graph.
struct Runners {
  GraphRunner gradients, update, evaluation;
};

// Trains a model whose step and evaluation graph were built by build_training_step and
// build_evaluation_graph: keeps every parameter, statistic and optimiser state between steps,
// feeds each step's batch, learning rate and bias corrections, and evaluates after every epoch.
class Trainer {
 public:
  Trainer(const TrainingStep& step, const TrainingGraph& evaluation,
          const TrainingOptions& options);

  // Labels are checked against the model before any step (class indices within the logits).
  void check_labels(const DataSplit& split) const;

  // One step on `inputs` (the model's) and `labels`.
  StepRecord step(const Runners& runners, std::span<const Tensor> inputs, const Tensor& labels,
                  float learning_rate);

  // Mean loss and accuracy (cross-entropy; -1 for mse) of the current model on a whole split,
  // in batches of the evaluation graph's size (the last one padded, the padding not counted).
  std::pair<double, double> evaluate(const GraphRunner& runner, const DataSplit& split) const;

  // Epochs over `train` as `schedule` says, calling `on_step` and `on_epoch` as they end. Epochs
  // and max_steps count from the start of training: after restore(), the run goes on with the
  // batch an uninterrupted run would have taken next.
  void fit(const Runners& runners, const DataSplit& train, const DataSplit* test,
           const Schedule& schedule, const std::function<void(const StepRecord&)>& on_step,
           const std::function<void(const EpochRecord&)>& on_epoch);

  // The trained initializers (parameters and BatchNorm statistics), by name: what a saved model
  // holds.
  std::map<std::string, Tensor> initializers() const;
  int64_t steps_taken() const { return steps_; }
  // Every value kept between steps (parameters, statistics, optimiser state), by slot name.
  const std::map<std::string, Tensor>& values() const { return values_; }
  // Continues from a checkpoint: a value for every slot name (same dtype and shape), and the
  // steps taken (Adam's bias corrections go on from there). Throws InputError naming `source`.
  void restore(const std::map<std::string, Tensor>& values, int64_t steps,
               const std::string& source);

 private:
  const TrainingStep& step_;
  const TrainingGraph& evaluation_;
  Loss loss_;
  TrainingOptions options_;
  std::map<std::string, Tensor> values_;  // parameters, statistics, optimiser state
  int64_t steps_ = 0;
  int64_t batch_ = 0;  // the graphs' batch
};

}  // namespace tandem::train
