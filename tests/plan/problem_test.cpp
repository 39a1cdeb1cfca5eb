#include "plan/problem.h"

#include <gtest/gtest.h>

#include <thread>

#include "devices/cluster.h"
#include "ir/error.h"
#include "onnx/batch_split.h"
#include "onnx/importer.h"
#include "plan/evaluate.h"
#include "plan/strategies.h"
#include "plan_test_util.h"
#include "sim/simulator.h"

namespace tandem {
namespace {

using testing::compute_cluster;
using testing::GraphBuilder;

constexpr int kGpu = 0, kV5e = 1, kV6e = 2, kCpu = 3;  // compute_cluster()'s devices

// x -> Relu -> (Exp, Neg) -> Add, and NonZero of x (which no TPU runs).
Graph small_graph() {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {64, 256});
  const int relu = builder.node("Relu", {x});
  const int exp = builder.node("Exp", {relu});
  const int neg = builder.node("Neg", {relu});
  const int sum = builder.node("Add", {exp, neg});
  const int nonzero = builder.node("NonZero", {x});
  return builder.infer({sum, nonzero});
}

int node_of(const Graph& graph, const std::string& op_type) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].op_type == op_type) return static_cast<int>(n);
  }
  return -1;
}

std::string error_of(const Graph& graph, const CostModel& cost, const PlanOptions& options) {
  try {
    PlanningProblem problem(graph, cost.cluster(), cost, options);
  } catch (const InputError& e) {
    return e.subject() + ": " + e.what();
  }
  return "";
}

TEST(Problem, CostMatrixFromTheCostModel) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  ASSERT_EQ(problem.node_count(), 5);
  for (int n = 0; n < 5; ++n) {
    for (int d = 0; d < 4; ++d)
      EXPECT_EQ(problem.seconds(n, d), cost.op_seconds(graph.nodes[n], graph, d));
  }
  EXPECT_FALSE(problem.runnable(node_of(graph, "NonZero"), kV5e));
  EXPECT_TRUE(problem.runnable(node_of(graph, "NonZero"), kGpu));
}

TEST(Problem, EdgesCarryTheValuesBytes) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  const int relu = node_of(graph, "Relu");
  ASSERT_EQ(problem.successors(relu).size(), 2u);  // Exp, Neg
  EXPECT_DOUBLE_EQ(problem.successors(relu)[0].second, 64 * 256 * 4);
  ASSERT_EQ(problem.predecessors(node_of(graph, "Add")).size(), 2u);  // Exp, Neg
  ASSERT_EQ(problem.values_out(relu).size(), 1u);
  EXPECT_EQ(problem.values_out(relu)[0].readers.size(), 2u);
  ASSERT_EQ(problem.graph_inputs_read(relu).size(), 1u);  // x
  EXPECT_DOUBLE_EQ(problem.graph_inputs_read(relu)[0].second, 64 * 256 * 4);
  EXPECT_TRUE(problem.graph_inputs_read(node_of(graph, "Exp")).empty());
}

// The caller's inputs start in host memory: a device with memory of its own copies each in once
// per run (at its first reader there) and each output it makes back out; a CPU reads them
// where they are. Micro-batches and replicas copy their own part.
TEST(Problem, HostCopiesChargeEachInputOnceAndEveryOutputOnDevicesWithTheirOwnMemory) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  const double x_bytes = 64 * 256 * 4;
  const double in = cost.host_copy_seconds(x_bytes, kGpu, true);
  EXPECT_GT(in, x_bytes / 1e12);  // PCIe, not free
  EXPECT_EQ(cost.host_copy_seconds(x_bytes, kCpu, true), 0);

  const int nonzero = node_of(graph, "NonZero");  // a graph output too
  const auto out = [&](int node, int device) {
    return cost.host_copy_seconds(problem.final_output_bytes(node), device, false);
  };
  HostCopies copies(problem);
  EXPECT_NEAR(copies.charge(node_of(graph, "Relu"), kGpu, 1), in, 1e-15);
  EXPECT_NEAR(copies.charge(nonzero, kGpu, 1), out(nonzero, kGpu), 1e-15);  // x is there already
  EXPECT_NEAR(copies.charge(nonzero, kV5e, 1),
              cost.host_copy_seconds(x_bytes, kV5e, true) + out(nonzero, kV5e), 1e-15);
  EXPECT_EQ(copies.charge(node_of(graph, "Relu"), kCpu, 1), 0);
  EXPECT_EQ(copies.charge(node_of(graph, "Exp"), kGpu, 1), 0);  // reads no input, makes none
  EXPECT_NEAR(copies.charge(node_of(graph, "Add"), kGpu, 1),
              cost.host_copy_seconds(x_bytes, kGpu, false), 1e-15);
  EXPECT_NEAR(copies.charge(node_of(graph, "Relu"), kGpu, 0.5, 1),
              cost.host_copy_seconds(x_bytes / 2, kGpu, true), 1e-15);
}

