#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "ir/error.h"

namespace tandem::train {
namespace {

Tensor scalar(float value) {
  Tensor tensor = Tensor::allocate(DType::kFloat32, {});
  *tensor.data<float>() = value;
  return tensor;
}

double scalar_of(const Tensor& tensor) { return tensor.to_host().to_doubles().at(0); }

// Per sample of `logits` [batch, classes]: its cross-entropy against `labels` and whether its
// largest logit is the label, for the first `count` samples.
std::pair<double, int64_t> score(const Tensor& logits, const Tensor& labels, int64_t count) {
  const std::vector<double> values = logits.to_host().to_doubles();
  const std::vector<int64_t> classes = labels.to_int64s();
  const int64_t width = logits.dim(1);
  double loss = 0;
  int64_t correct = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double* row = values.data() + i * width;
    const double top = *std::max_element(row, row + width);
    double sum = 0;
    for (int64_t c = 0; c < width; ++c) sum += std::exp(row[c] - top);
    loss += top + std::log(sum) - row[classes[static_cast<size_t>(i)]];
    correct += (std::max_element(row, row + width) - row) == classes[static_cast<size_t>(i)];
  }
  return {loss, correct};
}

double squared_error(const Tensor& prediction, const Tensor& target, int64_t count) {
  const std::vector<double> p = prediction.to_host().to_doubles(), t = target.to_doubles();
  const size_t per_sample = p.size() / static_cast<size_t>(prediction.dim(0));
  double sum = 0;
  for (size_t i = 0; i < per_sample * static_cast<size_t>(count); ++i)
    sum += (p[i] - t[i]) * (p[i] - t[i]);
  return sum / static_cast<double>(per_sample);
}

}  // namespace

Trainer::Trainer(const TrainingStep& step, const TrainingGraph& evaluation,
                 const TrainingOptions& options)
    : step_(step), evaluation_(evaluation), loss_(options.loss), options_(options) {
  for (const TrainingGraph* graph : {&step.gradients, &step.update})
    for (const Slot& slot : graph->slots)
      if (slot.initial.defined()) values_[slot.name] = slot.initial;
  const Graph& graph = step.gradients.graph;
  batch_ = graph.values[graph.outputs[static_cast<size_t>(step.gradients.prediction_output)]]
               .type.shape.at(0);
}

void Trainer::check_labels(const DataSplit& split) const {
  const Graph& graph = step_.gradients.graph;
  for (size_t i = 0; i < step_.gradients.slots.size(); ++i) {
    const Slot& slot = step_.gradients.slots[i];
    const TensorType& type = graph.values[graph.inputs[i]].type;
    if (slot.role == SlotRole::kLabels) {
      if (split.labels.dtype() != type.dtype ||
          !std::equal(type.shape.begin() + 1, type.shape.end(), split.labels.shape().begin() + 1,
                      split.labels.shape().end())) {
        Shape row(type.shape.begin() + 1, type.shape.end());
        throw InputError(
            split.path + "/y.npy",
            "is " + std::string(dtype_name(split.labels.dtype())) + " " +
                shape_str(split.labels.shape()) + "; the loss needs " +
                std::string(dtype_name(type.dtype)) + " [N" +
                (row.empty() ? "" : "," + shape_str(row).substr(1, shape_str(row).size() - 2)) +
                "]");
      }
    }
  }
  if (loss_ != Loss::kCrossEntropy) return;
  const int64_t classes =
      graph.values[graph.outputs[static_cast<size_t>(step_.gradients.prediction_output)]]
          .type.shape[1];
  const std::vector<int64_t> labels = split.labels.to_int64s();
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw InputError(split.path + "/y.npy", "label " + std::to_string(labels[i]) + " of sample " +
                                                  std::to_string(i) + " is outside the model's " +
                                                  std::to_string(classes) + " classes");
    }
  }
}

StepRecord Trainer::step(const Runners& runners, std::span<const Tensor> inputs,
                         const Tensor& labels, float learning_rate) {
  const int64_t t = steps_ + 1;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> feed;
  size_t data = 0;
  for (const Slot& slot : step_.gradients.slots) {
    if (slot.role == SlotRole::kData)
      feed.push_back(inputs[data++]);
    else if (slot.role == SlotRole::kLabels)
      feed.push_back(labels);
    else
      feed.push_back(values_.at(slot.name));
  }
  const std::vector<Tensor> gradients = runners.gradients(feed);
  feed.clear();
  for (const Slot& slot : step_.update.slots) {
    switch (slot.role) {
      case SlotRole::kGradient:
        feed.push_back(gradients[static_cast<size_t>(slot.source_output)]);
        break;
      case SlotRole::kLearningRate: feed.push_back(scalar(learning_rate)); break;
      case SlotRole::kBiasCorrection1:
        feed.push_back(scalar(static_cast<float>(1 - std::pow(double{options_.beta1}, t))));
        break;
      case SlotRole::kBiasCorrection2:
        feed.push_back(scalar(static_cast<float>(1 - std::pow(double{options_.beta2}, t))));
        break;
      default: feed.push_back(values_.at(slot.name));
    }
  }
  const std::vector<Tensor> updated = runners.update(feed);
  StepRecord record;
  record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record.loss = scalar_of(gradients[static_cast<size_t>(step_.gradients.loss_output)]);
  if (!std::isfinite(record.loss))
    throw InputError("step " + std::to_string(t),
                     "the loss is " + std::to_string(record.loss) + " (try a smaller --lr)");
  for (const Slot& slot : step_.update.slots)
    if (slot.updated_output >= 0)
      values_[slot.name] = updated[static_cast<size_t>(slot.updated_output)];
  if (loss_ == Loss::kCrossEntropy) {
    const Tensor& logits = gradients[static_cast<size_t>(step_.gradients.prediction_output)];
    record.correct = score(logits, labels, labels.dim(0)).second;
  }
  steps_ = t;
  record.step = t;
  record.samples = labels.dim(0);
  return record;
}

