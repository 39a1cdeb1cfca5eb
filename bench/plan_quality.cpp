// Plan quality: every zoo model (zoo/manifest.json, at its default dims, fused as `tandem run`
// runs it) on every example cluster (examples/clusters/*.yaml), for latency and for throughput
// (2 micro-batches): each strategy's predicted figure, the lower bound, and auto's efficiency
// (bound / predicted latency, predicted throughput / bound). Prints Markdown tables and auto's
// mean efficiency per objective; exits 1 when auto is worse than the best single device
// anywhere.
//
// Usage: plan_quality [--zoo DIR] [--clusters DIR]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "ir/error.h"
#include "ir/fuse.h"
#include "onnx/importer.h"
#include "plan/strategies.h"

namespace {

using namespace tandem;

struct Model {
  std::string name;
  Graph graph;
  int64_t batch = 1;
};

std::vector<Model> load_zoo(const std::filesystem::path& zoo) {
  std::ifstream file(zoo / "manifest.json");
  if (!file) throw InputError((zoo / "manifest.json").string(), "cannot read");
  const nlohmann::json manifest = nlohmann::json::parse(file);
  std::vector<Model> models;
  for (const auto& entry : manifest) {
    ImportOptions options;
    const nlohmann::json dims = entry.value("dims", nlohmann::json::object());
    for (auto dim = dims.begin(); dim != dims.end(); ++dim)
      options.dims[dim.key()] = dim.value().get<int64_t>();
    Model model;
    model.name = entry.at("name").get<std::string>();
    model.graph = import_onnx((zoo / entry.at("path").get<std::string>()).string(), options).graph;
    fuse_for_inference(model.graph);
    model.batch = options.dims.count("batch") ? options.dims["batch"] : 1;
    models.push_back(std::move(model));
  }
  return models;
}

std::vector<std::filesystem::path> cluster_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The figure a strategy is judged by, in the table's unit: ms for latency, samples/s for
// throughput.
double figure(const Plan& plan, Objective objective) {
  return objective == Objective::kLatency ? plan.predicted.latency_seconds * 1e3
                                          : plan.predicted.throughput_samples_per_second;
}

std::string format(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value >= 100 ? "%.0f" : value >= 1 ? "%.3g" : "%.3g", value);
  return text;
}

}  // namespace

int main(int argc, char** argv) try {
  std::filesystem::path zoo = "zoo", clusters = "examples/clusters";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--zoo") {
      zoo = argv[i + 1];
    } else if (flag == "--clusters") {
      clusters = argv[i + 1];
    } else {
      throw InputError(flag, "unknown argument (usage: plan_quality [--zoo DIR] [--clusters DIR])");
    }
  }
  const std::vector<Model> models = load_zoo(zoo);
  const std::vector<std::filesystem::path> files = cluster_files(clusters);
  bool auto_ever_worse = false;
  for (Objective objective : {Objective::kLatency, Objective::kThroughput}) {
    const bool latency = objective == Objective::kLatency;
    std::printf("\n%s (%s); best single = the fastest device that holds the model\n\n",
                latency ? "Latency" : "Throughput, 2 micro-batches",
                latency ? "ms, lower is better" : "samples/s, higher is better");
    std::printf(
        "| model | cluster | bound | best single | greedy | heft | pipeline | "
        "data-parallel | auto | auto efficiency |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double efficiency_sum = 0;
    int rows = 0;
    for (const std::filesystem::path& file : files) {
      const Cluster cluster = load_cluster(file.string());
      const CostModel cost(cluster);
      for (const Model& model : models) {
        PlanOptions options;
        options.objective = objective;
        options.batch = model.batch;
        options.microbatches = latency ? 1 : 2;
        const PlanningProblem problem(model.graph, cluster, cost, options);
        auto run = [&](const std::string& name) {
          return make_strategy(name, cost.cluster())->plan(problem);
        };
        std::string cells;
        std::optional<Plan> best_single;
        for (const DeviceSpec& device : cost.cluster().devices) {
          std::optional<Plan> single = run("single:" + device.id);
          if (single &&
              (!best_single ||
               (latency ? figure(*single, objective) < figure(*best_single, objective)
                        : figure(*single, objective) > figure(*best_single, objective)))) {
            best_single = std::move(single);
          }
        }
        const std::optional<Plan> automatic = run("auto");
        const double bound = latency ? problem.bound() * 1e3 : problem.bound();
        std::printf("| %s | %s | %s | %s |", model.name.c_str(), file.stem().c_str(),
                    format(bound).c_str(),
                    best_single ? format(figure(*best_single, objective)).c_str() : "-");
        for (const char* name : {"greedy", "heft", "pipeline", "data-parallel"}) {
          const std::optional<Plan> plan = run(name);
          std::printf(" %s |", plan ? format(figure(*plan, objective)).c_str() : "-");
        }
        if (!automatic) {
          std::printf(" - | - |\n");
          continue;
        }
        std::printf(" %s | %.3f |\n", format(figure(*automatic, objective)).c_str(),
                    automatic->efficiency);
        efficiency_sum += automatic->efficiency;
        ++rows;
        if (best_single &&
            (latency
                 ? figure(*automatic, objective) > figure(*best_single, objective) * (1 + 1e-9)
                 : figure(*automatic, objective) < figure(*best_single, objective) * (1 - 1e-9))) {
          std::fprintf(stderr, "auto is worse than the best single device: %s on %s\n",
                       model.name.c_str(), file.stem().c_str());
          auto_ever_worse = true;
        }
      }
    }
    std::printf("\nauto's mean efficiency (%s): %.3f over %d plans\n",
                latency ? "latency" : "throughput", rows ? efficiency_sum / rows : 0.0, rows);
  }
  return auto_ever_worse ? 1 : 0;
} catch (const InputError& e) {
  std::fprintf(stderr, "plan_quality: error: %s: %s\n", e.subject().c_str(), e.what());
  return 2;
}
