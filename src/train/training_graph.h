#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::train {

enum class Loss { kCrossEntropy, kMeanSquaredError };
enum class Optimizer { kSgd, kAdam, kAdamW };

// What a training step computes, with PyTorch's meanings (torch.nn.CrossEntropyLoss and MSELoss
// with mean reduction; torch.optim.SGD, Adam and AdamW).
struct TrainingOptions {
  Loss loss = Loss::kCrossEntropy;
  Optimizer optimizer = Optimizer::kSgd;
  float momentum = 0;      // SGD
  float weight_decay = 0;  // SGD and Adam: added to the gradient; AdamW: decoupled
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  // Adam, AdamW
  std::string output;               // the model output the loss reads; "" = first
  std::vector<std::string> frozen;  // initializer name patterns (glob: * and ?) left untrained
  bool recompute = false;           // gradient checkpointing (append_gradients)
};

// What each input of a training step's graphs (or the evaluation graph) is, so that a trainer
// can feed it.
enum class SlotRole {
  kData,             // a model input, from the data set
  kLabels,           // class labels (cross-entropy) or targets (mse)
  kParameter,        // a trained initializer
  kState,            // an initializer updated without a gradient (BatchNorm running statistics)
  kOptimizerState,   // momentum or Adam moments of one parameter, zero at the start
  kLearningRate,     // scalar
  kBiasCorrection1,  // Adam: 1 - beta1^t, scalar
  kBiasCorrection2,  // Adam: 1 - beta2^t, scalar
  kGradient,         // the update graph's: an output of the gradient graph (source_output)
};

struct Slot {
  SlotRole role = SlotRole::kData;
  std::string name;         // the graph input's name; an initializer's name for parameters
  Tensor initial;           // parameters, states and optimizer states: the value at step 0
  int updated_output = -1;  // index into graph.outputs of its value after the step, or -1
  int source_output = -1;   // kGradient: index into the gradient graph's outputs
};

// How the pieces of a split batch (micro-batches, data-parallel shares) make one output: the
// prediction joins along the batch, losses and gradients add up (each piece's loss is already
// scaled by 1 / the whole batch).
enum class OutputJoin { kConcat, kSum };

struct TrainingGraph {
  Graph graph;
  std::vector<Slot> slots;              // one per graph.inputs, in order
  int loss_output = -1;                 // index into graph.outputs (gradient graphs)
  int prediction_output = -1;           // index into graph.outputs: the output the loss reads
  std::vector<OutputJoin> joins;        // gradient graphs: per output
  std::vector<std::string> parameters;  // trained initializers, in graph order
  // Gradient graphs: per node, -1 for the forward pass (the loss included), else the index of
  // the forward node whose gradient it is part of (recomputation included).
  std::vector<int> forward_of;
};

// A training step as two graphs. The gradient graph runs the batch (or each piece of it) forward,
// through the loss and backward: data, labels and parameters in; the loss, the prediction, one
// gradient per parameter and each BatchNorm running statistic's share of its update out. The
// update graph then applies the optimiser to the summed gradients and moves the running
// statistics: parameters, statistics, optimiser state and gradients in, their new values out.
struct TrainingStep {
  TrainingGraph gradients;
  TrainingGraph update;
};

// The step of `forward` (the model as imported without inference fusion, bound to its batch);
// `initializers` names its trainable candidates (the file's initializers). BatchNormalization
// runs with batch statistics and moves its running ones as torch's train mode (ONNX momentum;
// unbiased variance). Throws InputError for a model the loss cannot read (cross-entropy needs
// [batch, classes] logits), without parameters to train, or with an op on a parameter's path
// that has no gradient.
TrainingStep build_training_step(const Graph& forward, const std::vector<std::string>& initializers,
                                 const TrainingOptions& options);

// The gradient graph of a piece of `batch` samples: `forward` bound to the piece's size, its
// loss scaled by 1 / batch so that the pieces' losses and gradients add up to the batch's.
TrainingGraph build_gradient_graph(const Graph& forward,
                                   const std::vector<std::string>& initializers,
                                   const TrainingOptions& options, int64_t batch);

// The model for evaluation with the parameters and statistics of `step` as inputs (BatchNorm in
// inference mode, on its running statistics); its one output is the prediction.
TrainingGraph build_evaluation_graph(const Graph& forward, const TrainingStep& step,
                                     const TrainingOptions& options);

}  // namespace tandem::train
