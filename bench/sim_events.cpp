// Simulator speed (docs/BENCHMARKS.md, "Simulator"): events per second, and the time to simulate
// 1,000 data-parallel replicas of a 1,000-op plan (about a million events). The plan is HEFT's
// on a synthetic transformer-like DAG (src/plan/synthetic.h) over the first 4 devices of the
// synthetic cluster (an H100, a TPU v5e, an A100, a CPU core in one host), so that it has
// transfers as well as compute. Also reports the event queue's peak and the process's peak RSS:
// memory must follow the events in flight, not the events simulated.
//
// Usage: sim_events [--nodes 1000] [--devices 4] [--replicas 1,10,100,1000] [--repeat 3]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "plan/strategy.h"
#include "plan/synthetic.h"
#include "sim/simulator.h"

namespace {

using namespace tandem;

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1000, devices = 4, repeat = 3;
  std::string strategy = "pipeline";
  std::vector<int> replicas = {1, 10, 100, 1000};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--nodes") {
      nodes = std::stoi(value);
    } else if (flag == "--devices") {
      devices = std::stoi(value);
    } else if (flag == "--strategy") {
      strategy = value;
    } else if (flag == "--repeat") {
      repeat = std::stoi(value);
    } else if (flag == "--replicas") {
      replicas.clear();
      std::stringstream stream(value);
      for (std::string item; std::getline(stream, item, ',');) replicas.push_back(std::stoi(item));
    } else {
      std::fprintf(stderr, "sim_events: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  SyntheticSpec spec;
  spec.shape = DagShape::kTransformer;
  spec.nodes = nodes;
  spec.devices = devices;
  const SyntheticProblem synthetic = make_synthetic_problem(spec);
  const PlanningProblem& problem = *synthetic.problem;
  const std::optional<Plan> plan = make_strategy(strategy, problem.cluster())->plan(problem);
  if (!plan) {
    std::fprintf(stderr, "sim_events: %s found no plan\n", strategy.c_str());
    return 1;
  }
  std::printf("plan: %s, %d nodes, %d devices, %zu transfers; peak RSS before: %.1f MiB\n\n",
              strategy.c_str(), problem.node_count(), problem.device_count(),
              plan->transfers.size(), peak_rss_mib());
  std::printf(
      "| replicas | events | seconds (median of %d) | events/s | peak events pending | "
      "peak RSS MiB |\n|---:|---:|---:|---:|---:|---:|\n",
      repeat);
  for (int count : replicas) {
    SimulationOptions options;
    options.replicas = count;
    std::vector<double> seconds;
    SimulationResult result;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      result = simulate(problem, *plan, options);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("| %d | %llu | %.4f | %.3g | %zu | %.1f |\n", count,
                static_cast<unsigned long long>(result.events), median,
                static_cast<double>(result.events) / median, result.peak_events_pending,
                peak_rss_mib());
  }
  return 0;
}
