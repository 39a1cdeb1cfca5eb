#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "report/table.h"
#include "util/statistics.h"

namespace tandem {
namespace {

// Node rows shown on the terminal; --json and --profile-out keep them all.
constexpr size_t kNodesShown = 15;

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

double throughput(const RunReport& report, const LatencyStats& stats) {
  return stats.median > 0 ? static_cast<double>(report.batch) / stats.median : 0.0;
}

std::string percent_error(double measured, double predicted) {
  return predicted > 0 ? format("%+.1f%%", 100 * (measured - predicted) / predicted) : "-";
}

std::vector<OpTimeSummary> slowest_op_types(const RunReport& report) {
  std::vector<OpTimeSummary> rows = report.op_times;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return rows;
}

std::vector<NodeTime> slowest_nodes(const RunReport& report) {
  std::vector<NodeTime> rows = report.node_times;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return rows;
}

std::string render_profile(const RunReport& report) {
  double total = 0;
  for (const OpTimeSummary& row : report.op_times) total += row.seconds;
  const auto share = [&](double seconds) {
    return format("%.1f", total > 0 ? 100 * seconds / total : 0.0);
  };
  Table types({"op type", "calls", "time per run", "% time", "GFLOP/s"});
  for (const OpTimeSummary& row : slowest_op_types(report)) {
    types.add_row({row.op_type, std::to_string(row.calls), seconds_text(row.seconds),
                   share(row.seconds),
                   format("%.1f", row.seconds > 0 ? row.flops / row.seconds / 1e9 : 0.0)});
  }
  const std::vector<NodeTime> nodes = slowest_nodes(report);
  Table slowest({"node", "op type", "device", "time per run", "% time"});
  for (size_t i = 0; i < nodes.size() && i < kNodesShown; ++i) {
    slowest.add_row({nodes[i].node, nodes[i].op_type, nodes[i].device,
                     seconds_text(nodes[i].seconds), share(nodes[i].seconds)});
  }
  std::string text = "\n" + types.render();
  if (!nodes.empty()) {
    text += (nodes.size() > kNodesShown
                 ? format("\nslowest nodes (%zu of %zu; --profile-out FILE.json has them all):\n",
                          kNodesShown, nodes.size())
                 : std::string("\nnodes:\n")) +
            slowest.render();
  }
  return text;
}

// The segments whose prediction missed, worst first (all of them are in --json and the HTML
// report); a line saying so when none did.
std::string render_segment_checks(const std::vector<SegmentCheck>& checks) {
  if (checks.empty()) return "";
  std::vector<const SegmentCheck*> off;
  for (const SegmentCheck& check : checks)
    if (check.off()) off.push_back(&check);
  const auto error = [](const SegmentCheck& check) {
    return std::abs(check.measured_seconds - check.predicted_seconds) / check.predicted_seconds;
  };
  if (off.empty()) {
    return format("segments    all %zu within %.0f%% of their prediction\n", checks.size(),
                  100 * kSegmentOffFraction);
  }
  std::stable_sort(off.begin(), off.end(), [&](const SegmentCheck* a, const SegmentCheck* b) {
    return error(*a) > error(*b);
  });
  std::string text = format("segments    %zu of %zu off their prediction by more than %.0f%%%s:\n",
                            off.size(), checks.size(), 100 * kSegmentOffFraction,
                            off.size() > kNodesShown ? " (the worst; --json has them all)" : "");
  Table table({"segment", "device", "nodes", "measured", "predicted", "error"});
  for (size_t i = 0; i < off.size() && i < kNodesShown; ++i) {
    const SegmentCheck& check = *off[i];
    table.add_row({std::to_string(check.segment), check.device,
                   std::to_string(check.nodes) + " (" + check.first +
                       (check.nodes > 1 ? " .. " + check.last : "") + ")",
                   seconds_text(check.measured_seconds), seconds_text(check.predicted_seconds),
                   percent_error(check.measured_seconds, check.predicted_seconds)});
  }
  return text + table.render();
}

// One line where every device's reference held, and one per device whose speed moved.
std::string render_speed_checks(const std::vector<SpeedCheck>& checks) {
  std::string held, text;
  for (const SpeedCheck& check : checks) {
    if (check.moved())
      text += "speed       " + check.describe() + "\n";
    else
      held += (held.empty() ? "" : ", ") + check.device;
  }
  if (held.empty()) return text;
  return format(
             "speed       %s: the calibration's speed reference within %.0f%% of its "
             "calibrated time\n",
             held.c_str(), 100 * kSpeedMovedFraction) +
         text;
}

// Auto's trial: a row per plan tried, the one that ran marked.
std::string render_trial(const std::vector<TriedPlan>& trial) {
  if (trial.empty()) return "";
  Table table({"tried before the timed runs, in turns", "median run", "predicted", ""});
  for (const TriedPlan& tried : trial) {
    table.add_row({tried.plan + (tried.whole_machine ? " (the machine as one device)"
                                                     : " (the devices as given)"),
                   seconds_text(tried.measured_seconds), seconds_text(tried.predicted_seconds),
                   tried.kept ? "ran" : ""});
  }
  return table.render();
}

std::string render_cluster(const RunReport& report, const LatencyStats& stats) {
  const ClusterRunFigures& cluster = *report.cluster;
  std::string strategy = cluster.strategy;
  if (!cluster.chosen.empty() && cluster.chosen != cluster.strategy)
    strategy += " (chose " + cluster.chosen + ")";
  std::string text = cluster.failover + render_trial(cluster.trial);
  text +=
      format("plan        %s: %zu segments, %zu transfers, %d micro-batch(es); prepared in %s\n",
             strategy.c_str(), cluster.segments, cluster.transfers,
             std::max(cluster.microbatches, 1), seconds_text(cluster.prepare_seconds).c_str());
  Table table({"", "measured", "predicted", "error"});
  for (const ClusterRunFigures::DeviceBusy& device : cluster.devices) {
    if (device.measured_seconds == 0 && device.predicted_seconds == 0) continue;
    table.add_row({device.id + " busy (median)", seconds_text(device.measured_seconds),
                   seconds_text(device.predicted_seconds),
                   percent_error(device.measured_seconds, device.predicted_seconds)});
  }
  for (const ClusterRunFigures::HostLink& link : cluster.host_links) {
    table.add_row({link.from + " -> " + link.to + " (" + human_bytes(link.bytes) + ")",
                   seconds_text(link.measured_seconds), seconds_text(link.predicted_seconds),
                   percent_error(link.measured_seconds, link.predicted_seconds)});
  }
  table.add_separator();
  table.add_row({"latency (median)", seconds_text(stats.median),
                 seconds_text(cluster.predicted_latency_seconds),
                 percent_error(stats.median, cluster.predicted_latency_seconds)});
  if (cluster.ranks > 0)
    text +=
        format("ranks       %d, one per host (%s)\n", cluster.ranks, cluster.rank_mapping.c_str());
  text += table.render();
  text += format(
      "measured on this machine, %d segment runs and %d transfers per run; "
      "predicted by the planner's evaluator (%s)\n",
      cluster.segments_run, cluster.transfers_run,
      cluster.predicted_from.empty() ? "cost model" : cluster.predicted_from.c_str());
  text += render_segment_checks(cluster.segment_checks);
  text += render_speed_checks(cluster.speed_checks);
  for (const ProgramStats& plugin : cluster.compiled) {
    text += format(
        "%s: %d program(s) compiled in %s, %d loaded from the disk cache in %s, %d reused in "
        "memory (cache: %s)\n  program inputs, all runs: %d uploaded from the host, %d copied "
        "device to device, %d already on the device\n",
        plugin.plugin.c_str(), plugin.compiles, seconds_text(plugin.compile_seconds).c_str(),
        plugin.disk_hits, seconds_text(plugin.load_seconds).c_str(), plugin.memory_hits,
        plugin.cache_directory.empty() ? "memory only" : plugin.cache_directory.c_str(),
        plugin.uploaded, plugin.device_to_device, plugin.on_device);
  }
  return text;
}

nlohmann::json cluster_json(const ClusterRunFigures& cluster) {
  nlohmann::json devices = nlohmann::json::array();
  for (const ClusterRunFigures::DeviceBusy& device : cluster.devices) {
    devices.push_back({{"id", device.id},
                       {"busy_s", device.measured_seconds},
                       {"predicted_busy_s", device.predicted_seconds}});
  }
  nlohmann::json compiled = nlohmann::json::array();
  for (const ProgramStats& plugin : cluster.compiled) {
    compiled.push_back({{"plugin", plugin.plugin},
                        {"cache_directory", plugin.cache_directory},
                        {"compiles", plugin.compiles},
                        {"disk_hits", plugin.disk_hits},
                        {"memory_hits", plugin.memory_hits},
                        {"compile_s", plugin.compile_seconds},
                        {"load_s", plugin.load_seconds},
                        {"inputs_uploaded", plugin.uploaded},
                        {"inputs_device_to_device", plugin.device_to_device},
                        {"inputs_on_device", plugin.on_device}});
  }
  nlohmann::json json = {{"cluster", cluster.cluster},
                         {"strategy", cluster.strategy},
                         {"chosen", cluster.chosen.empty() ? cluster.strategy : cluster.chosen},
                         {"segments", cluster.segments},
                         {"transfers", cluster.transfers},
                         {"microbatches", std::max(cluster.microbatches, 1)},
                         {"prepare_s", cluster.prepare_seconds},
                         {"predicted_latency_s", cluster.predicted_latency_seconds},
                         {"predicted_from", cluster.predicted_from},
                         {"segments_run", cluster.segments_run},
                         {"transfers_run", cluster.transfers_run},
                         {"devices", devices},
                         {"compiled", compiled}};
  nlohmann::json checks = nlohmann::json::array();
  for (const SegmentCheck& check : cluster.segment_checks) {
    checks.push_back({{"segment", check.segment},
                      {"device", check.device},
                      {"nodes", check.nodes},
                      {"first", check.first},
                      {"last", check.last},
                      {"measured_s", check.measured_seconds},
                      {"predicted_s", check.predicted_seconds},
                      {"off", check.off()}});
  }
  json["segment_checks"] = checks;
  nlohmann::json speeds = nlohmann::json::array();
  for (const SpeedCheck& check : cluster.speed_checks) {
    speeds.push_back({{"device", check.device},
                      {"calibrated_s", check.calibrated_seconds},
                      {"now_s", check.now_seconds},
                      {"moved", check.moved()}});
  }
  json["speed_checks"] = speeds;
  if (!cluster.failover.empty()) json["failover"] = cluster.failover;
  nlohmann::json trial = nlohmann::json::array();
  for (const TriedPlan& tried : cluster.trial) {
    trial.push_back({{"plan", tried.plan},
                     {"cluster_view", tried.whole_machine ? "whole machine" : "as given"},
                     {"measured_s", tried.measured_seconds},
                     {"predicted_s", tried.predicted_seconds},
                     {"kept", tried.kept}});
  }
  json["trial"] = trial;
  if (cluster.ranks > 0) {
    nlohmann::json links = nlohmann::json::array();
    for (const ClusterRunFigures::HostLink& link : cluster.host_links) {
      links.push_back({{"from", link.from},
                       {"to", link.to},
                       {"bytes", static_cast<int64_t>(link.bytes)},
                       {"network_s", link.measured_seconds},
                       {"predicted_s", link.predicted_seconds}});
    }
    json["ranks"] = cluster.ranks;
    json["rank_mapping"] = cluster.rank_mapping;
    json["host_links"] = links;
  }
  return json;
}

std::string render_precision(const PrecisionFigures& figures, const LatencyStats& stats) {
  const double fp32 = latency_stats(figures.fp32_latencies_seconds).median;
  std::string out = format(
      "precision   %s in %d of %d matrix products (the rest in fp32); median %s against "
      "%s in fp32: %.2fx\n",
      figures.precision.c_str(), figures.lowered, figures.products,
      seconds_text(stats.median).c_str(), seconds_text(fp32).c_str(),
      stats.median > 0 ? fp32 / stats.median : 0.0);
  for (const auto& [name, d] : figures.outputs) {
    out += format("accuracy    %s against fp32: max |error| %.3g, relative %.3g%%", name.c_str(),
                  d.max_abs_error, 100 * d.relative_error);
    if (d.rows > 0) {
      out += format(", same top-1 in %lld of %lld rows", static_cast<long long>(d.same_argmax),
                    static_cast<long long>(d.rows));
    }
    out += "\n";
  }
  for (const auto& [name, why] : figures.not_compared)
    out += "accuracy    " + name + ": not compared with fp32: " + why + "\n";
  return out;
}

nlohmann::json precision_json(const PrecisionFigures& figures, const LatencyStats& stats) {
  const double fp32 = latency_stats(figures.fp32_latencies_seconds).median;
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& [name, d] : figures.outputs) {
    outputs.push_back({{"output", name},
                       {"max_abs_error", d.max_abs_error},
                       {"relative_error", d.relative_error},
                       {"rows", d.rows},
                       {"same_argmax", d.same_argmax}});
  }
  nlohmann::json not_compared = nlohmann::json::array();
  for (const auto& [name, why] : figures.not_compared)
    not_compared.push_back({{"output", name}, {"reason", why}});
  return {{"name", figures.precision},
          {"not_compared", not_compared},
          {"matrix_products", figures.products},
          {"lowered", figures.lowered},
          {"fp32_median_s", fp32},
          {"speedup", stats.median > 0 ? fp32 / stats.median : 0.0},
          {"outputs", outputs}};
}

}  // namespace

