#pragma once
#include <string>

#include "backends/device.h"
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

// What a plan's run on `device` (an accelerator's, a PJRT plugin's) costs beyond its program:
// a one-segment plan of one small Add, fed from host memory and its result brought back as
// `tandem run` does, less the same program run with its inputs already on the device (the
// program step a profile records): the workers' wake-ups, the run's events. And what each
// input moved in costs (3 Adds fed from 4 inputs against the same fed from one read 4 times):
// the cost model prices every copy in or out with it (the host link's latency), so it is left
// out of the run's cost for the run's own 3 copies.
struct DeviceRunCost {
  double seconds = 0;
  std::string method;
  double copy_latency = 0;
  std::string copy_method;
};
DeviceRunCost measure_device_run_cost(Device& device, const Repetition& repetition,
                                      const std::string& note);

}  // namespace tandem::calibrate
