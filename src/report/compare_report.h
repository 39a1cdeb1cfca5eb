#pragma once
// What `tandem compare` shows: one model planned on several clusters, one column each, so that
// a capacity question ("what does the second cluster buy us?") has its answer side by side.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/problem.h"

namespace tandem {

// One cluster's column: its best plan with the simulator's figures, or why it has none.
struct CompareColumn {
  std::string cluster;         // the file, as given
  std::string why_not;         // why no strategy found a plan; empty when one did
  bool whole_machine = false;  // planned on the cluster's whole-machine view (devices/cluster.h)
  Plan plan;                   // the evaluator's figures, the bound, efficiency, speed-up
  LowerBounds bounds;
  std::string best_single_device;  // empty when no single device runs and holds the model
  double latency_seconds = 0;      // simulated
  double throughput_samples_per_second = 0;
  std::string out_of_memory;  // the device the simulation ran out of memory on, if any
  // One device's part, as the simulation saw it (the report sits below the simulator, so the
  // command copies these figures out of its result).
  struct Device {
    std::string id;
    double busy_seconds = 0;
    double peak_memory_bytes = 0;
    double capacity_bytes = kInfinity;  // +infinity when unknown
  };
  std::vector<Device> devices;  // in the cluster's order
  bool feasible() const { return why_not.empty(); }
};

struct CompareReport {
  std::string model;
  std::string strategy;  // as asked (--strategy)
  Objective objective = Objective::kLatency;
  int64_t batch = 1;
  int microbatches = 1;  // as asked
  bool fused = true;
  std::vector<CompareColumn> columns;  // the first is what the others are measured against
};

std::string render_compare_report(const CompareReport& report);
// docs/JSON.md, "tandem compare --json".
nlohmann::json compare_report_json(const CompareReport& report);

}  // namespace tandem
