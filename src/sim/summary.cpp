#include "sim/summary.h"

#include <algorithm>
#include <cmath>

#include "report/table.h"

namespace tandem {
namespace {

std::string percent(double part, double whole) {
  return whole > 0 ? format("%.0f%%", 100 * part / whole) : "-";
}

// Rows per device and link of the plan's cluster, replicas folded in.
struct Folded {
  std::vector<HtmlReport::DeviceRow> devices;
  std::vector<HtmlReport::LinkRow> links;
};

Folded fold(const SimulationResult& result, const PlanningProblem& problem) {
  Folded folded;
  const int devices = problem.device_count();
  folded.devices.resize(devices);
  for (int d = 0; d < devices; ++d) {
    folded.devices[d].id = problem.cluster().devices[d].id;
    folded.devices[d].capacity_bytes = problem.memory_capacity(d);
  }
  for (const DeviceActivity& device : result.devices) {
    HtmlReport::DeviceRow& row = folded.devices[device.base_device];
    row.busy_seconds += device.busy_seconds / result.replicas;
    row.idle_seconds += device.idle_seconds / result.replicas;
    row.peak_memory_bytes = std::max(row.peak_memory_bytes, device.peak_memory_bytes);
  }
  const auto& links = problem.cluster().links;
  folded.links.resize(links.size());
  std::vector<int> copies(links.size(), 0);
  for (size_t l = 0; l < links.size(); ++l)
    folded.links[l].name = links[l].from + "-" + links[l].to;
  for (const LinkActivity& link : result.links) {
    folded.links[link.base_link].bytes += link.bytes;
    folded.links[link.base_link].busy_seconds += link.busy_seconds;
    ++copies[link.base_link];
  }
  for (size_t l = 0; l < links.size(); ++l) {
    if (copies[l] > 1) folded.links[l].busy_seconds /= copies[l];
  }
  return folded;
}

}  // namespace

std::string render_simulation(const SimulationResult& result, const Plan& plan,
                              const PlanningProblem& problem) {
  const Folded folded = fold(result, problem);
  const double end = result.latency_seconds;
  std::string text;
  text += "source                " + result.timeline.source + "\n";
  text +=
      format("plan                  %s, objective %s, %d micro-batch(es)\n", plan.strategy.c_str(),
             std::string(objective_name(plan.objective)).c_str(), plan.microbatches);
  if (!plan.reason.empty())
    text += format("%-22s%s: %s\n", (plan.strategy + " chose").c_str(), plan.chosen.c_str(),
                   plan.reason.c_str());
  if (result.replicas > 1)
    text +=
        format("replicas              %d data-parallel copies (network shared)\n", result.replicas);
  text += format("predicted latency     %s per batch (the planner's estimate: %s)\n",
                 seconds_text(result.latency_seconds).c_str(),
                 seconds_text(plan.predicted.latency_seconds).c_str());
  text += format("predicted throughput  %s samples/s (the planner's estimate: %s)\n",
                 si(result.throughput_samples_per_second).c_str(),
                 si(plan.predicted.throughput_samples_per_second * result.replicas).c_str());
  text += format("simulated events      %llu\n\n", static_cast<unsigned long long>(result.events));
  const std::string mean = result.replicas > 1 ? " (mean)" : "";
  Table devices(
      {"device", "predicted busy" + mean, "idle" + mean, "utilisation", "memory peak", "capacity"});
  // A large cluster's devices that read the same, side by side in the cluster's order, are one
  // row naming the first and the last.
  const bool fold_alike = folded.devices.size() > kEveryDeviceRowUpTo;
  std::vector<std::string> last;
  std::string first_id, last_id;
  size_t alike = 0;
  const auto flush = [&] {
    if (alike == 0) return;
    last[0] = alike == 1 ? first_id
                         : first_id + " .. " + last_id + " (" + std::to_string(alike) + " devices)";
    devices.add_row(last);
    alike = 0;
  };
  for (const HtmlReport::DeviceRow& row : folded.devices) {
    std::vector<std::string> cells = {
        row.id,
        seconds_text(row.busy_seconds),
        seconds_text(row.idle_seconds),
        percent(row.busy_seconds, end),
        human_bytes(row.peak_memory_bytes),
        row.capacity_bytes == kInfinity ? "unknown" : human_bytes(row.capacity_bytes)};
    if (!fold_alike) {
      devices.add_row(cells);
      continue;
    }
    if (alike > 0 && std::equal(cells.begin() + 1, cells.end(), last.begin() + 1)) {
      last_id = row.id;
      ++alike;
      continue;
    }
    flush();
    last = std::move(cells);
    first_id = last_id = row.id;
    alike = 1;
  }
  flush();
  text += devices.render() + "\n";
  Table links({"link", "predicted bytes", "busy" + mean, "utilisation"});
  for (const HtmlReport::LinkRow& row : folded.links) {
    if (row.bytes <= 0) continue;
    links.add_row({row.name, human_bytes(row.bytes), seconds_text(row.busy_seconds),
                   percent(row.busy_seconds, end)});
  }
  text += links.render();
  return text;
}

nlohmann::json simulation_json(const SimulationResult& result, const Plan& plan,
                               const PlanningProblem& problem) {
  const Folded folded = fold(result, problem);
  const auto whole = [](double bytes) { return static_cast<int64_t>(std::llround(bytes)); };
  nlohmann::json json;
  json["source"] = result.timeline.source;
  json["strategy"] = plan.strategy;
  json["chosen"] = plan.chosen.empty() ? plan.strategy : plan.chosen;
  json["reason"] = plan.reason;
  json["objective"] = objective_name(plan.objective);
  json["microbatches"] = plan.microbatches;
  json["replicas"] = result.replicas;
  json["predicted"] = {{"latency_s", result.latency_seconds},
                       {"throughput_samples_per_s", result.throughput_samples_per_second}};
  json["planner_estimate"] = {
      {"latency_s", plan.predicted.latency_seconds},
      {"throughput_samples_per_s", plan.predicted.throughput_samples_per_second}};
  json["events"] = result.events;
  nlohmann::json devices = nlohmann::json::array();
  for (const HtmlReport::DeviceRow& row : folded.devices) {
    devices.push_back({{"id", row.id},
                       {"busy_s", row.busy_seconds},
                       {"idle_s", row.idle_seconds},
                       {"memory_peak_bytes", whole(row.peak_memory_bytes)},
                       {"capacity_bytes", row.capacity_bytes == kInfinity
                                              ? nlohmann::json(nullptr)
                                              : nlohmann::json(whole(row.capacity_bytes))}});
  }
  json["devices"] = devices;
  nlohmann::json links = nlohmann::json::array();
  for (size_t l = 0; l < folded.links.size(); ++l) {
    links.push_back({{"link", l},
                     {"name", folded.links[l].name},
                     {"bytes", whole(folded.links[l].bytes)},
                     {"busy_s", folded.links[l].busy_seconds}});
  }
  json["links"] = links;
  if (result.overflow) {
    json["memory_overflow"] = {{"device", result.overflow->device},
                               {"time_s", result.overflow->time_seconds},
                               {"bytes", whole(result.overflow->bytes)},
                               {"capacity_bytes", whole(result.overflow->capacity_bytes)}};
  }
  return json;
}

HtmlReport simulation_html(const SimulationResult& result, const Plan& plan,
                           const PlanningProblem& problem, const std::string& title) {
  Folded folded = fold(result, problem);
  HtmlReport report;
  report.title = title;
  report.source = result.timeline.source;
  report.facts = {
      {"strategy",
       plan.reason.empty() ? plan.strategy : plan.strategy + ", which chose " + plan.chosen},
      {"predicted latency", seconds_text(result.latency_seconds)},
      {"predicted throughput", si(result.throughput_samples_per_second) + " samples/s"},
      {"micro-batches", std::to_string(plan.microbatches)},
      {"replicas", std::to_string(result.replicas)}};
  if (!plan.reason.empty()) report.facts.push_back({"why " + plan.chosen, plan.reason});
  if (result.overflow) {
    report.facts.push_back({"memory overflow", result.overflow->device + " at " +
                                                   seconds_text(result.overflow->time_seconds) +
                                                   ": " + human_bytes(result.overflow->bytes)});
  }
  report.devices = std::move(folded.devices);
  report.links = std::move(folded.links);
  // Bytes between every pair of devices; a large cluster's matrix only over the devices that
  // sent or received any.
  const int devices = problem.device_count();
  std::vector<int> shown;
  std::vector<bool> moved(devices, devices <= static_cast<int>(kEveryDeviceRowUpTo));
  for (int a = 0; a < devices && a < static_cast<int>(result.device_bytes.size()); ++a) {
    const std::vector<double>& row = result.device_bytes[a];
    for (size_t b = 0; b < row.size(); ++b) {
      if (row[b] > 0) moved[a] = moved[b] = true;
    }
  }
  for (int d = 0; d < devices; ++d) {
    if (moved[d]) shown.push_back(d);
  }
  for (int d : shown) report.device_ids.push_back(problem.cluster().devices[d].id);
  static const std::vector<double> kNothing;
  for (int a : shown) {
    const std::vector<double>& sent =
        a < static_cast<int>(result.device_bytes.size()) ? result.device_bytes[a] : kNothing;
    std::vector<double> row;
    for (int b : shown) row.push_back(sent.empty() ? 0 : sent[b]);
    report.device_bytes.push_back(std::move(row));
  }
  report.objective = objective_name(plan.objective);
  report.timeline = result.timeline;
  return report;
}

}  // namespace tandem
