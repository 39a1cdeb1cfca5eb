#include "report/compare_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>

#include "report/json_schema.h"
#include "report/table.h"

namespace tandem {
namespace {

// Nodes each device runs: a data-parallel plan runs every node on each device with a share.
std::vector<int> nodes_per_device(const Plan& plan, size_t devices) {
  std::vector<int> nodes(devices, 0);
  if (!plan.batch_share.empty()) {
    for (size_t d = 0; d < devices; ++d)
      if (plan.batch_share[d] > 0) nodes[d] = static_cast<int>(plan.device_of_node.size());
  } else {
    for (int device : plan.device_of_node) ++nodes[device];
  }
  return nodes;
}

double total_busy(const CompareColumn& column) {
  double total = 0;
  for (const CompareColumn::Device& device : column.devices) total += device.busy_seconds;
  return total;
}

// USD per million samples at the simulated throughput; 0 when a device used has no price. The
// evaluator's cost is the used devices' price per second over its throughput, so rescaling it
// to the simulated throughput prices the same devices.
double simulated_cost(const CompareColumn& column) {
  const Prediction& estimate = column.plan.predicted;
  if (estimate.cost_per_million_samples <= 0 || column.throughput_samples_per_second <= 0) return 0;
  return estimate.cost_per_million_samples * estimate.throughput_samples_per_second /
         column.throughput_samples_per_second;
}

double free_bytes(const CompareColumn::Device& device) {
  return device.capacity_bytes - device.peak_memory_bytes;
}

// The device the plan uses with the least memory left at its simulated peak; -1 when no device
// it uses has a known capacity.
int tightest_device(const CompareColumn& column, const std::vector<int>& nodes) {
  int tightest = -1;
  for (size_t d = 0; d < column.devices.size(); ++d) {
    const CompareColumn::Device& device = column.devices[d];
    if (nodes[d] == 0 || device.capacity_bytes == kInfinity) continue;
    if (tightest < 0 || free_bytes(device) < free_bytes(column.devices[tightest]))
      tightest = static_cast<int>(d);
  }
  return tightest;
}

// The first cluster's latency over this one's (above 1: this one is faster), and this one's
// throughput over the first's; nullopt unless both have a plan.
std::optional<double> latency_speedup(const CompareColumn& first, const CompareColumn& column) {
  if (!first.feasible() || !column.feasible()) return std::nullopt;
  return first.latency_seconds / column.latency_seconds;
}
std::optional<double> throughput_ratio(const CompareColumn& first, const CompareColumn& column) {
  if (!first.feasible() || !column.feasible()) return std::nullopt;
  return column.throughput_samples_per_second / first.throughput_samples_per_second;
}

std::string bound_text(Objective objective, double bound) {
  switch (objective) {
    case Objective::kLatency: return seconds_text(bound);
    case Objective::kThroughput: return std::isfinite(bound) ? si(bound) + " samples/s" : "-";
    case Objective::kCost: return bound > 0 ? format("$%.3g per M samples", bound) : "-";
  }
  return "-";
}

// Column headings: each file's name, or the paths as given where two names are the same.
std::vector<std::string> headings(const CompareReport& report) {
  std::vector<std::string> names{""};
  for (const CompareColumn& column : report.columns)
    names.push_back(std::filesystem::path(column.cluster).filename().string());
  for (size_t i = 1; i < names.size(); ++i) {
    if (std::count(names.begin() + 1, names.end(), names[i]) > 1) {
      for (size_t c = 0; c < report.columns.size(); ++c) names[c + 1] = report.columns[c].cluster;
      break;
    }
  }
  return names;
}

std::string memory_text(const CompareColumn& column, const std::vector<int>& nodes) {
  if (!column.out_of_memory.empty()) return column.out_of_memory + ": out of memory";
  const int tightest = tightest_device(column, nodes);
  if (tightest < 0) return "capacity unknown";
  const CompareColumn::Device& device = column.devices[tightest];
  return device.id + ": " + human_bytes(free_bytes(device)) + " free of " +
         human_bytes(device.capacity_bytes);
}

// "gpu0 72% (41 nodes)" for each device with work, the busiest first.
std::vector<std::string> work_texts(const CompareColumn& column, const std::vector<int>& nodes) {
  std::vector<size_t> used;
  for (size_t d = 0; d < column.devices.size(); ++d)
    if (nodes[d] > 0) used.push_back(d);
  std::stable_sort(used.begin(), used.end(), [&](size_t a, size_t b) {
    return column.devices[a].busy_seconds > column.devices[b].busy_seconds;
  });
  const double total = total_busy(column);
  std::vector<std::string> texts;
  for (size_t d : used) {
    const double share = total > 0 ? column.devices[d].busy_seconds / total : 0;
    texts.push_back(format("%s %.0f%% (%d node%s)", column.devices[d].id.c_str(), 100 * share,
                           nodes[d], nodes[d] == 1 ? "" : "s"));
  }
  return texts;
}

std::string ratio_text(const std::optional<double>& ratio, const char* better) {
  if (!ratio) return "-";
  return *ratio >= 1 ? format("%.2fx%s", *ratio, better) : format("%.2fx", *ratio);
}

// Bytes as a JSON integer; null for an unknown (infinite) capacity.
nlohmann::json bytes_or_null(double bytes) {
  return bytes == kInfinity ? nlohmann::json(nullptr)
                            : nlohmann::json(static_cast<int64_t>(std::llround(bytes)));
}

nlohmann::json column_json(const CompareColumn& first, const CompareColumn& column) {
  nlohmann::json json = {{"cluster", column.cluster}, {"feasible", column.feasible()}};
  json["cluster_view"] = column.whole_machine ? "whole machine" : "as given";
  if (!column.feasible()) {
    json["why_not"] = column.why_not;
    return json;
  }
  const Plan& plan = column.plan;
  const std::vector<int> nodes = nodes_per_device(plan, column.devices.size());
  const double cost = simulated_cost(column);
  json["strategy"] = plan.strategy;
  json["chosen"] = plan.chosen.empty() ? plan.strategy : plan.chosen;
  json["reason"] = plan.reason;
  json["microbatches"] = plan.microbatches;
  json["latency_s"] = column.latency_seconds;
  json["throughput_samples_per_s"] = column.throughput_samples_per_second;
  json["cost_per_million_samples_usd"] = cost > 0 ? nlohmann::json(cost) : nlohmann::json(nullptr);
  json["planner_estimate"] = {
      {"latency_s", plan.predicted.latency_seconds},
      {"throughput_samples_per_s", plan.predicted.throughput_samples_per_second}};
  json["lower_bound"] = {
      {"latency_s", column.bounds.latency_seconds},
      {"throughput_samples_per_s", std::isfinite(column.bounds.throughput_samples_per_second)
                                       ? nlohmann::json(column.bounds.throughput_samples_per_second)
                                       : nlohmann::json(nullptr)},
      {"cost_per_million_samples_usd", column.bounds.cost_per_million_samples}};
  json["efficiency"] = plan.efficiency;
  json["speedup_over_best_single"] = plan.speedup_over_best_single;
  json["best_single_device"] = column.best_single_device.empty()
                                   ? nlohmann::json(nullptr)
                                   : nlohmann::json(column.best_single_device);
  const int tightest = tightest_device(column, nodes);
  json["memory_headroom"] = nullptr;
  if (tightest >= 0) {
    const CompareColumn::Device& device = column.devices[tightest];
    json["memory_headroom"] = {{"device", device.id},
                               {"free_bytes", bytes_or_null(free_bytes(device))},
                               {"capacity_bytes", bytes_or_null(device.capacity_bytes)}};
  }
  json["out_of_memory"] =
      column.out_of_memory.empty() ? nlohmann::json(nullptr) : nlohmann::json(column.out_of_memory);
  const double busy = total_busy(column);
  nlohmann::json devices = nlohmann::json::array();
  for (size_t d = 0; d < column.devices.size(); ++d) {
    const CompareColumn::Device& device = column.devices[d];
    devices.push_back({{"id", device.id},
                       {"nodes", nodes[d]},
                       {"busy_s", device.busy_seconds},
                       {"busy_share", busy > 0 ? device.busy_seconds / busy : 0.0},
                       {"memory_peak_bytes", bytes_or_null(device.peak_memory_bytes)},
                       {"capacity_bytes", bytes_or_null(device.capacity_bytes)}});
  }
  json["devices"] = devices;
  const auto ratio_json = [](const std::optional<double>& ratio) {
    return ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr);
  };
  json["latency_speedup_vs_first"] = ratio_json(latency_speedup(first, column));
  json["throughput_ratio_vs_first"] = ratio_json(throughput_ratio(first, column));
  return json;
}

}  // namespace