std::pair<double, double> Trainer::evaluate(const GraphRunner& runner,
                                            const DataSplit& split) const {
  double loss = 0;
  int64_t correct = 0;
  const int64_t total = split.samples();
  for (int64_t first = 0; first < total; first += batch_) {
    const int64_t count = std::min(batch_, total - first);
    std::vector<int64_t> rows(static_cast<size_t>(batch_));
    for (int64_t i = 0; i < batch_; ++i)
      rows[static_cast<size_t>(i)] = first + std::min(i, count - 1);
    const std::vector<Tensor> inputs = split.batch_inputs(rows);
    const Tensor labels = split.batch_labels(rows);
    std::vector<Tensor> feed;
    size_t data = 0;
    for (const Slot& slot : evaluation_.slots)
      feed.push_back(slot.role == SlotRole::kData ? inputs[data++] : values_.at(slot.name));
    const Tensor prediction = runner(feed)[static_cast<size_t>(evaluation_.prediction_output)];
    if (loss_ == Loss::kCrossEntropy) {
      const auto [sum, right] = score(prediction, labels, count);
      loss += sum;
      correct += right;
    } else {
      loss += squared_error(prediction, labels, count);
    }
  }
  const double n = static_cast<double>(std::max<int64_t>(total, 1));
  return {loss / n, loss_ == Loss::kCrossEntropy ? static_cast<double>(correct) / n : -1.0};
}

void Trainer::fit(const Runners& runners, const DataSplit& train, const DataSplit* test,
                  const Schedule& schedule, const std::function<void(const StepRecord&)>& on_step,
                  const std::function<void(const EpochRecord&)>& on_epoch) {
  std::vector<int64_t> order(static_cast<size_t>(train.samples()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(schedule.seed);
  // A resumed run replays the shuffles and skips the batches already taken, so that it goes on
  // with the batch the uninterrupted run would have taken next.
  const int64_t taken = steps_;
  int64_t batches = 0;  // over the whole run, taken ones included
  for (int epoch = 1; epoch <= schedule.epochs; ++epoch) {
    if (schedule.max_steps > 0 && steps_ >= schedule.max_steps) break;
    const auto start = std::chrono::steady_clock::now();
    if (schedule.shuffle) std::shuffle(order.begin(), order.end(), random);
    EpochRecord summary;
    summary.epoch = epoch;
    int64_t steps = 0, correct = 0, seen = 0;
    const size_t size = static_cast<size_t>(batch_);
    for (size_t first = 0; first + size <= order.size(); first += size) {
      if (batches++ < taken) continue;
      if (schedule.max_steps > 0 && steps_ >= schedule.max_steps) break;
      const std::vector<int64_t> rows(order.begin() + static_cast<std::ptrdiff_t>(first),
                                      order.begin() + static_cast<std::ptrdiff_t>(first + size));
      StepRecord record =
          step(runners, train.batch_inputs(rows), train.batch_labels(rows), schedule.learning_rate);
      record.epoch = epoch;
      summary.train_loss += record.loss;
      correct += record.correct;
      seen += record.samples;
      ++steps;
      if (on_step) on_step(record);
    }
    if (steps == 0) continue;  // an epoch the resumed checkpoint had finished
    summary.train_loss /= static_cast<double>(steps);
    if (loss_ == Loss::kCrossEntropy && seen > 0)
      summary.train_accuracy = static_cast<double>(correct) / static_cast<double>(seen);
    if (test) {
      const auto [loss, accuracy] = evaluate(runners.evaluation, *test);
      summary.test_loss = loss;
      if (accuracy >= 0) summary.test_accuracy = accuracy;
    }
    summary.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_epoch) on_epoch(summary);
  }
}

void Trainer::restore(const std::map<std::string, Tensor>& values, int64_t steps,
                      const std::string& source) {
  for (auto& [name, current] : values_) {
    auto found = values.find(name);
    if (found == values.end()) throw InputError(source, "has no value for '" + name + "'");
    const Tensor& value = found->second;
    if (value.dtype() != current.dtype() || value.shape() != current.shape()) {
      throw InputError(source, "'" + name + "' is " + std::string(dtype_name(value.dtype())) + " " +
                                   shape_str(value.shape()) + ", the model's " +
                                   std::string(dtype_name(current.dtype())) + " " +
                                   shape_str(current.shape()));
    }
    current = value;
  }
  steps_ = steps;
}

std::map<std::string, Tensor> Trainer::initializers() const {
  std::map<std::string, Tensor> result;
  for (const Slot& slot : step_.update.slots) {
    if (slot.role == SlotRole::kParameter || slot.role == SlotRole::kState)
      result[slot.name] = values_.at(slot.name);
  }
  return result;
}

}  // namespace tandem::train
