#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "report/table.h"

namespace tandem {
namespace {

struct ValueStats {
  double min = 0, max = 0, mean = 0;
};

ValueStats value_stats(const Tensor& tensor) {
  ValueStats stats;
  if (tensor.numel() == 0) return stats;
  const std::vector<double> values = tensor.to_doubles();
  stats.min = *std::min_element(values.begin(), values.end());
  stats.max = *std::max_element(values.begin(), values.end());
  stats.mean =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return stats;
}

std::string preview(const Tensor& tensor, int count = 4) {
  const std::vector<double> values = tensor.to_doubles();
  std::string text = "[";
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(count); ++i) {
    text += (i ? ", " : "") + format("%.4g", values[i]);
  }
  return text + (values.size() > static_cast<size_t>(count) ? ", ...]" : "]");
}

nlohmann::json op_times_json(const std::vector<OpTimeSummary>& rows) {
  nlohmann::json json = nlohmann::json::array();
  for (const OpTimeSummary& row : rows) {
    json.push_back({{"op_type", row.op_type},
                    {"calls", row.calls},
                    {"ms_per_run", row.total_ms},
                    {"flops", row.flops}});
  }
  return json;
}

}  // namespace

LatencyStats latency_stats(std::vector<double> samples) {
  LatencyStats stats;
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  const auto quantile = [&](double q) {
    const double position = q * static_cast<double>(samples.size() - 1);
    const size_t below = static_cast<size_t>(std::floor(position));
    const size_t above = std::min(below + 1, samples.size() - 1);
    return samples[below] +
           (samples[above] - samples[below]) * (position - static_cast<double>(below));
  };
  stats.min = samples.front();
  stats.median = quantile(0.5);
  stats.p90 = quantile(0.9);
  stats.mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return stats;
}

std::string describe_mismatch(const std::string& name, const Comparison& c) {
  if (!c.problem.empty()) return name + ": " + c.problem;
  return name + ": element " + std::to_string(c.worst_index) + ": got " + format("%.9g", c.actual) +
         ", expected " + format("%.9g", c.expected);
}

std::string render_run_report(const RunReport& report) {
  Table outputs({"output", "dtype", "shape", "min", "mean", "max", "values"});
  for (const auto& [name, tensor] : report.outputs) {
    const ValueStats stats = value_stats(tensor);
    outputs.add_row({name, std::string(dtype_name(tensor.dtype())), shape_str(tensor.shape()),
                     format("%.4g", stats.min), format("%.4g", stats.mean),
                     format("%.4g", stats.max), preview(tensor)});
  }
  std::string out = outputs.render() + "\n";
  const LatencyStats stats = latency_stats(report.latencies_ms);
  out += format(
      "latency     min %.3f ms   median %.3f ms   p90 %.3f ms   (%zu runs, %d threads, CPU)\n",
      stats.min, stats.median, stats.p90, report.latencies_ms.size(), report.threads);
  out += format("throughput  %.1f samples/s (batch %lld)\n",
                stats.median > 0 ? 1000.0 * report.batch / stats.median : 0.0,
                static_cast<long long>(report.batch));
  out += "memory      " + human_bytes(static_cast<double>(report.arena_bytes)) +
         " arena for intermediates (" + human_bytes(static_cast<double>(report.unplanned_bytes)) +
         " without reuse)\n";
  if (!report.op_times.empty()) {
    std::vector<OpTimeSummary> rows = report.op_times;
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
    double total = 0;
    for (const OpTimeSummary& row : rows) total += row.total_ms;
    Table table({"op type", "calls", "ms per run", "% time", "GFLOP/s"});
    for (const OpTimeSummary& row : rows) {
      table.add_row({row.op_type, std::to_string(row.calls), format("%.3f", row.total_ms),
                     format("%.1f", total > 0 ? 100 * row.total_ms / total : 0.0),
                     format("%.1f", row.total_ms > 0 ? row.flops / row.total_ms / 1e6 : 0.0)});
    }
    out += "\n" + table.render() + "\n";
  }
  for (const auto& [name, comparison] : report.checks) {
    out += "check       " +
           (comparison.matches ? name + ": matches"
                               : "MISMATCH " + describe_mismatch(name, comparison)) +
           "\n";
  }
  return out;
}

nlohmann::json run_report_json(const RunReport& report) {
  const LatencyStats stats = latency_stats(report.latencies_ms);
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& [name, tensor] : report.outputs) {
    const ValueStats values = value_stats(tensor);
    outputs.push_back({{"name", name},
                       {"dtype", dtype_name(tensor.dtype())},
                       {"shape", tensor.shape()},
                       {"min", values.min},
                       {"mean", values.mean},
                       {"max", values.max}});
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& [name, c] : report.checks) {
    nlohmann::json check = {{"output", name}, {"matches", c.matches}};
    if (!c.matches) check["detail"] = describe_mismatch(name, c);
    checks.push_back(check);
  }
  return {{"model", report.model},
          {"device", "cpu"},
          {"threads", report.threads},
          {"batch", report.batch},
          {"latency_ms",
           {{"min", stats.min},
            {"median", stats.median},
            {"p90", stats.p90},
            {"mean", stats.mean},
            {"samples", report.latencies_ms}}},
          {"samples_per_second", stats.median > 0 ? 1000.0 * report.batch / stats.median : 0.0},
          {"memory",
           {{"arena_bytes", report.arena_bytes}, {"without_reuse_bytes", report.unplanned_bytes}}},
          {"outputs", outputs},
          {"checks", checks},
          {"op_times", op_times_json(report.op_times)}};
}

}  // namespace tandem
