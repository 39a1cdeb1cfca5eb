#pragma once
#include <functional>
#include <vector>

namespace tandem::cli {

// How many runs `tandem run` times: warm-up by count or by time, then timed runs by count or
// by time (as trtexec's --warmUp/--iterations/--duration).
struct RunSchedule {
  int warmup_runs = 1;
  double warmup_seconds = 0;  // > 0: warm up for this long instead of warmup_runs
  int iterations = 10;
  double duration_seconds = 0;  // > 0: time runs for this long instead of `iterations`
  bool progress = false;        // show progress on stderr once the runs take seconds
};

struct TimedRuns {
  int warmup_runs = 0;
  std::vector<double> latencies_seconds;
  double duration_seconds = 0;  // wall time of the timed runs
};

// Runs `run_once(timed)` as the schedule says; it returns the run's latency in seconds.
TimedRuns time_runs(const RunSchedule& schedule, const std::function<double(bool timed)>& run_once);

}  // namespace tandem::cli
