#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "report/json_schema.h"
#include "report/segment_check.h"
#include "util/compare.h"

namespace tandem {

// Measured time of one op type per run (`run --profile`).
struct OpTimeSummary {
  std::string op_type;
  int64_t calls = 0;   // per run
  double seconds = 0;  // per run
  double flops = 0;    // per run
};

// Measured time of one node per run (`run --profile`).
struct NodeTime {
  std::string node, op_type, device;
  double seconds = 0;  // per run
  double flops = 0;
};

// A node's measured time summed over every timed run: what set_profile() divides.
struct NodeTotal {
  NodeTime node;      // seconds and flops: the totals
  int64_t calls = 0;  // a node in a Loop body, or run once per micro-batch, counts each time
};

// One PJRT plugin's programs and their inputs over all the runs of a process.
struct ProgramStats {
  std::string plugin, cache_directory;  // cache_directory empty: memory only
  int compiles = 0, disk_hits = 0, memory_hits = 0;
  double compile_seconds = 0, load_seconds = 0;
  int uploaded = 0, device_to_device = 0, on_device = 0;  // program inputs
};

// A multi-device run's figures beside the planner's prediction (`run --cluster`).
struct ClusterRunFigures {
  std::string cluster;
  std::string strategy;  // as planned; `auto` names what it chose in `chosen`
  std::string chosen;
  size_t segments = 0, transfers = 0;
  int microbatches = 1;
  double prepare_seconds = 0;  // segments extracted, kernels and programs compiled
  double predicted_latency_seconds = 0;
  std::string predicted_from;  // where the prediction's figures came from
  struct DeviceBusy {
    std::string id;
    double measured_seconds = 0;  // median over the timed runs
    double predicted_seconds = 0;
  };
  std::vector<DeviceBusy> devices;
  std::vector<ProgramStats> compiled;
  int segments_run = 0, transfers_run = 0;   // in one run
  std::vector<SegmentCheck> segment_checks;  // every segment that ran, measured beside predicted
  std::string failover;                      // what failed and how the run went on, when it did
  // The plans tried before the timed runs; empty where nothing was tried.
  std::vector<TriedPlan> trial;
  // Each device the plan ran on whose profile timed the speed reference: that reference timed
  // again after the runs, beside its time at calibration (the machine's speed then and now).
  std::vector<SpeedCheck> speed_checks;
  // Across hosts (one MPI rank per host): how the ranks were given hosts, and per pair of
  // hosts the tensors that crossed the network in one run, measured (median over the timed
  // runs, first byte to last of each message, summed) beside the planner's transfer times.
  int ranks = 0;  // 0: one process
  std::string rank_mapping;
  struct HostLink {
    std::string from, to;  // host ids
    double bytes = 0;
    double measured_seconds = 0;
    double predicted_seconds = 0;
  };
  std::vector<HostLink> host_links;
};

// A run whose matrix products computed in a lower precision (`run --precision`), beside the
// same model run in float32 on the same inputs.
struct PrecisionFigures {
  std::string precision;                       // "bf16" or "int8"
  int products = 0;                            // MatMul, Gemm, Conv and ConvTranspose nodes
  int lowered = 0;                             // of them, those that ran in `precision`
  std::vector<double> fp32_latencies_seconds;  // the float32 run's, timed as the other
  std::vector<std::pair<std::string, Deviation>> outputs;  // each output against float32
  // Outputs that could not be set beside float32's, and why: a detector's data-dependent count of
  // boxes may differ, for one.
  std::vector<std::pair<std::string, std::string>> not_compared;
};

// What `tandem run` measured, on one device or a cluster: outputs, latency per run, memory,
// checks, the profile.
struct RunReport {
  std::string model;
  std::string device = "cpu";  // or "cluster"
  int threads = 0;
  int64_t batch = 1;
  int warmup_runs = 0;
  std::vector<double> latencies_seconds;  // one per timed run
  double duration_seconds = 0;            // wall time of the timed runs
  std::optional<size_t> arena_bytes;      // the planned arena for intermediate tensors
  std::optional<size_t> unplanned_bytes;  // what one allocation per intermediate would take
  std::vector<std::pair<std::string, Tensor>> outputs;
  std::vector<std::pair<std::string, Comparison>> checks;
  bool profiled = false;
  std::vector<OpTimeSummary> op_times;
  std::vector<NodeTime> node_times;
  std::optional<ClusterRunFigures> cluster;
  std::optional<PrecisionFigures> precision;
};

// Fills the report's profile from the totals of `runs` timed runs: per node and per op type,
// per run.
void set_profile(RunReport& report, const std::vector<NodeTotal>& totals, size_t runs);

struct LatencyStats {
  double min = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, max = 0, stddev = 0;
};
// Quantiles interpolate between the sorted samples; stddev is the sample standard deviation.
LatencyStats latency_stats(std::vector<double> samples);

std::string render_run_report(const RunReport& report);
nlohmann::json run_report_json(const RunReport& report);
// The profile alone (`run --profile-out`): op types and nodes, slowest first.
nlohmann::json profile_json(const RunReport& report);

}  // namespace tandem
