#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/timed_runs.h"
#include "report/run_report.h"
#include "runtime/plan_executor.h"

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

// What another verb needs to run plans across ranks (`tandem train` under mpirun): the mapping
// of devices to ranks, this rank's devices, rank 0's texts (plans) for every rank, and runs of a
// PlanExecutor that every rank enters together. Rank 0 leads: before each run it tells the
// others to run or to stop; after each, every rank learns whether a device failed anywhere.
class RankRuns {
 public:
  // Maps the ranks onto the cluster's hosts as `tandem run` does (--rank-hosts, names, order).
  RankRuns(RankWorld& ranks, const Cluster& cluster, const std::vector<std::string>& rank_hosts,
           const std::string& cluster_path);
  ~RankRuns();
  int rank() const;
  bool root() const { return rank() == 0; }
  const std::vector<int>& rank_of_device() const { return rank_of_device_; }
  // Starts this rank's devices (null for the others'); if one rank cannot, every rank throws
  // InputError naming it.
  std::vector<std::unique_ptr<Device>> start_devices(const Cluster& cluster);
  // Rank 0's text, on every rank.
  std::string broadcast(const std::string& text);
  // Every rank says whether its step worked; if one did not, every rank throws naming it.
  void agree(const std::string& error, const std::string& step);
  // The executor options of one executor across the ranks (a transport of its own).
  PlanExecutorOptions executor_options();
  // Rank 0: one run of `executor` on `inputs`, the others joining it. Throws DeviceFailure on
  // every rank when a device of any rank failed.
  std::vector<Tensor> run(PlanExecutor& executor, std::span<const Tensor> inputs);
  // The other ranks: join rank 0's runs of `executor` until it stops them.
  void serve(PlanExecutor& executor);
  // Rank 0: ends the others' serve().
  void stop();

 private:
  std::vector<Tensor> run_here(PlanExecutor& executor, std::span<const Tensor> inputs);
  RankWorld& ranks_;
  std::vector<int> rank_of_device_;
  std::vector<std::unique_ptr<Transport>> transports_;
};

}  // namespace tandem::cli
