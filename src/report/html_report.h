#pragma once
#include <string>
#include <vector>

#include "report/timeline.h"

namespace tandem {

// What the HTML report shows, gathered by its producer (the simulator's summary, the planner).
struct HtmlReport {
  std::string title;   // "plan.json on cluster.yaml"
  std::string source;  // where the figures come from: "predicted (simulator; ...)"
  std::vector<std::pair<std::string, std::string>> facts;  // label, value: latency, throughput...
  struct DeviceRow {
    std::string id;
    double busy_seconds = 0, idle_seconds = 0, peak_memory_bytes = 0, capacity_bytes = 0;
  };
  std::vector<DeviceRow> devices;
  struct LinkRow {
    std::string name;
    double bytes = 0, busy_seconds = 0;
  };
  std::vector<LinkRow> links;
  std::vector<std::string> device_ids;            // labels of device_bytes' rows and columns
  std::vector<std::vector<double>> device_bytes;  // bytes sent from [a] to [b]
  struct StrategyRow {
    std::string strategy;
    bool feasible = false;
    double figure = 0;  // the objective's figure (seconds, samples/s, USD per M samples)
    std::string text;   // the figure as text, or why there is no plan
    bool chosen = false;
  };
  std::vector<StrategyRow> strategies;  // empty when the producer has none
  std::string objective;                // "latency", "throughput", "cost"
  double lower_bound = 0;               // in the objective's unit; 0 when unknown
  std::string lower_bound_text;
  Timeline timeline;  // the device compute tracks and link tracks, memory samples
};

// One self-contained HTML file: inline CSS, inline SVG drawn here, a few lines of inline script
// (hover details; it marks <body data-rendered="true"> when it has run). Fetches nothing.
std::string html_report(const HtmlReport& report);
void write_html_report(const std::string& path, const HtmlReport& report);

}  // namespace tandem
