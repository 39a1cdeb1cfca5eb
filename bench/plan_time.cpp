// Planning time of every strategy on synthetic DAGs (src/plan/synthetic.h): layered,
// transformer-like and random shapes of 1k, 10k and 100k nodes on clusters of 4, 16 and 64
// mixed GPU/TPU/CPU devices from the presets. Objective throughput, 8 micro-batches, batch 8.
// Prints a Markdown table of seconds per strategy (median of --repeat runs; "-" when the
// strategy returns no plan, the time still shown).
//
// Usage: plan_time [--nodes 1000,10000,100000] [--devices 4,16,64]
//                  [--shapes layered,transformer,random] [--repeat 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "plan/strategies.h"
#include "plan/synthetic.h"

namespace {

using namespace tandem;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) items.push_back(item);
  return items;
}

struct Arguments {
  std::vector<int> nodes = {1000, 10000, 100000};
  std::vector<int> devices = {4, 16, 64};
  std::vector<DagShape> shapes = {DagShape::kLayered, DagShape::kTransformer, DagShape::kRandom};
  int repeat = 1;
};

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  auto integers = [](const std::string& text) {
    std::vector<int> values;
    for (const std::string& item : split_list(text)) values.push_back(std::stoi(item));
    return values;
  };
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--nodes") {
      arguments.nodes = integers(value);
    } else if (flag == "--devices") {
      arguments.devices = integers(value);
    } else if (flag == "--repeat") {
      arguments.repeat = std::max(1, std::stoi(value));
    } else if (flag == "--shapes") {
      arguments.shapes.clear();
      for (const std::string& name : split_list(value)) {
        bool known = false;
        for (DagShape shape :
             {DagShape::kChain, DagShape::kLayered, DagShape::kTransformer, DagShape::kRandom}) {
          if (dag_shape_name(shape) == name) arguments.shapes.push_back(shape), known = true;
        }
        if (!known) throw InputError("--shapes " + name, "unknown shape");
      }
    } else {
      throw InputError(flag, "unknown argument");
    }
  }
  return arguments;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  const Arguments arguments = parse(argc, argv);
  const std::vector<std::string> names = {"single",   "greedy",        "heft",
                                          "pipeline", "data-parallel", "auto"};
  std::printf("| shape | nodes | devices | build s |");
  for (const std::string& name : names) std::printf(" %s s |", name.c_str());
  std::printf("\n|---|---:|---:|---:|");
  for (size_t i = 0; i < names.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (DagShape shape : arguments.shapes) {
    for (int nodes : arguments.nodes) {
      for (int devices : arguments.devices) {
        SyntheticSpec spec;
        spec.shape = shape;
        spec.nodes = nodes;
        spec.devices = devices;
        spec.options.objective = Objective::kThroughput;
        spec.options.microbatches = 8;
        spec.options.batch = 8;
        const auto build_start = std::chrono::steady_clock::now();
        const SyntheticProblem synthetic = make_synthetic_problem(spec);
        const double build = seconds_since(build_start);
        std::printf("| %s | %d | %d | %.3f |", std::string(dag_shape_name(shape)).c_str(), nodes,
                    devices, build);
        for (const std::string& name : names) {
          // single: the first device (an H100 in every synthetic cluster).
          const std::string strategy_name = name == "single" ? "single:gpu0" : name;
          const auto strategy = make_strategy(strategy_name, synthetic.problem->cluster());
          std::vector<double> times;
          bool planned = false;
          for (int r = 0; r < arguments.repeat; ++r) {
            const auto start = std::chrono::steady_clock::now();
            planned = strategy->plan(*synthetic.problem).has_value();
            times.push_back(seconds_since(start));
          }
          std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
          std::printf(" %.3f%s |", times[times.size() / 2], planned ? "" : " (-)");
          std::fflush(stdout);
        }
        std::printf("\n");
      }
    }
  }
  return 0;
} catch (const InputError& e) {
  std::fprintf(stderr, "plan_time: error: %s: %s\n", e.subject().c_str(), e.what());
  return 2;
}
