#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/segment_check.h"
#include "report/timeline.h"

namespace tandem {

// What the HTML report shows, gathered by its producer (the simulator's summary, the planner,
// `tandem run --cluster`). Every field is optional: a section with nothing to show is left out.
struct HtmlReport {
  // "plan.json on cluster.yaml"; each absolute path in it is shown as display_path() gives it
  // (the title as given is the heading's tooltip).
  std::string title;
  std::string source;  // where the figures come from: "predicted (simulator; ...)"
  // The strategy that made the plan ("pipeline", "heft (chosen by auto)") and the samples per
  // batch; shown first among the facts, in place of a fact with the same label.
  std::string strategy;
  int64_t batch = 0;                                       // 0: unknown
  std::vector<std::pair<std::string, std::string>> facts;  // label, value: latency, throughput...
  struct DeviceRow {
    std::string id;  // as the timelines' device groups name it
    double busy_seconds = 0, idle_seconds = 0, peak_memory_bytes = 0, capacity_bytes = 0;
  };
  std::vector<DeviceRow> devices;  // predicted
  struct LinkRow {
    std::string name;
    double bytes = 0, busy_seconds = 0;
  };
  std::vector<LinkRow> links;                     // predicted; those with no bytes are not shown
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
  Timeline timeline;  // predicted: the device compute tracks and link tracks, memory samples
  // A measured run (PlanExecutor::timeline()), drawn below the prediction on the same time
  // scale; absent when it has no tracks. Of several iterations (its "iteration" spans) the
  // report draws the median one by wall time, and compares each device's busy time in it
  // (its "compute" spans) with the prediction's, matching DeviceRow::id to the track groups.
  Timeline measured;
  std::string measured_source;  // "measured on this machine (...)"; empty: measured.source
  // Each segment that ran, measured (median over the timed runs) beside predicted; those off
  // by more than kSegmentOffFraction are flagged. Empty: no section.
  std::vector<SegmentCheck> segment_checks;
  // The devices' speed references timed after the run (run --cluster); empty: no paragraph.
  std::vector<SpeedCheck> speed_checks;
  // The plans tried before the timed runs (run --cluster); empty: no section.
  std::vector<TriedPlan> trial;
};

// One self-contained HTML file: inline CSS, inline SVG drawn here, a few lines of inline script
// (hover details; it marks <body data-rendered="true"> when it has run). Fetches nothing.
std::string html_report(const HtmlReport& report);
void write_html_report(const std::string& path, const HtmlReport& report);

// A path as a report shows it: relative to the current directory when it lies under it
// ("zoo/resnet/model.onnx"), else its last two components ("clusters/cpu-split.yaml"), so that
// a report does not carry the machine's directory layout. A relative path is returned as is.
std::string display_path(const std::string& path);

}  // namespace tandem
