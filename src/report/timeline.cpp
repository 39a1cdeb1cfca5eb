#include "report/timeline.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/error.h"

namespace tandem {

int Timeline::add_track(std::string name, std::string group) {
  tracks.push_back({std::move(name), std::move(group)});
  return static_cast<int>(tracks.size()) - 1;
}

double Timeline::end_seconds() const {
  double end = 0;
  for (const TimelineSpan& span : spans)
    end = std::max(end, span.start_seconds + span.duration_seconds);
  for (const MemorySample& sample : memory) end = std::max(end, sample.time_seconds);
  return end;
}

std::string chrome_trace_json(const Timeline& timeline) {
  using nlohmann::json;
  json events = json::array();
  std::map<std::string, int> process_of_group;
  for (const TimelineTrack& track : timeline.tracks) {
    process_of_group.emplace(track.group, static_cast<int>(process_of_group.size()) + 1);
  }
  for (const auto& [group, pid] : process_of_group) {
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", group}}}});
  }
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const TimelineTrack& track = timeline.tracks[t];
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", process_of_group[track.group]},
                      {"tid", static_cast<int>(t) + 1},
                      {"args", {{"name", track.name}}}});
  }
  for (const TimelineSpan& span : timeline.spans) {
    const TimelineTrack& track = timeline.tracks.at(static_cast<size_t>(span.track));
    json args = json::object();
    if (span.microbatch >= 0) args["microbatch"] = span.microbatch;
    if (span.bytes > 0) args["bytes"] = span.bytes;
    if (span.iteration >= 0) args["iteration"] = span.iteration;
    events.push_back({{"ph", "X"},
                      {"name", span.name},
                      {"cat", span.category},
                      {"pid", process_of_group[track.group]},
                      {"tid", span.track + 1},
                      {"ts", span.start_seconds * 1e6},
                      {"dur", span.duration_seconds * 1e6},
                      {"args", args}});
  }
  for (const MemorySample& sample : timeline.memory) {
    const std::string& device = timeline.devices.at(static_cast<size_t>(sample.device));
    const auto group = process_of_group.find(device);
    events.push_back({{"ph", "C"},
                      {"name", "memory " + device},
                      {"pid", group == process_of_group.end() ? 0 : group->second},
                      {"ts", sample.time_seconds * 1e6},
                      {"args", {{"bytes", sample.bytes}}}});
  }
  return json{{"traceEvents", events},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"source", timeline.source}}}}
      .dump();
}

void write_chrome_trace(const std::string& path, const Timeline& timeline) {
  std::ofstream file(path);
  if (!file) throw InputError(path, "cannot write the trace");
  file << chrome_trace_json(timeline) << '\n';
  if (!file) throw InputError(path, "cannot write the trace");
}

}  // namespace tandem