// A device with memory of its own whose calibration measured one copy's fixed time pays it for
// every copy, in and out, beside the bytes at its measured rate; a CPU still pays none.
TEST(Problem, ACalibratedCopyLatencyIsPaidByEveryCopyToADeviceWithItsOwnMemory) {
  const Cluster cluster =
      load_cluster(std::string(TANDEM_SOURCE_DIR) + "/examples/clusters/cpu-pjrt.yaml");
  const int pjrt = cluster.device_index("pjrt0"), cpu = cluster.device_index("cpu0");
  ASSERT_GE(pjrt, 0);
  CalibrationProfile profile;
  profile.host_link_bandwidth = {1e10, "calibration p.json: round trip"};
  profile.host_link_latency = {2e-6, "calibration p.json: copies"};
  const CostModel cost(cluster, {{pjrt, profile}});
  const double bytes = 256;
  EXPECT_NEAR(cost.host_copy_seconds(bytes, pjrt, true), 2e-6 + bytes / 1e10, 1e-15);
  EXPECT_NEAR(cost.host_copy_seconds(bytes, pjrt, false), 2e-6 + bytes / 1e10, 1e-15);
  EXPECT_EQ(cost.host_copy_seconds(bytes, cpu, true), 0);
  // An older profile, without the figure, leaves the link's own latency.
  profile.host_link_latency = {};
  const CostModel older(cluster, {{pjrt, profile}});
  EXPECT_LT(older.host_copy_seconds(bytes, pjrt, true), 2e-6 + bytes / 1e10);
}

// A plan on a device with its own memory takes the copies on top of its work, a data-parallel
// replica the copies of its share; a CPU's replica none. The simulator agrees with the evaluator.
TEST(Problem, PlansOnADeviceWithItsOwnMemoryPayTheHostCopies) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  const int add = node_of(graph, "Add"), nonzero = node_of(graph, "NonZero");
  const auto copies = [&](int device, double fraction) {
    return problem.host_copy_seconds(64 * 256 * 4 * fraction, device, true) +
           problem.host_copy_seconds(problem.final_output_bytes(add) * fraction, device, false) +
           problem.host_copy_seconds(problem.final_output_bytes(nonzero) * fraction, device, false);
  };
  double work = 0;
  for (int n = 0; n < problem.node_count(); ++n) work += problem.seconds(n, kGpu);
  EXPECT_GT(copies(kGpu, 1), 0);
  EXPECT_NEAR(problem.single_device_seconds(kGpu), work + copies(kGpu, 1), 1e-15);

  Plan plan;
  plan.device_of_node.assign(problem.node_count(), kGpu);
  for (int n = 0; n < problem.node_count(); ++n) plan.order.push_back(n);
  evaluate_plan(problem, plan);
  EXPECT_NEAR(plan.predicted.busy_seconds[kGpu],
              work + problem.segment_overhead(kGpu) + copies(kGpu, 1), 1e-15);
  EXPECT_NEAR(simulate(problem, plan).latency_seconds, plan.predicted.latency_seconds,
              1e-9 + 1e-6 * plan.predicted.latency_seconds);

  Plan halves = plan;
  halves.batch_share.assign(problem.device_count(), 0);
  halves.batch_share[kGpu] = halves.batch_share[kCpu] = 0.5;
  evaluate_plan(problem, halves);
  double gpu_half = problem.segment_overhead(kGpu) + copies(kGpu, 0.5);
  double cpu_half = problem.segment_overhead(kCpu);
  for (int n = 0; n < problem.node_count(); ++n) {
    gpu_half += problem.seconds_for_share(n, kGpu, 0.5);
    cpu_half += problem.seconds_for_share(n, kCpu, 0.5);
  }
  EXPECT_NEAR(halves.predicted.busy_seconds[kGpu], gpu_half, 1e-15);
  EXPECT_NEAR(halves.predicted.busy_seconds[kCpu], cpu_half, 1e-15);
  EXPECT_NEAR(simulate(problem, halves).latency_seconds, halves.predicted.latency_seconds,
              1e-9 + 1e-6 * halves.predicted.latency_seconds);
}

