// What the CUDA backend says it runs, and how the planner uses that, without a GPU: the op
// table, every node of every zoo model accepted, refusals kept off the GPU by the planner,
// and the visible refusal of a cluster's GPU on a machine that has none.
#include <gtest/gtest.h>

#include <fstream>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/registry.h"
#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "ir/error.h"
#include "ir/infer.h"
#include "ir/op_schema.h"
#include "plan/strategies.h"
#include "zoo_cases.h"

namespace tandem {
namespace {

Cluster gpu_cpu_cluster() {
  return load_cluster(testing::source_dir() + "/examples/clusters/gpu-cpu.yaml");
}

TEST(CudaSupport, OpTableIsUniqueAndNamesOnlyOpsWithASchema) {
  const std::vector<cuda::CudaOp>& table = cuda::op_table();  // throws on a duplicate
  EXPECT_GE(table.size(), 100u);
  for (const cuda::CudaOp& op : table) {
    EXPECT_NE(OpRegistry::instance().find(op.op_type), nullptr) << op.op_type;
    EXPECT_NE(op.make, nullptr) << op.op_type;
    EXPECT_EQ(cuda::find_op(op.op_type), &op);
  }
  EXPECT_EQ(cuda::refusal(Node{"n", "FooBar", "", {}, {}, {}, {}}, Graph{}),
            "no CUDA kernel for FooBar");
}

// The done-when of the backend: every node of every zoo model, both tiers, is one the CUDA
// backend says it runs (so `--strategy single:gpu0` takes the whole model).
TEST(CudaSupport, EveryZooNodeIsAccepted) {
  const Cluster cluster = gpu_cpu_cluster();
  const DeviceSpec& gpu = cluster.devices[0];
  ASSERT_EQ(gpu.backend, BackendKind::kCuda);
  const std::vector<std::string> names = testing::zoo_model_names();
  ASSERT_GE(names.size(), 20u) << "run scripts/setup.sh to generate both tiers of the zoo";
  for (const std::string& name : names) {
    const testing::ZooCase c = testing::load_zoo_case(name);
    for (const Node& node : c.graph.nodes) {
      EXPECT_EQ(cannot_run_reason(gpu, node, c.graph), "") << name << ": " << node.label();
    }
  }
}

// A graph of Relu -> ScatterElements(reduction=mul: refused by the CUDA backend) -> Relu: the
// planner keeps the refused node on the CPU and nothing else.
TEST(CudaSupport, PlannerKeepsWhatTheGpuRefusesOnTheCpu) {
  Graph graph;
  graph.opset = 18;
  const TensorType matrix{DType::kFloat32, {256, 256}};
  const int x = graph.add_value("x", matrix);
  graph.inputs = {x};
  auto add = [&](const std::string& op, std::vector<int> inputs, const std::string& out) {
    Node node;
    node.name = out + "_node";
    node.op_type = op;
    node.inputs = std::move(inputs);
    node.outputs = {graph.add_value(out)};
    graph.nodes.push_back(node);
    return graph.nodes.back().outputs[0];
  };
  const int indices = graph.add_value("indices", {DType::kInt64, {1, 256}});
  graph.values[indices].constant = Tensor::zeros(DType::kInt64, {1, 256});
  const int updates = graph.add_value("updates", {DType::kFloat32, {1, 256}});
  graph.values[updates].constant = Tensor::zeros(DType::kFloat32, {1, 256});
  const int a = add("Relu", {x}, "a");
  const int b = add("ScatterElements", {a, indices, updates}, "b");
  graph.nodes.back().attributes["reduction"] = std::string("mul");
  const int c = add("Relu", {b}, "c");
  graph.outputs = {c};
  infer_graph(graph);

  const Cluster cluster = gpu_cpu_cluster();
  const std::string refusal = cannot_run_reason(cluster.devices[0], graph.nodes[1], graph);
  ASSERT_NE(refusal, "");
  EXPECT_EQ(refusal.rfind("cuda: ", 0), 0u) << refusal;
  const CostModel cost(cluster);
  const PlanningProblem problem(graph, cluster, cost, PlanOptions{});
  const std::optional<Plan> plan = make_greedy_strategy({0, 1})->plan(problem);
  ASSERT_TRUE(plan.has_value());
  std::map<std::string, int> device_of;
  for (const Segment& segment : plan->segments) {
    for (int node : segment.nodes) device_of[graph.nodes[node].name] = segment.device;
  }
  EXPECT_EQ(device_of["a_node"], 0);
  EXPECT_EQ(device_of["b_node"], 1);
  EXPECT_EQ(device_of["c_node"], 0);
}

// On a machine without a GPU (every development and CI machine here), a cluster's cuda
// device is refused with the reason, naming the device, before anything runs.
TEST(CudaSupport, WithoutAGpuTheDeviceIsRefusedByName) {
  const std::string absent = cuda::gpu_absence();
  if (absent.empty()) GTEST_SKIP() << "this machine has a GPU";
  try {
    make_devices(gpu_cpu_cluster());
    FAIL() << "a CUDA device was made without a GPU";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("device gpu0 (backend cuda) cannot start: "), std::string::npos)
        << message;
    EXPECT_NE(message.find(absent), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tandem
