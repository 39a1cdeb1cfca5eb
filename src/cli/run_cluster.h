#pragma once
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tandem::cli {

// `tandem run --cluster`: plans (or reads --plan), runs the plan across the cluster's devices,
// and shows measured against predicted time. `input_files` are the --input tensors by name
// (they bound the model), `expected` the --expect references by output.
int run_on_cluster(const RunOptions& options, const ImportedModel& model,
                   const std::map<std::string, Tensor>& input_files,
                   const std::vector<Tensor>& inputs,
                   const std::map<std::string, Tensor>& expected);

}  // namespace tandem::cli