TEST(Problem, TransferCacheMatchesTheCostModel) {
  const CostModel cost(compute_cluster());
  const Graph graph = small_graph();
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  for (double bytes : {0.0, 8.0, 1e6, 3e9}) {
    for (int from = 0; from < 4; ++from) {
      for (int to = 0; to < 4; ++to) {
        EXPECT_NEAR(problem.transfer_seconds(bytes, from, to),
                    cost.transfer_seconds(bytes, from, to),
                    1e-9 * cost.transfer_seconds(bytes, from, to) + 1e-15);
      }
    }
  }
}

TEST(Problem, ValueReadOnAnotherDeviceCrossesOnce) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  Plan plan;
  plan.device_of_node.assign(problem.node_count(), kCpu);
  const int relu = node_of(graph, "Relu");
  plan.device_of_node[relu] = kGpu;
  evaluate_plan(problem, plan);
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].value, graph.nodes[relu].outputs[0]);
  EXPECT_EQ(plan.transfers[0].from_node, relu);
  EXPECT_DOUBLE_EQ(plan.transfers[0].bytes, 64 * 256 * 4);
}

TEST(Problem, PinByOpTypeGlob) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.pins = {{"E*", "cpu0"}};
  const PlanningProblem problem(graph, cost.cluster(), cost, options);
  EXPECT_TRUE(problem.runnable(node_of(graph, "Exp"), kCpu));
  EXPECT_FALSE(problem.runnable(node_of(graph, "Exp"), kGpu));
  EXPECT_TRUE(problem.runnable(node_of(graph, "Neg"), kGpu));  // not pinned
}

TEST(Problem, LastMatchingPinWins) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  const int neg = node_of(graph, "Neg");
  options.pins = {{"*", "cpu0"}, {graph.nodes[neg].name, "v6e"}};
  const PlanningProblem problem(graph, cost.cluster(), cost, options);
  EXPECT_TRUE(problem.runnable(neg, kV6e));
  EXPECT_FALSE(problem.runnable(neg, kCpu));
  EXPECT_FALSE(problem.runnable(node_of(graph, "Relu"), kGpu));
}

TEST(Problem, ExcludedDevicesRunNothing) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.excluded = {"gpu0"};
  const PlanningProblem problem(graph, cost.cluster(), cost, options);
  for (int n = 0; n < problem.node_count(); ++n) EXPECT_FALSE(problem.runnable(n, kGpu));
  EXPECT_FALSE(problem.allowed(kGpu));
}

TEST(Problem, PinToUnknownDeviceIsAnError) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.pins = {{"Relu*", "gpu7"}};
  const std::string error = error_of(graph, cost, options);
  EXPECT_NE(error.find("--pin Relu*=gpu7"), std::string::npos) << error;
  EXPECT_NE(error.find("no device 'gpu7'"), std::string::npos) << error;
}

TEST(Problem, PinContradictingSupportIsAnError) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.pins = {{"NonZero", "v5e"}};
  const std::string error = error_of(graph, cost, options);
  EXPECT_NE(error.find("NonZero"), std::string::npos) << error;
  EXPECT_NE(error.find("v5e"), std::string::npos) << error;
  EXPECT_NE(error.find("depends on data"), std::string::npos) << error;
}

TEST(Problem, PinMatchingNothingIsAnError) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.pins = {{"Conv*", "gpu0"}};
  EXPECT_NE(error_of(graph, cost, options).find("matches no node"), std::string::npos);
}

TEST(Problem, UnknownExcludedDeviceIsAnError) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.excluded = {"tpu9"};
  EXPECT_NE(error_of(graph, cost, options).find("no device 'tpu9'"), std::string::npos);
}

TEST(Problem, OpNoAllowedDeviceRunsIsAnError) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  PlanOptions options;
  options.excluded = {"gpu0", "cpu0"};
  const std::string error = error_of(graph, cost, options);
  EXPECT_NE(error.find("NonZero"), std::string::npos) << error;
  EXPECT_NE(error.find("no device can run it"), std::string::npos) << error;
  EXPECT_NE(error.find("gpu0: excluded"), std::string::npos) << error;
}

