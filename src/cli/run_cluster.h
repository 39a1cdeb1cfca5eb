#pragma once
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/timed_runs.h"
#include "report/run_report.h"

namespace tandem::cli {

// `tandem run --cluster`: plans (or reads --plan), runs the plan across the cluster's devices
// as `schedule` says, and returns what it measured beside what the planner predicted (outputs
// and latencies as for one device; the checks are the caller's). `input_files` are the --input
// tensors by name (they bound the model). Throws DeviceFailure when a device fails and
// --failover was not given.
RunReport run_on_cluster(const RunOptions& options, const RunSchedule& schedule,
                         const ImportedModel& model,
                         const std::map<std::string, Tensor>& input_files,
                         const std::vector<Tensor>& inputs);

}  // namespace tandem::cli
