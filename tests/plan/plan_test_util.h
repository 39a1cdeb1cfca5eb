#pragma once
#include <memory>
#include <vector>

#include "cost/cost_model.h"
#include "cost/test_cluster.h"
#include "plan/problem.h"

namespace tandem::testing {

// Round-figure clusters: `count` devices in one host, each on its own link to the host of
// `bandwidth` bytes/s and `latency` s, so a transfer between two devices costs
// 2 * latency + 2 * bytes / bandwidth. Memory and price per device as given (0 = unknown).
inline Cluster flat_cluster(int count, double bandwidth = 1e9, double latency = 0,
                            double memory = 0, double price = 0) {
  Cluster cluster;
  cluster.hosts = {host("h0")};
  for (int d = 0; d < count; ++d) {
    DeviceSpec spec = gpu("d" + std::to_string(d), "h0");
    if (memory > 0) spec.figures.memory_bytes = figure(memory);
    if (price > 0) spec.figures.price_per_hour = figure(price);
    spec.figures.launch_overhead = {};
    cluster.devices.push_back(spec);
    cluster.links.push_back(link(spec.id, "h0", LinkKind::kPcie, bandwidth, bandwidth, latency));
  }
  return cluster;
}

// A synthetic problem with its cost model kept alive beside it.
struct TestProblem {
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<PlanningProblem> problem;
  const PlanningProblem& operator*() const { return *problem; }
  const PlanningProblem* operator->() const { return problem.get(); }
};

inline TestProblem make_problem(const Cluster& cluster, std::vector<std::vector<double>> seconds,
                                std::vector<std::vector<std::pair<int, double>>> successors,
                                std::vector<double> weight_bytes = {},
                                std::vector<double> output_bytes = {}, PlanOptions options = {}) {
  const size_t nodes = seconds.size();
  if (weight_bytes.empty()) weight_bytes.assign(nodes, 0);
  if (output_bytes.empty()) {
    output_bytes.assign(nodes, 0);
    for (size_t n = 0; n < nodes; ++n) {
      for (const auto& [successor, bytes] : successors[n])
        output_bytes[n] = std::max(output_bytes[n], bytes);
    }
  }
  TestProblem result;
  result.cost = std::make_unique<CostModel>(cluster);
  result.problem = std::make_unique<PlanningProblem>(cluster, *result.cost, std::move(seconds),
                                                     std::move(successors), std::move(weight_bytes),
                                                     std::move(output_bytes), std::move(options));
  return result;
}

}  // namespace tandem::testing