TEST(Problem, BestSingleDeviceRunsEverythingAndFits) {
  const Graph graph = small_graph();
  const CostModel cost(compute_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  const int best = problem.best_single_device();
  ASSERT_GE(best, 0);
  EXPECT_TRUE(best == kGpu || best == kCpu);  // the TPUs cannot run NonZero
  EXPECT_EQ(problem.single_device_seconds(kV5e), kInfinity);
  EXPECT_GT(problem.single_device_memory(kGpu), 64 * 256 * 4);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

BatchSplit split_of(const std::string& name, int64_t batch) {
  ImportOptions import;
  import.dims["batch"] = batch;
  const ImportedModel model =
      import_onnx(std::string(TANDEM_SOURCE_DIR) + "/zoo/" + name + "/model.onnx", import);
  return find_batch_split(model, import);
}

// The zoo's Loop model runs an RNN as a Loop and picks a branch by the mean over the whole
// batch: it mixes samples (a subgraph over batched data is not analysed), so it is not split.
TEST(BatchSplit, ModelThatMixesSamplesIsNotSplit) {
  const BatchSplit split = split_of("loop", 4);
  EXPECT_FALSE(split.splittable());
  EXPECT_NE(split.refusal.find("subgraph"), std::string::npos) << split.refusal;
}

TEST(BatchSplit, TransformerSplitsAlongItsBatch) {
  const BatchSplit split = split_of("bert", 4);
  ASSERT_TRUE(split.splittable()) << split.refusal;
  EXPECT_EQ(split.dim, "batch");
  EXPECT_EQ(split.batch, 4);
  EXPECT_EQ(split.input_axis, (std::vector<int>{0, 0}));
  EXPECT_EQ(split.output_axis, (std::vector<int>{0, 0}));
  const auto piece = split.graph_for(3);
  EXPECT_EQ(piece->values[piece->outputs[0]].type.shape[0], 3);
}

TEST(BatchSplit, RefusesWithAReason) {
  EXPECT_NE(split_of("mlp", 1).refusal.find("is 1 sample"), std::string::npos);
  // postproc's outputs (NonMaxSuppression, NonZero) have data-dependent shapes.
  const std::string postproc = split_of("postproc", 2).refusal;
  EXPECT_FALSE(postproc.empty());
}

TEST(PlanningProblem, BatchTheCallerFoundUnsplittableIsNotSplit) {
  ImportOptions import;
  import.dims["batch"] = 2;
  ImportedModel model = import_onnx(std::string(TANDEM_SOURCE_DIR) + "/zoo/mlp/model.onnx", import);
  const Cluster cluster =
      load_cluster(std::string(TANDEM_SOURCE_DIR) + "/examples/clusters/cpu-split.yaml");
  const CostModel cost(cluster);
  PlanOptions options;
  options.batch = 2;
  options.microbatches = 2;
  EXPECT_TRUE(PlanningProblem(model.graph, cluster, cost, options).batch_splittable());
  options.batch_unsplittable = "a reason";
  const PlanningProblem problem(model.graph, cluster, cost, options);
  EXPECT_FALSE(problem.batch_splittable());
  EXPECT_EQ(problem.batch_refusal(), "a reason");
  EXPECT_EQ(problem.options().microbatches, 1);
  EXPECT_FALSE(make_data_parallel_strategy()->plan(problem).has_value());
  // A batch of one sample is never split, and more micro-batches than samples are not made.
  options.batch_unsplittable.clear();
  options.batch = 1;
  EXPECT_FALSE(PlanningProblem(model.graph, cluster, cost, options).batch_splittable());
  options.batch = 3;
  options.microbatches = 8;
  EXPECT_EQ(PlanningProblem(model.graph, cluster, cost, options).options().microbatches, 3);
}

// Two CPU devices of one host and one of another: the first two share their host's memory.
Cluster shared_host_cluster() {
  using namespace testing;
  Cluster cluster;
  cluster.hosts = {host("h0"), host("h1")};
  for (const auto& [id, where] : {std::pair{"cpu0", "h0"}, {"cpu1", "h0"}, {"cpu2", "h1"}}) {
    cluster.devices.push_back(cpu(id, where));
    cluster.devices.back().cores = 1;
    cluster.links.push_back(link(id, where, LinkKind::kHostMemory, 20e9, 20e9, 0));
  }
  cluster.links.push_back(link("h0", "h1", LinkKind::kNetwork, 10e9, 10e9, 1e-6));
  return cluster;
}

TEST(Problem, CpuDevicesOfOneHostShareItsMemoryBandwidth) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {2, 1 << 20});
  const int streamed = builder.node("Relu", {x});  // 16 MiB through memory, 2M FLOPs
  const int w = builder.constant("w", DType::kFloat32, {1024, 1024});
  const int a = builder.input("a", DType::kFloat32, {2, 1024});
  const int computed = builder.node("MatMul", {a, w});  // 4 MiB of weights, 4 MFLOPs: memory too
  const Graph graph = builder.infer({streamed, computed});
  const CostModel cost(shared_host_cluster());
  PlanOptions options;
  options.batch = 2;
  const PlanningProblem problem(graph, cost.cluster(), cost, options);
  EXPECT_EQ(problem.memory_group(0), 0);
  EXPECT_EQ(problem.memory_group(1), 0);
  EXPECT_EQ(problem.memory_group(2), -1);

  const int relu = node_of(graph, "Relu");
  const OpTime alone = cost.op_time(graph.nodes[relu], graph, 0);
  ASSERT_EQ(alone.bound, Bound::kMemory);
  // A preset-like figure is main memory's: two at once take twice its memory time.
  EXPECT_DOUBLE_EQ(alone.main_memory_seconds, alone.memory_seconds);
  EXPECT_DOUBLE_EQ(problem.contended_seconds_for_share(relu, 0, 1, {1, 1}),
                   problem.seconds(relu, 0));
  EXPECT_NEAR(problem.contended_seconds_for_share(relu, 0, 1, {2, 2}),
              2 * alone.memory_seconds + alone.overhead_seconds, 1e-12);
  EXPECT_NEAR(problem.contended_seconds_for_share(relu, 0, 0.5, {2, 2}),
              alone.memory_seconds + alone.overhead_seconds, 1e-12);
  // More cores taken than the host has: the whole op is time-sliced.
  const int host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_NEAR(problem.contended_seconds_for_share(relu, 0, 1, {2, 3 * host_cores}),
              3 * problem.contended_seconds_for_share(relu, 0, 1, {2, host_cores}), 1e-12);
  // A device alone in its host shares with no one.
  EXPECT_DOUBLE_EQ(problem.contended_seconds_for_share(relu, 2, 1, {2, 2}),
                   problem.seconds(relu, 2));

  // Data parallel on the two devices of one host: each half takes its memory time twice over;
  // on devices of two hosts, once. The simulator agrees with the evaluator.
  for (const auto& [other, sharers] : {std::pair{1, 2}, {2, 1}}) {
    Plan plan;
    plan.device_of_node.assign(problem.node_count(), 0);
    for (int n = 0; n < problem.node_count(); ++n) plan.order.push_back(n);
    plan.batch_share.assign(3, 0);
    plan.batch_share[0] = plan.batch_share[other] = 0.5;
    evaluate_plan(problem, plan);
    double expected = 0;
    for (int n = 0; n < problem.node_count(); ++n)
      expected += problem.contended_seconds_for_share(n, 0, 0.5, {sharers, sharers});
    EXPECT_EQ(steady_sharing(problem, plan, 0).devices, sharers);
    EXPECT_EQ(steady_sharing(problem, plan, 0).cores, sharers);
    EXPECT_NEAR(plan.predicted.busy_seconds[0], expected, 1e-12) << "with cpu" << other;
    EXPECT_NEAR(simulate(problem, plan).latency_seconds, plan.predicted.latency_seconds,
                1e-9 + 1e-6 * plan.predicted.latency_seconds)
        << "with cpu" << other;
  }
}