void set_profile(RunReport& report, const std::vector<NodeTotal>& totals, size_t runs) {
  const double count = static_cast<double>(std::max<size_t>(runs, 1));
  std::map<std::string, OpTimeSummary> by_type;
  for (const NodeTotal& total : totals) {
    NodeTime row = total.node;
    row.seconds /= count;
    row.flops /= count;
    OpTimeSummary& type = by_type[row.op_type];
    type.op_type = row.op_type;
    type.calls += total.calls / static_cast<int64_t>(count);
    type.seconds += row.seconds;
    type.flops += row.flops;
    report.node_times.push_back(row);
  }
  for (const auto& [name, type] : by_type) report.op_times.push_back(type);
  report.profiled = true;
}

LatencyStats latency_stats(std::vector<double> samples) {
  LatencyStats stats;
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  const double count = static_cast<double>(samples.size());
  stats.min = samples.front();
  stats.max = samples.back();
  stats.median = quantile_of_sorted(samples, 0.5);
  stats.p90 = quantile_of_sorted(samples, 0.9);
  stats.p95 = quantile_of_sorted(samples, 0.95);
  stats.p99 = quantile_of_sorted(samples, 0.99);
  stats.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / count;
  double squares = 0;
  for (double sample : samples) squares += (sample - stats.mean) * (sample - stats.mean);
  stats.stddev = samples.size() > 1 ? std::sqrt(squares / (count - 1)) : 0.0;
  return stats;
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
  const LatencyStats stats = latency_stats(report.latencies_seconds);
  out += format("latency     min %s   mean %s   median %s   max %s\n",
                seconds_text(stats.min).c_str(), seconds_text(stats.mean).c_str(),
                seconds_text(stats.median).c_str(), seconds_text(stats.max).c_str());
  out += format("            p90 %s   p95 %s   p99 %s   stddev %s\n",
                seconds_text(stats.p90).c_str(), seconds_text(stats.p95).c_str(),
                seconds_text(stats.p99).c_str(), seconds_text(stats.stddev).c_str());
  out += format(
      "            %zu timed runs in %s after %d warm-up run(s); %d threads; %s\n",
      report.latencies_seconds.size(), seconds_text(report.duration_seconds).c_str(),
      report.warmup_runs, report.threads,
      report.cluster ? ("cluster " + report.cluster->cluster).c_str() : report.device.c_str());
  out += format("throughput  %.1f samples/s (batch %lld, at the median latency)\n",
                throughput(report, stats), static_cast<long long>(report.batch));
  if (report.arena_bytes && report.unplanned_bytes) {
    out += "memory      " + human_bytes(static_cast<double>(*report.arena_bytes)) +
           " arena for intermediates (" +
           human_bytes(static_cast<double>(*report.unplanned_bytes)) + " without reuse)\n";
  }
  if (report.cluster) out += render_cluster(report, stats);
  if (report.precision) out += render_precision(*report.precision, stats);
  if (report.profiled) out += render_profile(report);
  for (const auto& [name, comparison] : report.checks) {
    out += "check       " +
           (comparison.matches
                ? name + ": matches (" + std::to_string(comparison.elements) + " elements)"
                : "MISMATCH " + describe_mismatch(name, comparison)) +
           "\n";
  }
  return out;
}

