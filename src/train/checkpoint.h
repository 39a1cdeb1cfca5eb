#pragma once
#include <map>
#include <string>

#include "train/trainer.h"

namespace tandem::train {

// A checkpoint folder: model.onnx (the model as trained so far, runnable on its own),
// state/<k>.npy for every value a trainer keeps (parameters, statistics, optimiser state) and
// checkpoint.json naming them and the steps taken. Each file is written beside and renamed, so an
// interrupted write leaves the previous checkpoint's files.
// `settings` (option -> value, e.g. "--optimizer" -> "adam") are what a resumed run must repeat.
void write_checkpoint(const std::string& dir, const std::string& source_model,
                      const Trainer& trainer, const std::map<std::string, std::string>& settings);

struct Checkpoint {
  std::map<std::string, Tensor> values;
  int64_t steps = 0;
  std::map<std::string, std::string> settings;
};
// Reads a folder write_checkpoint wrote; InputError naming the file for anything else.
Checkpoint read_checkpoint(const std::string& dir);

}  // namespace tandem::train