// A run is priced as the runtime runs it (runtime/plan_executor.cpp): a device on every core
// alone runs on run()'s thread; otherwise the run is handed to workers, and where their devices
// keep every core busy, run()'s thread sleeps and waking it is one hand-off more.
TEST(Problem, ARunIsPricedAsTheRuntimeRunsIt) {
  using namespace testing;
  const int host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Cluster cluster;
  cluster.hosts = {host("h0"), host("h1")};
  const auto add = [&](DeviceSpec device, int cores, double run, double handoff) {
    device.cores = cores;
    device.figures.run_overhead = figure(run);
    device.figures.handoff_latency = figure(handoff);
    cluster.links.push_back(link(device.id, device.host, LinkKind::kHostMemory, 20e9, 20e9, 0));
    cluster.devices.push_back(std::move(device));
  };
  constexpr int kWhole = 0, kOne = 1, kRest = 2, kGpu = 3, kElsewhere = 4;
  add(cpu("whole", "h0"), 0, 1e-6, 10e-6);
  add(cpu("one", "h0"), 1, 2e-6, 20e-6);
  add(cpu("rest", "h0"), std::max(host_cores - 1, 1), 3e-6, 30e-6);
  add(gpu("gpu", "h0"), 0, 4e-6, 40e-6);
  add(cpu("elsewhere", "h1"), 1, 5e-6, 50e-6);
  cluster.links.push_back(link("h0", "h1", LinkKind::kNetwork, 10e9, 10e9, 1e-6));
  const CostModel cost(cluster);
  const Graph graph = small_graph();
  PlanOptions options;
  options.batch = 2;
  const PlanningProblem problem(graph, cost.cluster(), cost, options);
  EXPECT_EQ(problem.busy_host_cores(kWhole), host_cores);
  EXPECT_EQ(problem.busy_host_cores(kOne), 1);
  EXPECT_EQ(problem.busy_host_cores(kGpu), 1);

  const auto on = [&](std::vector<int> devices) {
    Plan plan;
    for (int n = 0; n < problem.node_count(); ++n) {
      plan.device_of_node.push_back(devices[n % devices.size()]);
      plan.order.push_back(n);
    }
    return plan;
  };
  // Alone: the device's own figure, measured as it runs alone (on run()'s thread for the
  // whole machine, handed to its worker for one core).
  EXPECT_DOUBLE_EQ(problem.run_overhead(on({kWhole})), 1e-6);
  EXPECT_DOUBLE_EQ(problem.run_overhead(on({kOne})), 2e-6);
  EXPECT_DOUBLE_EQ(problem.run_overhead(on({kWhole})), problem.run_overhead(kWhole));
  // Two devices that take every core between them: run()'s thread sleeps.
  EXPECT_DOUBLE_EQ(problem.run_overhead(on({kOne, kRest})), 3e-6 + 30e-6);
  EXPECT_DOUBLE_EQ(problem.run_overhead(on({kWhole, kGpu})), 4e-6 + 40e-6);
  Plan shares = on({kOne});
  shares.batch_share = {0, 0.5, 0.5, 0, 0};
  EXPECT_DOUBLE_EQ(problem.run_overhead(shares), 3e-6 + 30e-6);
  // A core left free on every host: run()'s thread watches for the workers' end awake.
  if (host_cores > 2) EXPECT_DOUBLE_EQ(problem.run_overhead(on({kOne, kGpu})), 4e-6);
  if (host_cores > 1) EXPECT_DOUBLE_EQ(problem.run_overhead(on({kOne, kElsewhere})), 5e-6);
  // The evaluator and the simulator price it alike.
  evaluate_plan(problem, shares);
  EXPECT_NEAR(simulate(problem, shares).latency_seconds, shares.predicted.latency_seconds,
              1e-9 + 1e-6 * shares.predicted.latency_seconds);
}

