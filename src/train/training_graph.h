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
};

// What each input of a training (or evaluation) graph is, so that a trainer can feed it.
enum class SlotRole {
  kData,             // a model input, from the data set
  kLabels,           // class labels (cross-entropy) or targets (mse)
  kParameter,        // a trained initializer
  kState,            // an initializer updated without a gradient (BatchNorm running statistics)
  kOptimizerState,   // momentum or Adam moments of one parameter, zero at the start
  kLearningRate,     // scalar
  kBiasCorrection1,  // Adam: 1 - beta1^t, scalar
  kBiasCorrection2,  // Adam: 1 - beta2^t, scalar
};

struct Slot {
  SlotRole role = SlotRole::kData;
  std::string name;         // the graph input's name; an initializer's name for parameters
  Tensor initial;           // parameters, states and optimizer states: the value at step 0
  int updated_output = -1;  // index into graph.outputs of its value after the step, or -1
};

struct TrainingGraph {
  Graph graph;
  std::vector<Slot> slots;              // one per graph.inputs, in order
  int loss_output = -1;                 // index into graph.outputs (training graphs)
  int prediction_output = -1;           // index into graph.outputs: the output the loss reads
  std::vector<std::string> parameters;  // trained initializers, in graph order
};

// Forward + loss + backward + optimiser update, as one graph: parameters, BatchNorm statistics
// and optimiser state are inputs, and their values after the step are outputs. `forward` is the
// model as imported without inference fusion; `initializers` names its trainable candidates (the
// file's initializers). BatchNormalization runs with batch statistics and updates its running
// ones as torch's train mode (ONNX momentum; unbiased variance). Throws InputError for a model
// the loss cannot read (cross-entropy needs [batch, classes] logits), without parameters to
// train, or with an op on a parameter's path that has no gradient.
TrainingGraph build_training_graph(const Graph& forward,
                                   const std::vector<std::string>& initializers,
                                   const TrainingOptions& options);

// The model for evaluation with the parameters and states of `training` as inputs (BatchNorm in
// inference mode, on its running statistics); its one output is the prediction.
TrainingGraph build_evaluation_graph(const Graph& forward, const TrainingGraph& training,
                                     const TrainingOptions& options);

}  // namespace tandem::train
