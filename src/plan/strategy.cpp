#include "plan/strategy.h"

#include "ir/error.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

// ONNX Runtime's habit: accelerators before the host, GPUs first, the cluster's order within
// a kind.
std::vector<int> accelerators_first(const Cluster& cluster) {
  std::vector<int> priority;
  for (DeviceKind kind : {DeviceKind::kGpu, DeviceKind::kTpu, DeviceKind::kCpu}) {
    for (size_t d = 0; d < cluster.devices.size(); ++d) {
      if (cluster.devices[d].kind == kind) priority.push_back(static_cast<int>(d));
    }
  }
  return priority;
}

}  // namespace

std::unique_ptr<Strategy> make_strategy(const std::string& name, const Cluster& cluster) {
  constexpr std::string_view kSingle = "single:";
  if (name.starts_with(kSingle)) {
    const std::string id = name.substr(kSingle.size());
    const int device = cluster.device_index(id);
    if (device < 0) {
      std::string ids;
      for (const DeviceSpec& spec : cluster.devices) ids += (ids.empty() ? "" : ", ") + spec.id;
      throw InputError("--strategy " + name,
                       "no device '" + id + "' in the cluster (devices: " + ids + ")");
    }
    return make_single_strategy(device, id);
  }
  if (name == "greedy") return make_greedy_strategy(accelerators_first(cluster));
  if (name == "heft") return make_heft_strategy();
  if (name == "pipeline") return make_pipeline_strategy();
  if (name == "data-parallel") return make_data_parallel_strategy();
  if (name == "auto") return make_auto_strategy();
  throw InputError("--strategy " + name,
                   "unknown strategy (choose single:<device>, greedy, heft, pipeline, "
                   "data-parallel or auto)");
}

namespace {

std::vector<std::unique_ptr<Strategy>> baselines(const Cluster& cluster,
                                                 const PlanningProblem* problem) {
  const bool by_class = problem && problem->device_count() > kEverySingleDeviceUpTo;
  std::vector<std::unique_ptr<Strategy>> strategies;
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    if (by_class && problem->device_class(static_cast<int>(d)) != static_cast<int>(d)) continue;
    strategies.push_back(make_single_strategy(static_cast<int>(d), cluster.devices[d].id));
  }
  strategies.push_back(make_greedy_strategy(accelerators_first(cluster)));
  strategies.push_back(make_heft_strategy());
  strategies.push_back(make_pipeline_strategy());
  strategies.push_back(make_data_parallel_strategy());
  return strategies;
}

}  // namespace

std::vector<std::unique_ptr<Strategy>> baseline_strategies(const Cluster& cluster) {
  return baselines(cluster, nullptr);
}

std::vector<std::unique_ptr<Strategy>> baseline_strategies(const PlanningProblem& problem) {
  return baselines(problem.cluster(), &problem);
}

}  // namespace tandem