TEST(Problem, AShareOfTheBatchStillReadsEveryWeight) {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {2, 1 << 20});
  const int streamed = builder.node("Relu", {x});
  const int w = builder.constant("w", DType::kFloat32, {1024, 1024});
  const int a = builder.input("a", DType::kFloat32, {2, 1024});
  const int product = builder.node("MatMul", {a, w});
  const Graph graph = builder.infer({streamed, product});
  const CostModel cost(shared_host_cluster());
  const PlanningProblem problem(graph, cost.cluster(), cost, {});
  const double overhead = problem.launch_overhead(2);
  // No weights: half the batch, half the work.
  const int relu = node_of(graph, "Relu");
  EXPECT_NEAR(problem.seconds_for_share(relu, 2, 0.5) - overhead,
              (problem.seconds(relu, 2) - overhead) / 2, 1e-15);
  // The MatMul's 4 MiB of weights are read whatever the share: half the batch costs nearly all.
  const int matmul = node_of(graph, "MatMul");
  const OpTime time = cost.op_time(graph.nodes[matmul], graph, 2);
  EXPECT_NEAR(time.weight_seconds, 4.0 * 1024 * 1024 / 20e9, 1e-12);
  EXPECT_NEAR(problem.seconds_for_share(matmul, 2, 0.5) - overhead,
              time.weight_seconds + (time.memory_seconds - time.weight_seconds) / 2, 1e-15);
  EXPECT_GT(problem.seconds_for_share(matmul, 2, 0.5), 0.99 * problem.seconds(matmul, 2));
}

}  // namespace
}  // namespace tandem