std::string render_compare_report(const CompareReport& report) {
  const std::string objective(objective_name(report.objective));
  std::string text =
      format("compare: %s, strategy %s, objective %s, batch %lld", report.model.c_str(),
             report.strategy.c_str(), objective.c_str(), static_cast<long long>(report.batch));
  if (report.microbatches > 1) text += format(", %d micro-batches asked", report.microbatches);
  text += "\npredicted: each cluster's best plan, simulated event by event\n\n";

  const CompareColumn& first = report.columns.front();
  const std::vector<std::string> names = headings(report);
  Table table(names);
  // Why a cluster has no plan is a sentence: under the table, where it does not widen a column.
  std::string why_not;
  std::vector<std::string> strategy_row{"strategy"};
  for (size_t c = 0; c < report.columns.size(); ++c) {
    const CompareColumn& column = report.columns[c];
    const Plan& plan = column.plan;
    if (!column.feasible()) why_not += "no plan on " + names[c + 1] + ": " + column.why_not + "\n";
    strategy_row.push_back(!column.feasible() ? "no plan (below)"
                           : plan.chosen.empty() || plan.chosen == plan.strategy
                               ? plan.strategy
                               : plan.strategy + " (chose " + plan.chosen + ")");
  }
  table.add_row(strategy_row);
  // A row of a figure of each column's plan; "-" where a cluster has none.
  const auto add_row = [&](std::string label,
                           const std::function<std::string(const CompareColumn&)>& cell) {
    std::vector<std::string> row{std::move(label)};
    for (const CompareColumn& column : report.columns)
      row.push_back(column.feasible() ? cell(column) : "-");
    table.add_row(std::move(row));
  };
  add_row("predicted latency",
          [](const CompareColumn& column) { return seconds_text(column.latency_seconds); });
  add_row("predicted throughput", [](const CompareColumn& column) {
    return si(column.throughput_samples_per_second) + " samples/s";
  });
  add_row("predicted cost", [](const CompareColumn& column) {
    const double cost = simulated_cost(column);
    return cost > 0 ? format("$%.3g per M samples", cost) : std::string("-");
  });
  add_row("lower bound (" + objective + ")", [](const CompareColumn& column) {
    return bound_text(column.plan.objective, column.plan.lower_bound);
  });
  add_row("efficiency", [](const CompareColumn& column) {
    return format("%.0f%%", 100 * column.plan.efficiency);
  });
  add_row("vs best single", [](const CompareColumn& column) {
    return column.best_single_device.empty()
               ? std::string("-")
               : format("%.2fx over %s", column.plan.speedup_over_best_single,
                        column.best_single_device.c_str());
  });
  add_row("tightest memory", [](const CompareColumn& column) {
    return memory_text(column, nodes_per_device(column.plan, column.devices.size()));
  });
  // One line per device with work, the busiest first: each column lists its own devices.
  std::vector<std::vector<std::string>> work;
  size_t work_lines = 1;
  for (const CompareColumn& column : report.columns) {
    work.push_back(column.feasible()
                       ? work_texts(column, nodes_per_device(column.plan, column.devices.size()))
                       : std::vector<std::string>{"-"});
    work_lines = std::max(work_lines, work.back().size());
  }
  for (size_t line = 0; line < work_lines; ++line) {
    std::vector<std::string> row{line == 0 ? "work (busy share)" : ""};
    for (const std::vector<std::string>& texts : work)
      row.push_back(line < texts.size() ? texts[line] : "");
    table.add_row(std::move(row));
  }
  add_row("latency vs first", [&](const CompareColumn& column) {
    return &column == &first ? "baseline" : ratio_text(latency_speedup(first, column), " faster");
  });
  add_row("throughput vs first", [&](const CompareColumn& column) {
    return &column == &first ? "baseline" : ratio_text(throughput_ratio(first, column), "");
  });
  return text + table.render() + (why_not.empty() ? "" : "\n" + why_not);
}

nlohmann::json compare_report_json(const CompareReport& report) {
  nlohmann::json columns = nlohmann::json::array();
  for (const CompareColumn& column : report.columns)
    columns.push_back(column_json(report.columns.front(), column));
  return {{"schema_version", kJsonSchemaVersion},
          {"model", report.model},
          {"strategy", report.strategy},
          {"objective", std::string(objective_name(report.objective))},
          {"batch", report.batch},
          {"microbatches", report.microbatches},
          {"fused", report.fused},
          {"clusters", columns}};
}

}  // namespace tandem
