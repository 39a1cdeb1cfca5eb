#include "report/device_costs.h"

#include <cmath>

#include "report/table.h"

namespace tandem {
namespace {

nlohmann::json seconds_json(double seconds) {
  return std::isfinite(seconds) ? nlohmann::json(seconds) : nlohmann::json(nullptr);
}

std::string column_label(const GraphDeviceCosts& costs, int column) {
  return column < 0 ? "none" : costs.columns[column].label;
}

}  // namespace

std::string human_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "cannot run";
  if (seconds == 0) return "0";
  static const struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  for (const auto& [scale, unit] : kUnits) {
    if (seconds >= scale || scale == 1e-9) {
      const double value = seconds / scale;
      return format(value >= 100 ? "%.0f %s" : value >= 10 ? "%.1f %s" : "%.2f %s", value, unit);
    }
  }
  return "0";
}

std::string render_device_costs(const GraphDeviceCosts& costs) {
  std::vector<std::string> header{"op type", "count"};
  for (const DeviceColumn& column : costs.columns) header.push_back(column.label);
  header.push_back("fastest");
  Table table(header);
  for (const OpTypeTimes& row : costs.rows) {
    std::vector<std::string> cells{row.op_type, std::to_string(row.count)};
    for (double seconds : row.seconds) cells.push_back(human_seconds(seconds));
    cells.push_back(column_label(costs, row.fastest));
    table.add_row(std::move(cells));
  }
  table.add_separator();
  std::vector<std::string> total{"total", ""};
  for (double seconds : costs.total_seconds) total.push_back(human_seconds(seconds));
  total.push_back(column_label(costs, costs.fastest));
  table.add_row(std::move(total));

  std::string text = "Predicted time per op type, each device running the whole graph alone:\n" +
                     table.render() + "Figures:\n";
  for (const DeviceColumn& column : costs.columns) {
    text += "  " + column.label + ": ";
    for (size_t i = 0; i < column.sources.size(); ++i) {
      text += (i ? "; " : "") + column.sources[i];
    }
    text += "\n";
  }
  return text;
}

nlohmann::json device_costs_json(const GraphDeviceCosts& costs) {
  nlohmann::json columns = nlohmann::json::array();
  for (const DeviceColumn& column : costs.columns) {
    columns.push_back(
        {{"label", column.label}, {"devices", column.ids}, {"sources", column.sources}});
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const OpTypeTimes& row : costs.rows) {
    nlohmann::json seconds = nlohmann::json::array();
    for (double s : row.seconds) seconds.push_back(seconds_json(s));
    rows.push_back(
        {{"op_type", row.op_type},
         {"count", row.count},
         {"time_s", seconds},
         {"fastest", row.fastest < 0 ? nlohmann::json(nullptr)
                                     : nlohmann::json(column_label(costs, row.fastest))}});
  }
  nlohmann::json totals = nlohmann::json::array();
  for (double s : costs.total_seconds) totals.push_back(seconds_json(s));
  return {{"columns", columns},
          {"op_types", rows},
          {"total_s", totals},
          {"fastest", costs.fastest < 0 ? nlohmann::json(nullptr)
                                        : nlohmann::json(column_label(costs, costs.fastest))}};
}

}  // namespace tandem
