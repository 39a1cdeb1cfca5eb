#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/problem.h"
#include "report/timeline.h"

namespace tandem {

// A discrete-event simulation of a plan on its problem's cluster:
//   - every device has a compute queue that runs its nodes in the plan's order, one at a time;
//   - GPUs and TPUs copy with DMA engines, so their transfers overlap their compute; a CPU
//     device copies with its own cores: its compute queue is held until a transfer it sends
//     has crossed its first hop;
//   - a transfer crosses its path hop by hop (store and forward, host-staged paths included):
//     each hop its latency, then its bytes at the link's bandwidth in that direction, shared
//     fairly among the transfers crossing that link in that direction at the same moment;
//     hops joined at a switch are crossed at once (cut through): their latencies, then the
//     bytes on each of their links together, the stretch done when the last link has carried
//     them (so the slowest or most shared link sets its time);
//   - pipeline plans: M micro-batches (batch / M samples each) flow through the stages; a
//     device runs the earliest micro-batch whose next node is ready (fill and drain emerge);
//   - data-parallel plans: each device with a share runs the whole graph on its share;
//   - memory of every device over time: the weights its nodes read from the start, each output
//     from its node's start until its last reader here has finished and its copies have left,
//     each received copy from the transfer's start until its last reader has finished; graph
//     outputs stay. Going over a device's capacity stops the simulation with a MemoryOverflow.
struct SimulationOptions {
  // Data-parallel copies of the whole plan, each on its own copy of the cluster's devices and
  // of its links within hosts; network links (between hosts) are one fabric all replicas share.
  int replicas = 1;
  bool record_timeline = false;  // spans and memory samples; off, memory stays O(in flight)
};

struct DeviceActivity {
  std::string id;           // "gpu0"; "r3/gpu0" for replica 3 when replicated
  int base_device = 0;      // index in the plan's cluster
  double busy_seconds = 0;  // compute queue occupied (a CPU device: its copies too)
  double idle_seconds = 0;  // the rest of the run
  double peak_memory_bytes = 0;
  double capacity_bytes = 0;  // +infinity when unknown
};

struct LinkActivity {
  std::string name;  // "gpu0-h0"; "r3/gpu0-h0" for a replica's copy
  int base_link = 0;
  double bytes = 0;
  double busy_seconds = 0;  // time with at least one transfer on it, either direction
};

struct MemoryOverflow {
  std::string device;
  double time_seconds = 0;
  double bytes = 0;  // in use when it overflowed
  double capacity_bytes = 0;
};

struct SimulationResult {
  double latency_seconds = 0;  // one batch (per replica, all replicas together), end to end
  // Samples per second across replicas: for pipelines, the steady state (the spacing of the
  // last micro-batches' completions), otherwise batches / latency.
  double throughput_samples_per_second = 0;
  int replicas = 1;
  std::vector<DeviceActivity> devices;  // replica r's device d at r * devices + d
  std::vector<LinkActivity> links;      // every link used or not; shared links once
  // Bytes sent from device a to device b of the plan's cluster, summed over replicas:
  // device_bytes[a][b]. The row of a device that sent nothing is empty (a cluster of thousands
  // of devices would otherwise hold millions of zeros).
  std::vector<std::vector<double>> device_bytes;
  std::optional<MemoryOverflow> overflow;  // set when a device ran out: figures up to then
  uint64_t events = 0;                     // events processed
  size_t peak_events_pending = 0;          // the event queue's largest size
  Timeline timeline;                       // tracks always; spans and memory when recorded
};

// Throws InputError when the plan does not fit the problem (placement, order, batch shares).
SimulationResult simulate(const PlanningProblem& problem, const Plan& plan,
                          const SimulationOptions& options = {});

}  // namespace tandem
