#include "cli/timed_runs.h"

#include <chrono>
#include <cstdio>

namespace tandem::cli {
namespace {

// A time-based schedule stops here whatever the clock says: a run of a few nanoseconds must not
// make --duration collect an unbounded sample list.
constexpr int kMaxTimedRuns = 1000000;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TimedRuns time_runs(const RunSchedule& schedule,
                    const std::function<double(bool timed)>& run_once) {
  TimedRuns result;
  const auto started = std::chrono::steady_clock::now();
  bool shown = false;
  const auto show = [&](const char* what) {
    if (!schedule.progress || seconds_since(started) < 2) return;
    std::fprintf(stderr, "\r%s", what);
    shown = true;
  };
  char line[96];
  const auto warmup_start = std::chrono::steady_clock::now();
  while (schedule.warmup_seconds > 0 ? seconds_since(warmup_start) < schedule.warmup_seconds &&
                                           result.warmup_runs < kMaxTimedRuns
                                     : result.warmup_runs < schedule.warmup_runs) {
    run_once(false);
    ++result.warmup_runs;
    std::snprintf(line, sizeof line, "warm-up run %d   ", result.warmup_runs);
    show(line);
  }
  const auto timed_start = std::chrono::steady_clock::now();
  while (true) {
    const size_t done = result.latencies_seconds.size();
    const bool more = schedule.duration_seconds > 0
                          ? done == 0 || (seconds_since(timed_start) < schedule.duration_seconds &&
                                          done < static_cast<size_t>(kMaxTimedRuns))
                          : done < static_cast<size_t>(schedule.iterations);
    if (!more) break;
    result.latencies_seconds.push_back(run_once(true));
    if (schedule.duration_seconds > 0) {
      std::snprintf(line, sizeof line, "run %zu (%.1f of %.1f s)   ", done + 1,
                    seconds_since(timed_start), schedule.duration_seconds);
    } else {
      std::snprintf(line, sizeof line, "run %zu/%d   ", done + 1, schedule.iterations);
    }
    show(line);
  }
  result.duration_seconds = seconds_since(timed_start);
  if (shown) std::fprintf(stderr, "\n");
  return result;
}

}  // namespace tandem::cli
