#pragma once
#include <string>

#include "calibrate/microbench.h"

namespace tandem::calibrate {

// What the multi-device runtime (PlanExecutor) costs on this host beyond its segments' work,
// measured on chains of tiny ops (whose kernels cost next to nothing), so that what remains is
// the runtime's own.
struct RuntimeCosts {
  // Seconds per run: the chain as one segment, less the chain run alone, on a CPU device as
  // the calibrated one is made: `threads` cores of its own, or every core unpinned (as a
  // cluster device without `cores:`) when `threads` covers them all.
  double run_overhead = 0;
  std::string run_method;
  // Seconds per hop: half of a tensor's hand-off between the workers of two CPU devices of one
  // core each (as `cores: 1` makes them; where devices are split, they are split so).
  double handoff_latency = 0;
  std::string handoff_method;
};

RuntimeCosts measure_runtime_costs(int threads, const Repetition& repetition,
                                   const std::string& note);

}  // namespace tandem::calibrate
