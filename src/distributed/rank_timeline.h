#pragma once
#include <string>
#include <vector>

#include "report/timeline.h"

namespace tandem::distributed {

// A rank's measured timeline as it travels to rank 0: its spans, with their times counted
// from `origin_seconds` on that rank's clock.
struct RankTimeline {
  Timeline timeline;
  double origin_seconds = 0;  // the rank's steady clock at its timeline's time 0
};
std::string rank_timeline_text(const RankTimeline& rank_timeline);
// Throws std::runtime_error when the text is not one rank_timeline_text wrote.
RankTimeline rank_timeline_from_text(const std::string& text);

// One timeline of every rank's (by rank), on rank 0's clock: `clock_offsets[r]` is rank r's
// clock less rank 0's. Each device's tracks come from the rank that ran it
// (`rank_of_device`), the run's iterations from rank 0, and each rank's network track is kept
// ("network into rank r"). `devices` name the cluster's devices.
Timeline merge_rank_timelines(const std::vector<RankTimeline>& ranks,
                              const std::vector<double>& clock_offsets,
                              const std::vector<int>& rank_of_device,
                              const std::vector<std::string>& devices);

}  // namespace tandem::distributed
