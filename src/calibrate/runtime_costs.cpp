#include "calibrate/runtime_costs.h"

#include <algorithm>
#include <chrono>

#include "backends/cpu/cpu_device.h"
#include "calibrate/bench_graph.h"
#include "plan/plan.h"
#include "runtime/executor.h"
#include "runtime/plan_executor.h"
#include "util/cpu_affinity.h"
#include "util/statistics.h"

namespace tandem::calibrate {
namespace {

using Clock = std::chrono::steady_clock;

// The hand-off's chain: its transfers' mean. The run's chain is short, so that the run less
// the chain alone is not lost in the noise of either (32 Relu on 65,536 floats took 0.3 ms on
// one core).
constexpr int kHandoffChain = 32;
constexpr int kRunChain = 4;

// Relu on `elements` floats, `length` times.
Graph relu_chain(int length, int64_t elements) {
  Graph graph;
  graph.opset = 13;
  int previous = graph.add_value("x", {DType::kFloat32, {elements}});
  graph.inputs = {previous};
  for (int i = 0; i < length; ++i) {
    const int next = graph.add_value("v" + std::to_string(i), {DType::kFloat32, {elements}});
    Node node;
    node.name = "relu" + std::to_string(i);
    node.op_type = "Relu";
    node.inputs = {previous};
    node.outputs = {next};
    graph.nodes.push_back(std::move(node));
    previous = next;
  }
  graph.outputs = {previous};
  return graph;
}

// `adds` Adds of `shape` in a chain, each adding a graph input: a new one each time
// (adds + 1 inputs), or the first again.
Graph add_chain(int adds, const Shape& shape, bool new_inputs) {
  Graph graph;
  graph.opset = 13;
  const TensorType type{DType::kFloat32, shape};
  int previous = graph.add_value("x0", type);
  graph.inputs = {previous};
  for (int i = 0; i < adds; ++i) {
    int input = graph.inputs.front();
    if (new_inputs) {
      input = graph.add_value("x" + std::to_string(i + 1), type);
      graph.inputs.push_back(input);
    }
    const int next = graph.add_value("s" + std::to_string(i), type);
    Node node;
    node.name = "add" + std::to_string(i);
    node.op_type = "Add";
    node.inputs = {previous, input};
    node.outputs = {next};
    graph.nodes.push_back(std::move(node));
    previous = next;
  }
  graph.outputs = {previous};
  return graph;
}

// One segment per node, node n on device `device_of(n)`; or the whole chain as one segment.
Plan chain_plan(int length, int (*device_of)(int), bool one_segment) {
  Plan plan;
  for (int n = 0; n < length; ++n) {
    plan.device_of_node.push_back(device_of(n));
    plan.order.push_back(n);
    if (!one_segment) plan.segments.push_back({device_of(n), {n}});
  }
  if (one_segment) plan.segments.push_back({device_of(0), plan.order});
  return plan;
}

template <typename Run>
double seconds_of(const Repetition& repetition, Run run) {
  run();  // warm-up: workers started, kernels' first calls
  return typical_seconds(repetition, [&] {
    const auto start = Clock::now();
    run();
    return std::chrono::duration<double>(Clock::now() - start).count();
  });
}

// A plan's run of `graph` on `devices` less `alone`'s run of the same work: a difference of two
// run times, taken three times, each pair measured back to back, and the median kept, so that
// one side slowed by another process does not make the figure. The plan's executor lives for
// one pair only: its worker's OpenMP team, spinning after a run, would slow the next run alone
// (and the plan's run frees this thread's team, which the run alone would start anew); so
// measured, single pairs gave 0 one time in three.
template <typename Alone>
double plan_run_less_alone(const Repetition& repetition, Alone alone, const Graph& graph,
                           const Plan& plan, const std::vector<Device*>& devices,
                           const std::vector<Tensor>& inputs) {
  std::vector<double> differences;
  for (int pair = 0; pair < 3; ++pair) {
    const double alone_seconds = seconds_of(repetition, alone);
    PlanExecutor whole(graph, plan, devices);
    const double whole_seconds = seconds_of(repetition, [&] { whole.run(inputs); });
    differences.push_back(whole_seconds - alone_seconds);
  }
  return std::max(0.0, median(differences));
}

}  // namespace

RuntimeCosts measure_runtime_costs(int threads, const Repetition& repetition,
                                   const std::string& note) {
  const std::vector<int> cores = affinity_cores();
  // The run's own cost on ops too small to hide it in their noise: a plan on a device that
  // keeps every core busy runs on run()'s thread, so that this is the executor's bookkeeping;
  // on fewer cores it is handed to the device's worker, which watches awake between runs that
  // follow each other closely, and run()'s thread watches for its end on a core left free.
  constexpr int64_t kRunElements = 16;
  const Graph chain = relu_chain(kRunChain, kRunElements);
  const std::vector<Tensor> input = {Tensor::zeros(DType::kFloat32, {kRunElements})};

  std::vector<int> own_cores;
  if (threads < static_cast<int>(cores.size()))
    own_cores.assign(cores.begin(), cores.begin() + std::max(threads, 1));
  cpu::CpuDevice calibrated("cpu", own_cores);
  GraphExecutor alone(chain, calibrated);
  const auto on_first = [](int) { return 0; };
  const Plan one_segment = chain_plan(kRunChain, on_first, true);
  const double run_overhead = plan_run_less_alone(
      repetition, [&] { alone.run(input); }, chain, one_segment, {&calibrated}, input);

  // Two devices of one core each, as a cluster file's `cores: 1` makes them (on one core
  // both share it).
  cpu::CpuDevice first("cpu0", {cores.empty() ? 0 : cores.front()});
  cpu::CpuDevice second("cpu1", {cores.empty() ? 0 : cores.back()});
  const std::vector<Device*> devices = {&first, &second};
  // The hand-off on a tensor of one float: the bytes' copy is the link bandwidth's to price.
  const Graph tiny_chain = relu_chain(kHandoffChain, 1);
  const std::vector<Tensor> tiny_input = {Tensor::zeros(DType::kFloat32, {1})};
  PlanExecutor same(tiny_chain, chain_plan(kHandoffChain, on_first, false), devices);
  const double same_seconds = seconds_of(repetition, [&] { same.run(tiny_input); });
  const auto alternate = [](int n) { return n % 2; };
  PlanExecutor alternating(tiny_chain, chain_plan(kHandoffChain, alternate, false), devices);
  const double alternating_seconds = seconds_of(repetition, [&] { alternating.run(tiny_input); });

  RuntimeCosts costs;
  costs.run_overhead = run_overhead;
  costs.run_method =
      "a chain of " + std::to_string(kRunChain) + " Relu on " + std::to_string(kRunElements) +
      " floats as one segment of a plan on a CPU device of " +
      (own_cores.empty() ? std::string("every core, unpinned")
                         : std::to_string(own_cores.size()) + " pinned core(s)") +
      ", run time less the same chain run alone, the median of 3 such pairs, " + note;
  costs.handoff_latency =
      std::max(0.0, (alternating_seconds - same_seconds) / (kHandoffChain - 1) / 2);
  costs.handoff_method =
      "a chain of " + std::to_string(kHandoffChain) +
      " Relu on 1 float as segments alternating between two CPU devices of one core each, less "
      "all on one, per transfer, halved (a transfer crosses two hops), " +
      note;
  return costs;
}

DeviceRunCost measure_device_run_cost(Device& device, const Repetition& repetition,
                                      const std::string& note) {
  const Shape shape{4, 16};
  const auto plan_of = [](const Graph& graph) {
    Plan plan;
    for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
      plan.device_of_node.push_back(0);
      plan.order.push_back(n);
    }
    plan.segments = {{0, plan.order}};
    return plan;
  };
  const auto zeros = [&](const Graph& graph) {
    return std::vector<Tensor>(graph.inputs.size(), Tensor::zeros(DType::kFloat32, shape));
  };
  // Each input's copy: 3 Adds of 4 inputs against the same 3 Adds of one input read 4 times,
  // both plans fed from host memory: the same program's work, 3 copies more.
  constexpr int kAdds = 3;
  const Graph one_input = add_chain(kAdds, shape, false), inputs = add_chain(kAdds, shape, true);
  const std::vector<Tensor> one_host = zeros(one_input);
  PlanExecutor reading_one(one_input, plan_of(one_input), {&device});
  DeviceRunCost cost;
  cost.copy_latency = plan_run_less_alone(
                          repetition, [&] { reading_one.run(one_host); }, inputs, plan_of(inputs),
                          {&device}, zeros(inputs)) /
                      kAdds;
  cost.copy_method =
      "plans of 3 4x16 Adds on this device fed from host memory, of 4 inputs less "
      "of one read 4 times, per input more, the median of 3 such pairs, " +
      note;
  // The run's own cost: one Add of two inputs, less the program with its inputs on the device,
  // less its three copies (two inputs in, the result out), which the cost model prices apart.
  const Graph add = add_chain(1, shape, true);
  const std::vector<Tensor> add_host = zeros(add);
  std::vector<Tensor> resident;
  for (const Tensor& input : add_host) resident.push_back(device.receive(input));
  GraphExecutor alone(add, device);
  constexpr int kCopies = 3;
  cost.seconds = std::max(
      0.0, plan_run_less_alone(
               repetition, [&] { alone.run(resident); }, add, plan_of(add), {&device}, add_host) -
               kCopies * cost.copy_latency);
  cost.method =
      "a plan of one 4x16 Add on this device, its inputs moved in from host memory and its "
      "result out, run time less the same program with its inputs on the device, the median "
      "of 3 such pairs, less its 3 copies at the host link latency, " +
      note;
  return cost;
}

}  // namespace tandem::calibrate
