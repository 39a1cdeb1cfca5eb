#pragma once
#include <map>
#include <memory>
#include <optional>
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

// Under mpirun (docs/MPI.md): this process is one rank of a run across hosts; the ranks share
// the MPI world from start to end. Null when this process was not started by mpirun, or when
// this build has no MPI (then mpirun is refused with the reason).
struct RankWorld;
std::shared_ptr<RankWorld> join_ranks_if_launched();

// `tandem run --cluster` as one rank: every rank runs the devices of its host, rank 0 plans,
// reads the inputs, gathers the outputs and what every rank measured. Returns the report at
// rank 0 and nothing elsewhere. Throws DeviceFailure (on every rank) when a device of any rank
// fails; InputError (on every rank) when a rank cannot start its devices.
std::optional<RunReport> run_on_ranks(RankWorld& ranks, const RunOptions& options,
                                      const RunSchedule& schedule, const ImportedModel& model,
                                      const std::map<std::string, Tensor>& input_files,
                                      const std::vector<Tensor>& inputs);

}  // namespace tandem::cli