nlohmann::json profile_json(const RunReport& report) {
  nlohmann::json types = nlohmann::json::array();
  double total = 0;
  for (const OpTimeSummary& row : report.op_times) total += row.seconds;
  for (const OpTimeSummary& row : slowest_op_types(report)) {
    types.push_back({{"op_type", row.op_type},
                     {"calls", row.calls},
                     {"time_per_run_s", row.seconds},
                     {"share", total > 0 ? row.seconds / total : 0.0},
                     {"flops", row.flops},
                     {"flops_per_s", row.seconds > 0 ? row.flops / row.seconds : 0.0}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeTime& node : slowest_nodes(report)) {
    nodes.push_back({{"node", node.node},
                     {"op_type", node.op_type},
                     {"device", node.device},
                     {"time_per_run_s", node.seconds},
                     {"share", total > 0 ? node.seconds / total : 0.0},
                     {"flops", node.flops}});
  }
  return {{"schema_version", kJsonSchemaVersion},
          {"model", report.model},
          {"runs", report.latencies_seconds.size()},
          {"op_types", types},
          {"nodes", nodes}};
}

nlohmann::json run_report_json(const RunReport& report) {
  const LatencyStats stats = latency_stats(report.latencies_seconds);
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
    nlohmann::json check = {{"output", name},         {"matches", c.matches},
                            {"elements", c.elements}, {"mismatched", c.mismatched},
                            {"atol", c.atol},         {"rtol", c.rtol}};
    if (!c.matches) check["detail"] = describe_mismatch(name, c);
    if (c.worst_index >= 0) {
      check["worst"] = {{"index", c.worst_position},
                        {"actual", c.actual},
                        {"expected", c.expected},
                        {"error", std::abs(c.actual - c.expected)}};
    }
    checks.push_back(check);
  }
  nlohmann::json json = {{"schema_version", kJsonSchemaVersion},
                         {"model", report.model},
                         {"device", report.device},
                         {"threads", report.threads},
                         {"batch", report.batch},
                         {"warmup_runs", report.warmup_runs},
                         {"runs", report.latencies_seconds.size()},
                         {"duration_s", report.duration_seconds},
                         {"latency",
                          {{"min_s", stats.min},
                           {"mean_s", stats.mean},
                           {"median_s", stats.median},
                           {"p90_s", stats.p90},
                           {"p95_s", stats.p95},
                           {"p99_s", stats.p99},
                           {"max_s", stats.max},
                           {"stddev_s", stats.stddev},
                           {"samples_s", report.latencies_seconds}}},
                         {"throughput_samples_per_s", throughput(report, stats)},
                         {"outputs", outputs},
                         {"checks", checks}};
  if (report.arena_bytes && report.unplanned_bytes) {
    json["memory"] = {{"arena_bytes", *report.arena_bytes},
                      {"without_reuse_bytes", *report.unplanned_bytes}};
  }
  if (report.cluster) json["plan"] = cluster_json(*report.cluster);
  if (report.precision) json["precision"] = precision_json(*report.precision, stats);
  if (report.profiled) {
    const nlohmann::json profile = profile_json(report);
    json["profile"] = {{"op_types", profile["op_types"]}, {"nodes", profile["nodes"]}};
  }
  return json;
}

}  // namespace tandem
