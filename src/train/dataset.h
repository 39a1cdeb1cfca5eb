#pragma once
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tandem::train {

// One split of a data set in memory: a tensor per model input and the labels, all with the same
// number of samples along axis 0.
struct DataSplit {
  std::string path;                // the split's folder
  std::vector<Tensor> inputs;      // follow the model's inputs
  std::vector<std::string> files;  // per input: its file (the first shard), for messages
  Tensor labels;
  int64_t samples() const { return labels.defined() ? labels.dim(0) : 0; }
  // The rows `indices` of every input and of the labels, stacked into one batch.
  std::vector<Tensor> batch_inputs(const std::vector<int64_t>& indices) const;
  Tensor batch_labels(const std::vector<int64_t>& indices) const;
};

// Reads the split folder `dir`: `x.npy` (one-input models) or `<input>.npy` per input, and
// `y.npy`; each may instead be shards `x-0.npy`, `x-1.npy`... (joined along axis 0 in name
// order). Throws InputError naming the folder or file for a missing file, shards that disagree
// on dtype or row shape, or inputs and labels of different lengths.
DataSplit read_split(const std::string& dir, const std::vector<std::string>& input_names);

}  // namespace tandem::train
