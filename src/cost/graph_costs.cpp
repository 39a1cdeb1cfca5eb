#include "cost/graph_costs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace tandem {
namespace {

// Index of the least finite entry, -1 when none is finite; the first on a tie.
int least(const std::vector<double>& values) {
  int best = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i]) && (best < 0 || values[i] < values[best])) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

}  // namespace

GraphDeviceCosts graph_device_costs(const Graph& graph, const CostModel& model) {
  const Cluster& cluster = model.cluster();
  // Every node on every device; devices with identical times share a column.
  std::vector<std::vector<OpTime>> times(cluster.devices.size());
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    for (const Node& node : graph.nodes) {
      times[d].push_back(model.op_time(node, graph, static_cast<int>(d)));
    }
  }
  const auto same_times = [&](size_t a, size_t b) {
    if (model.figures(a).step_overhead.value != model.figures(b).step_overhead.value) return false;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (times[a][n].seconds != times[b][n].seconds) return false;
    }
    return true;
  };
  GraphDeviceCosts costs;
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    size_t c = 0;
    while (c < costs.columns.size() && !same_times(costs.columns[c].devices[0], d)) ++c;
    if (c == costs.columns.size()) costs.columns.emplace_back();
    costs.columns[c].devices.push_back(static_cast<int>(d));
    costs.columns[c].ids.push_back(cluster.devices[d].id);
  }
  for (DeviceColumn& column : costs.columns) {
    column.label = cluster.devices[column.devices[0]].id;
    if (column.devices.size() > 1)
      column.label += " (x" + std::to_string(column.devices.size()) + ")";
    for (const OpTime& time : times[column.devices[0]]) {
      if (time.seconds == 0) continue;  // views: no figure was used
      if (std::find(column.sources.begin(), column.sources.end(), time.source) ==
          column.sources.end()) {
        column.sources.push_back(time.source);
      }
    }
  }

  std::map<std::string, size_t> row_of;
  costs.total_seconds.assign(costs.columns.size(), 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const std::string& op_type = graph.nodes[n].op_type;
    auto [it, added] = row_of.try_emplace(op_type, costs.rows.size());
    if (added) costs.rows.push_back({op_type, 0, std::vector<double>(costs.columns.size(), 0)});
    OpTypeTimes& row = costs.rows[it->second];
    ++row.count;
    for (size_t c = 0; c < costs.columns.size(); ++c) {
      const double seconds = times[costs.columns[c].devices[0]][n].seconds;
      row.seconds[c] += seconds;
      costs.total_seconds[c] += seconds;
    }
  }
  // A compiled device (PJRT) runs the whole graph as one program: one step overhead per run.
  for (size_t c = 0; c < costs.columns.size(); ++c) {
    costs.total_seconds[c] += model.figures(costs.columns[c].devices[0]).step_overhead.value;
  }
  for (OpTypeTimes& row : costs.rows) row.fastest = least(row.seconds);
  const auto best_time = [](const OpTypeTimes& row) {
    return row.fastest < 0 ? std::numeric_limits<double>::infinity() : row.seconds[row.fastest];
  };
  std::stable_sort(
      costs.rows.begin(), costs.rows.end(),
      [&](const OpTypeTimes& a, const OpTypeTimes& b) { return best_time(a) > best_time(b); });
  costs.fastest = least(costs.total_seconds);
  return costs;
}

}  // namespace tandem
