#include "report/segment_check.h"

#include <cmath>
#include <map>
#include <utility>

#include "plan/evaluate.h"
#include "report/table.h"
#include "util/statistics.h"

namespace tandem {

bool SegmentCheck::off() const {
  return std::abs(measured_seconds - predicted_seconds) > kSegmentOffFraction * predicted_seconds;
}

bool SpeedCheck::moved() const {
  return std::abs(now_seconds - calibrated_seconds) > kSpeedMovedFraction * calibrated_seconds;
}

std::string SpeedCheck::describe() const {
  const double ratio = now_seconds / calibrated_seconds;
  return format(
      "%s ran its calibration's speed reference (a 256^3 product) in %s, %.2fx its %s at "
      "calibration: the machine runs %s than when calibrated, and the predictions assume the "
      "calibrated speed (tandem calibrate measures it as it runs now)",
      device.c_str(), seconds_text(now_seconds).c_str(), ratio,
      seconds_text(calibrated_seconds).c_str(), ratio > 1 ? "slower" : "faster");
}

std::vector<SegmentCheck> check_segments(const Plan& plan, const PlanningProblem& problem,
                                         const Timeline& measured) {
  const Cluster& cluster = problem.cluster();
  std::map<std::string, int> device_of_id;
  for (int d = 0; d < problem.device_count(); ++d) device_of_id[cluster.devices[d].id] = d;

  // Measured: per (segment, device), per run, its spans summed (one per micro-batch).
  std::map<std::pair<int, int>, std::map<int, double>> runs;
  const std::string prefix = "segment ";
  for (const TimelineSpan& span : measured.spans) {
    if (span.category != "compute" || span.name.rfind(prefix, 0) != 0) continue;
    if (span.track < 0 || span.track >= static_cast<int>(measured.tracks.size())) continue;
    const auto device = device_of_id.find(measured.tracks[span.track].group);
    if (device == device_of_id.end()) continue;
    const int segment = std::stoi(span.name.substr(prefix.size()));
    runs[{segment, device->second}][span.iteration] += span.duration_seconds;
  }

  const bool data_parallel = !plan.batch_share.empty();
  const int microbatches = std::max(plan.microbatches, 1);
  const auto node_name = [&](int node) {
    const Graph* graph = problem.graph();
    return graph ? graph->nodes[node].label() : "node " + std::to_string(node);
  };
  std::vector<SegmentCheck> checks;
  for (const auto& [key, per_run] : runs) {
    const auto [segment, device] = key;
    std::vector<int> nodes;
    double fraction = 1.0 / microbatches;
    int pieces = microbatches;
    if (data_parallel) {
      for (int n = 0; n < problem.node_count(); ++n) nodes.push_back(n);
      fraction = device < static_cast<int>(plan.batch_share.size()) ? plan.batch_share[device] : 0;
      pieces = 1;
    } else {
      if (segment < 0 || segment >= static_cast<int>(plan.segments.size()) ||
          plan.segments[segment].device != device)
        continue;
      nodes = plan.segments[segment].nodes;
    }
    if (nodes.empty()) continue;
    SegmentCheck check;
    check.segment = segment;
    check.device = cluster.devices[device].id;
    check.nodes = nodes.size();
    check.first = node_name(nodes.front());
    check.last = node_name(nodes.back());
    std::vector<double> seconds;
    for (const auto& [run, total] : per_run) seconds.push_back(total);
    check.measured_seconds = median(seconds);
    const PlanningProblem::Sharing sharing = steady_sharing(problem, plan, device);
    HostCopies host_copies(problem);  // a segment's run copies its inputs in and outputs out
    for (int n : nodes)
      check.predicted_seconds +=
          pieces * (problem.contended_seconds_for_share(n, device, fraction, sharing) +
                    host_copies.charge(n, device, fraction));
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace tandem
