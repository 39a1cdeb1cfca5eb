#pragma once
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tandem::cli {

// `tandem run --cluster`: plans (or reads --plan), runs the plan across the cluster's devices,
// and shows measured against predicted time. `expected` holds --expect references by output.
int run_on_cluster(const RunOptions& options, const ImportedModel& model,
                   const std::vector<Tensor>& inputs,
                   const std::map<std::string, Tensor>& expected);

}  // namespace tandem::cli
