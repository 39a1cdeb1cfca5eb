// The multi-device runtime's own cost and its pipelining, measured on this machine:
// 1. dispatch overhead per segment and per transfer: a chain of K tiny Relu nodes run as K
//    segments on one device, then alternating between two devices (K-1 transfers), against
//    the same chain run by one GraphExecutor (no segments);
// 2. a 2-device pipeline plan (cpu-split.yaml, micro-batches) of a zoo model against the
//    single-device run of the same model on the same cores, with the planner's predictions.
// Prints Markdown. Usage: runtime_overhead [--model tv_resnet18] [--batch 8]
//                                          [--microbatches 4] [--repeat 20]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_device.h"
#include "cost/cost_model.h"
#include "ir/fuse.h"
#include "onnx/batch_split.h"
#include "onnx/importer.h"
#include "plan/evaluate.h"
#include "plan/strategies.h"
#include "runtime/executor.h"
#include "runtime/plan_executor.h"
#include "util/cpu_affinity.h"
#include "util/random_tensor.h"

namespace {

using namespace tandem;
using Clock = std::chrono::steady_clock;

template <typename F>
double median_seconds(int repeat, F body) {
  body();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const auto start = Clock::now();
    body();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Graph relu_chain(int length) {
  Graph graph;
  graph.opset = 13;
  int previous = graph.add_value("x", {DType::kFloat32, {1}});
  graph.inputs = {previous};
  for (int i = 0; i < length; ++i) {
    const int next = graph.add_value("v" + std::to_string(i), {DType::kFloat32, {1}});
    Node node;
    node.name = "relu" + std::to_string(i);
    node.op_type = "Relu";
    node.inputs = {previous};
    node.outputs = {next};
    graph.nodes.push_back(node);
    previous = next;
  }
  graph.outputs = {previous};
  graph.sort_topologically();
  return graph;
}

// One segment per node, on device `device_of(n)`.
Plan per_node_plan(int length, int (*device_of)(int)) {
  Plan plan;
  for (int n = 0; n < length; ++n) {
    plan.device_of_node.push_back(device_of(n));
    plan.order.push_back(n);
    plan.segments.push_back({device_of(n), {n}});
  }
  return plan;
}

void overhead(const std::vector<cpu::CpuDevice*>& devices, int repeat) {
  constexpr int kLength = 200;
  const Graph chain = relu_chain(kLength);
  const std::vector<Tensor> input = {Tensor::zeros(DType::kFloat32, {1})};
  std::vector<Device*> pointers(devices.begin(), devices.end());
  PlanExecutor::Options options;

  GraphExecutor plain(chain, *devices[0]);
  const double plain_seconds = median_seconds(repeat, [&] { plain.run(input); });
  const Plan one_segment = [&] {
    Plan plan = per_node_plan(kLength, [](int) { return 0; });
    plan.segments = {{0, {}}};
    for (int n = 0; n < kLength; ++n) plan.segments[0].nodes.push_back(n);
    return plan;
  }();
  PlanExecutor whole(chain, one_segment, pointers, {}, options);
  const double whole_seconds = median_seconds(repeat, [&] { whole.run(input); });
  PlanExecutor same(chain, per_node_plan(kLength, [](int) { return 0; }), pointers, {}, options);
  const double same_seconds = median_seconds(repeat, [&] { same.run(input); });
  PlanExecutor alternating(chain, per_node_plan(kLength, [](int n) { return n % 2; }), pointers, {},
                           options);
  const double alternating_seconds = median_seconds(repeat, [&] { alternating.run(input); });

  const double per_segment = (same_seconds - whole_seconds) / (kLength - 1);
  const double per_transfer = (alternating_seconds - same_seconds) / (kLength - 1);
  std::printf("| chain of %d Relu on 1 float | median of %d runs |\n|---|---:|\n", kLength, repeat);
  std::printf("| one GraphExecutor, no segments | %.1f us |\n", plain_seconds * 1e6);
  std::printf("| PlanExecutor, 1 segment (per-run fixed cost: wake the pool, events) | %.1f us |\n",
              whole_seconds * 1e6);
  std::printf("| PlanExecutor, %d segments on cpu0 | %.1f us |\n", kLength, same_seconds * 1e6);
  std::printf("| PlanExecutor, %d segments alternating cpu0/cpu1, %d transfers | %.1f us |\n",
              kLength, kLength - 1, alternating_seconds * 1e6);
  std::printf("| **dispatch overhead per segment** | **%.1f us** |\n", per_segment * 1e6);
  std::printf("| **added per transfer (copy worker hand-off, wake-ups)** | **%.1f us** |\n\n",
              per_transfer * 1e6);
}

void pipeline(const std::string& source, const std::string& name, int64_t batch, int microbatches,
              const std::vector<cpu::CpuDevice*>& devices, int repeat) {
  const std::string path = source + "/zoo/" + name + "/model.onnx";
  ImportOptions import;
  import.dims["batch"] = batch;
  ImportedModel model = import_onnx(path, import);
  fuse_for_inference(model.graph);
  const BatchSplit split =
      find_batch_split(model, import, [](Graph& piece) { fuse_for_inference(piece); });
  const Graph& graph = model.graph;
  std::mt19937_64 rng(1);
  std::vector<Tensor> inputs;
  for (int id : graph.inputs)
    inputs.push_back(random_tensor(graph.values[id].type.dtype, graph.values[id].type.shape, rng));

  const Cluster cluster = load_cluster(source + "/examples/clusters/cpu-split.yaml");
  const CostModel cost(cluster);
  PlanOptions plan_options;
  plan_options.objective = Objective::kThroughput;
  plan_options.microbatches = microbatches;
  plan_options.batch = split.batch;
  plan_options.batch_unsplittable = split.refusal;
  const PlanningProblem problem(graph, cluster, cost, plan_options);
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(problem);
  if (!plan) {
    std::printf("no pipeline plan for %s\n", name.c_str());
    return;
  }
  std::vector<Device*> pointers(devices.begin(), devices.end());
  PlanExecutor::Options options;
  std::vector<std::atomic<int>> team(devices.size());  // OpenMP threads each worker would use
  options.on_worker_start = [&](int d) { team[d] = cpu::cpu_threads(); };
  PlanExecutor executor(graph, *plan, pointers, split, options);
  const double pipelined = median_seconds(repeat, [&] { executor.run(inputs); });

  // The same model on the same cores as one device: all of them, OpenMP across them.
  std::vector<int> cores;
  for (const cpu::CpuDevice* device : devices) cores.push_back(device->cores().at(0));
  cpu::CpuDevice both("cpu0+cpu1", cores);
  both.bind_current_thread();
  GraphExecutor single_both(graph, both);
  const double single_seconds = median_seconds(repeat, [&] { single_both.run(inputs); });
  devices[0]->bind_current_thread();
  GraphExecutor single_one(graph, *devices[0]);
  const double one_seconds = median_seconds(repeat, [&] { single_one.run(inputs); });

  std::printf(
      "| %s, batch %lld | measured ms (median of %d) | predicted ms (planner, preset "
      "cpu-generic-avx2 per core) |\n|---|---:|---:|\n",
      name.c_str(), static_cast<long long>(batch), repeat);
  std::printf("| pipeline plan, %zu stages, %d micro-batches, on cpu0 + cpu1 | %.2f | %.2f |\n",
              plan->stages.size(), plan->microbatches, pipelined * 1e3,
              plan->predicted.latency_seconds * 1e3);
  std::printf("| one device on the same 2 cores (OpenMP, 2 threads) | %.2f | - |\n",
              single_seconds * 1e3);
  std::printf("| one device on 1 core (single:cpu0) | %.2f | %.2f |\n", one_seconds * 1e3,
              problem.single_device_seconds(0) * 1e3);
  std::printf("\nOpenMP threads per pipeline worker:");
  for (size_t d = 0; d < devices.size(); ++d)
    std::printf(" %s %d", devices[d]->name().c_str(), team[d].load());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "tv_resnet18";
  int64_t batch = 8;
  int microbatches = 4, repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model = argv[i + 1];
    if (!std::strcmp(argv[i], "--batch")) batch = std::stoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--microbatches")) microbatches = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::stoi(argv[i + 1]);
  }
  const std::vector<int> cores = affinity_cores();
  cpu::CpuDevice cpu0("cpu0", {cores.at(0)});
  cpu::CpuDevice cpu1("cpu1", {cores.at(1 % cores.size())});
  const std::vector<cpu::CpuDevice*> devices = {&cpu0, &cpu1};
  overhead(devices, repeat);
  pipeline(TANDEM_SOURCE_DIR, model, batch, microbatches, devices, repeat);
  return 0;
}
