#include "distributed/rank_timeline.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tandem::distributed {

std::string rank_timeline_text(const RankTimeline& rank_timeline) {
  const Timeline& timeline = rank_timeline.timeline;
  nlohmann::json tracks = nlohmann::json::array();
  for (const TimelineTrack& track : timeline.tracks) tracks.push_back({track.name, track.group});
  nlohmann::json spans = nlohmann::json::array();
  for (const TimelineSpan& span : timeline.spans) {
    spans.push_back({span.track, span.name, span.category, span.start_seconds,
                     span.duration_seconds, span.microbatch, span.bytes, span.iteration});
  }
  return nlohmann::json{
      {"origin_seconds", rank_timeline.origin_seconds}, {"tracks", tracks}, {"spans", spans}}
      .dump();
}

RankTimeline rank_timeline_from_text(const std::string& text) {
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    RankTimeline result;
    result.origin_seconds = json.at("origin_seconds").get<double>();
    for (const auto& track : json.at("tracks"))
      result.timeline.tracks.push_back(
          {track.at(0).get<std::string>(), track.at(1).get<std::string>()});
    for (const auto& span : json.at("spans")) {
      result.timeline.spans.push_back({span.at(0).get<int>(), span.at(1).get<std::string>(),
                                       span.at(2).get<std::string>(), span.at(3).get<double>(),
                                       span.at(4).get<double>(), span.at(5).get<int>(),
                                       span.at(6).get<double>(), span.at(7).get<int>()});
    }
    return result;
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(std::string("a rank's timeline is malformed: ") + error.what());
  }
}

Timeline merge_rank_timelines(const std::vector<RankTimeline>& ranks,
                              const std::vector<double>& clock_offsets,
                              const std::vector<int>& rank_of_device,
                              const std::vector<std::string>& devices) {
  const int device_count = static_cast<int>(devices.size());
  Timeline merged;
  merged.source = "measured";
  merged.devices = devices;
  for (const std::string& device : devices) {
    merged.tracks.push_back({device + " compute", device});
    merged.tracks.push_back({device + " copy", device});
  }
  const int iterations_track = device_count * 2;
  merged.tracks.push_back({"iterations", "run"});
  if (ranks.empty()) return merged;
  // Rank 0's time 0 is the merged timeline's; a rank's span moves by where its own time 0 lies
  // on rank 0's clock.
  const double origin = ranks[0].origin_seconds;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankTimeline& rank = ranks[r];
    const double shift = rank.origin_seconds - clock_offsets[r] - origin;
    int network_track = -1;
    for (const TimelineSpan& span : rank.timeline.spans) {
      int track = -1;
      if (span.track < iterations_track) {
        if (rank_of_device[span.track / 2] == static_cast<int>(r)) track = span.track;
      } else if (span.track == iterations_track) {
        if (r == 0) track = iterations_track;
      } else if (span.track < static_cast<int>(rank.timeline.tracks.size())) {
        if (network_track < 0)
          network_track = merged.add_track(rank.timeline.tracks[span.track].name, "network");
        track = network_track;
      }
      if (track < 0) continue;
      TimelineSpan moved = span;
      moved.track = track;
      moved.start_seconds += shift;
      merged.spans.push_back(std::move(moved));
    }
  }
  return merged;
}

}  // namespace tandem::distributed
