#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "util/compare.h"

namespace tandem {

// Measured time of one op type per run (`run --profile`).
struct OpTimeSummary {
  std::string op_type;
  int64_t calls = 0;
  double total_ms = 0;
  double flops = 0;
};

// What `tandem run` measured: outputs, latency per iteration, memory, checks.
struct RunReport {
  std::string model;
  int threads = 0;
  int64_t batch = 1;
  std::vector<double> latencies_ms;
  size_t arena_bytes = 0;      // the planned arena for intermediate tensors
  size_t unplanned_bytes = 0;  // what one allocation per intermediate tensor would take
  std::vector<std::pair<std::string, Tensor>> outputs;
  std::vector<std::pair<std::string, Comparison>> checks;
  std::vector<OpTimeSummary> op_times;  // empty unless profiled
};

struct LatencyStats {
  double min = 0, median = 0, p90 = 0, mean = 0;
};
LatencyStats latency_stats(std::vector<double> samples);

std::string render_run_report(const RunReport& report);
nlohmann::json run_report_json(const RunReport& report);
// "logits: element 17: got 0.5, expected 0.25" or the dtype/shape problem.
std::string describe_mismatch(const std::string& name, const Comparison& comparison);

}  // namespace tandem
