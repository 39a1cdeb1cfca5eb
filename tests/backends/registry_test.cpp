// What each backend says its devices can run: TPUs refuse data-dependent shapes, fp64 and
// control flow; the CPU refuses element types its kernels do not compute in; control flow on an
// eager backend is as good as its branches; a backend missing from the build is refused by name.
#include "backends/registry.h"

#include <gtest/gtest.h>

#include "backends/cpu/cpu_device.h"
#include "backends/pjrt/lower.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "util/cpu_affinity.h"

namespace tandem {
namespace {

DeviceSpec device_of(DeviceKind kind, BackendKind backend = BackendKind::kNone) {
  DeviceSpec device;
  device.id = "d0";
  device.kind = kind;
  device.backend = backend;
  return device;
}

const DeviceSpec kCpuDevice = device_of(DeviceKind::kCpu, BackendKind::kCpu);

// A graph with one node of `op_type` over inputs of the given types, and one output.
struct OneNode {
  Graph graph;
  const Node& node() const { return graph.nodes[0]; }
};

OneNode one_node(const std::string& op_type, std::vector<TensorType> inputs, TensorType output) {
  OneNode made;
  Node node;
  node.name = "n";
  node.op_type = op_type;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(made.graph.add_value("in" + std::to_string(i), inputs[i]));
  }
  node.outputs.push_back(made.graph.add_value("out", output));
  made.graph.nodes.push_back(node);
  return made;
}

const TensorType kMatrix{DType::kFloat32, {64, 64}};

TEST(Registry, TpuRefusesDataDependentShapes) {
  const OneNode nonzero = one_node("NonZero", {kMatrix}, {DType::kInt64, {2, kDynamicDim}});
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), nonzero.node(), nonzero.graph);
  EXPECT_NE(reason.find("NonZero's output shape depends on data"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kCpu), nonzero.node(), nonzero.graph));
  EXPECT_TRUE(can_run(device_of(DeviceKind::kGpu), nonzero.node(), nonzero.graph));
}

TEST(Registry, TpuRefusesFp64) {
  const TensorType doubles{DType::kFloat64, {64, 64}};
  const OneNode add = one_node("Add", {doubles, doubles}, doubles);
  const std::string reason = cannot_run_reason(device_of(DeviceKind::kTpu), add.node(), add.graph);
  EXPECT_NE(reason.find("float64"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kCpu), add.node(), add.graph));
  EXPECT_TRUE(can_run(device_of(DeviceKind::kGpu), add.node(), add.graph));
}

TEST(Registry, TpuRefusesControlFlow) {
  const OneNode branch = one_node("If", {{DType::kBool, {}}}, kMatrix);
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), branch.node(), branch.graph);
  EXPECT_NE(reason.find("control flow"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kCpu), branch.node(), branch.graph));
}

TEST(Registry, TpuRefusesDynamicDims) {
  const OneNode relu = one_node("Relu", {{DType::kFloat32, {kDynamicDim, 64}}},
                                {DType::kFloat32, {kDynamicDim, 64}});
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), relu.node(), relu.graph);
  EXPECT_NE(reason.find("dynamic shape"), std::string::npos) << reason;
}

TEST(Registry, TpuRefusesOpsWithoutLowering) {
  // Trilu: the CUDA backend runs it, the StableHLO lowering has no rule for it.
  const OneNode trilu = one_node("Trilu", {kMatrix}, kMatrix);
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), trilu.node(), trilu.graph);
  EXPECT_NE(reason.find("no StableHLO lowering for Trilu"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kGpu), trilu.node(), trilu.graph));
}

TEST(Registry, TpuRunsStaticDenseMath) {
  const OneNode matmul = one_node("MatMul", {kMatrix, kMatrix}, kMatrix);
  EXPECT_TRUE(can_run(device_of(DeviceKind::kTpu), matmul.node(), matmul.graph));
  const OneNode softmax = one_node("Softmax", {kMatrix}, kMatrix);
  EXPECT_TRUE(can_run(device_of(DeviceKind::kTpu), softmax.node(), softmax.graph));
}

TEST(Registry, UnknownOpRunsNowhere) {
  const OneNode unknown = one_node("FrobnicateV9", {kMatrix}, kMatrix);
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu, DeviceKind::kTpu}) {
    const std::string reason = cannot_run_reason(device_of(kind), unknown.node(), unknown.graph);
    EXPECT_NE(reason.find("no op FrobnicateV9"), std::string::npos) << reason;
  }
}

TEST(Registry, PjrtLowersOnlyOpsWithASchema) {
  for (const std::string& op_type : pjrt::lowered_op_types()) {
    EXPECT_NE(OpRegistry::instance().find(op_type), nullptr) << op_type;
  }
}

TEST(Registry, PjrtDeviceOnTheCpuRefusesWhatXlaCannotCompileButKeepsFp64) {
  const DeviceSpec pjrt = device_of(DeviceKind::kCpu, BackendKind::kPjrt);
  const OneNode nonzero = one_node("NonZero", {kMatrix}, {DType::kInt64, {2, kDynamicDim}});
  const std::string reason = cannot_run_reason(pjrt, nonzero.node(), nonzero.graph);
  EXPECT_EQ(reason.rfind("PJRT: ", 0), 0u) << reason;
  const TensorType doubles{DType::kFloat64, {8, 8}};
  const OneNode add = one_node("Add", {doubles, doubles}, doubles);
  EXPECT_TRUE(can_run(pjrt, add.node(), add.graph))
      << cannot_run_reason(pjrt, add.node(), add.graph);
}

TEST(Registry, CpuRefusesAFloat16ConvolutionItWouldRefuseAtRunTime) {
  const TensorType image{DType::kFloat16, {1, 3, 8, 8}};
  const TensorType weights{DType::kFloat16, {4, 3, 3, 3}};
  const OneNode conv = one_node("Conv", {image, weights}, {DType::kFloat16, {1, 4, 6, 6}});
  const std::string reason = cannot_run_reason(kCpuDevice, conv.node(), conv.graph);
  EXPECT_NE(reason.find("float16"), std::string::npos) << reason;
  EXPECT_NE(reason.find("float32 only"), std::string::npos) << reason;
}

TEST(Registry, CpuMovesFloat16ButDoesNotComputeInIt) {
  const TensorType halves{DType::kFloat16, {4, 8}};
  const OneNode transpose = one_node("Transpose", {halves}, {DType::kFloat16, {8, 4}});
  EXPECT_TRUE(can_run(kCpuDevice, transpose.node(), transpose.graph));
  const OneNode cast = one_node("Cast", {halves}, {DType::kFloat32, {4, 8}});
  EXPECT_TRUE(can_run(kCpuDevice, cast.node(), cast.graph));
  const OneNode add = one_node("Add", {halves, halves}, halves);
  const std::string reason = cannot_run_reason(kCpuDevice, add.node(), add.graph);
  EXPECT_NE(reason.find("Cast it"), std::string::npos) << reason;
}

TEST(Registry, ViewsRunOnEagerDevicesWithoutAKernel) {
  const OneNode reshape =
      one_node("Reshape", {kMatrix, {DType::kInt64, {1}}}, {DType::kFloat32, {4096}});
  EXPECT_TRUE(can_run(kCpuDevice, reshape.node(), reshape.graph));
}

TEST(Registry, ControlFlowOnAnEagerDeviceIsAsGoodAsItsBranches) {
  auto branch = [](DType dtype) {
    auto g = std::make_shared<Graph>();
    g->opset = 17;
    const int x = g->add_value("x", {dtype, {1, 3, 8, 8}});
    g->values[x].outer_scope = true;
    const int w = g->add_value("w", {dtype, {4, 3, 3, 3}});
    g->values[w].outer_scope = true;
    Node conv;
    conv.name = "branch_conv";
    conv.op_type = "Conv";
    conv.inputs = {x, w};
    conv.outputs = {g->add_value("y", {dtype, {1, 4, 6, 6}})};
    g->nodes.push_back(conv);
    g->outputs = conv.outputs;
    return g;
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    OneNode branching = one_node("If", {{DType::kBool, {}}}, {dtype, {1, 4, 6, 6}});
    branching.graph.nodes[0].attributes["then_branch"] = branch(dtype);
    branching.graph.nodes[0].attributes["else_branch"] = branch(dtype);
    const std::string reason = cannot_run_reason(kCpuDevice, branching.node(), branching.graph);
    if (dtype == DType::kFloat32) {
      EXPECT_EQ(reason, "");
    } else {
      EXPECT_NE(reason.find("then_branch: branch_conv (Conv): float16"), std::string::npos)
          << reason;
    }
  }
}

TEST(Registry, EveryBackendKindHasOneEntry) {
  for (BackendKind kind :
       {BackendKind::kCpu, BackendKind::kCuda, BackendKind::kPjrt, BackendKind::kNone}) {
    const Backend& backend = backend_of(kind);
    EXPECT_EQ(backend.kind, kind);
    EXPECT_EQ(find_backend(backend.name), &backend);
  }
  EXPECT_EQ(find_backend("rocm"), nullptr);
}

TEST(Registry, ABackendTheBuildLacksIsRefusedByNameBeforeAnyDeviceStarts) {
  Cluster cluster;
  cluster.file = "c.yaml";
  cluster.devices = {device_of(DeviceKind::kCpu, BackendKind::kCpu),
                     device_of(DeviceKind::kGpu, BackendKind::kNone)};
  cluster.devices[1].id = "sim0";
  try {
    make_devices(cluster);
    FAIL() << "a backend: none device was made";
  } catch (const InputError& error) {
    EXPECT_EQ(error.subject(), "c.yaml");
    EXPECT_NE(std::string(error.what()).find("device sim0: backend: none is for simulation only"),
              std::string::npos)
        << error.what();
  }
#ifndef TANDEM_WITH_CUDA
  cluster.devices[1].backend = BackendKind::kCuda;
  try {
    make_devices(cluster);
    FAIL() << "a cuda device was made by a build without the backend";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("backend cuda is not in this build"),
              std::string::npos)
        << error.what();
  }
#endif
}

TEST(Registry, CpuDevicesTakeTheirOwnCores) {
  Cluster cluster;
  cluster.devices = {device_of(DeviceKind::kCpu, BackendKind::kCpu),
                     device_of(DeviceKind::kCpu, BackendKind::kCpu)};
  cluster.devices[0].cores = 1;
  cluster.devices[1].id = "d1";
  cluster.devices[1].cores = 1;
  const auto devices = make_devices(cluster);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->name(), "d0");
  EXPECT_EQ(devices[1]->name(), "d1");
  const auto& first = dynamic_cast<const cpu::CpuDevice&>(*devices[0]);
  const auto& second = dynamic_cast<const cpu::CpuDevice&>(*devices[1]);
  ASSERT_EQ(first.cores().size(), 1u);
  ASSERT_EQ(second.cores().size(), 1u);
  if (affinity_cores().size() > 1) {
    EXPECT_NE(first.cores()[0], second.cores()[0]);
  }
}

// What the planner prices a run's hand-offs by is what the devices say when they run.
TEST(Registry, EachBackendDeclaresTheCoresItsDevicesKeepBusy) {
  const int host_cores = static_cast<int>(affinity_cores().size());
  Cluster cluster;
  cluster.devices = {device_of(DeviceKind::kCpu, BackendKind::kCpu),
                     device_of(DeviceKind::kCpu, BackendKind::kCpu)};
  cluster.devices[0].cores = 1;
  cluster.devices[1].id = "d1";  // every core
  const auto devices = make_devices(cluster);
  ASSERT_EQ(devices.size(), 2u);
  for (size_t d = 0; d < devices.size(); ++d) {
    const DeviceSpec& spec = cluster.devices[d];
    EXPECT_EQ(backend_of(BackendKind::kCpu).busy_host_cores(spec, host_cores),
              devices[d]->busy_host_cores())
        << spec.id;
  }
  // The PJRT CPU plugin takes every core; an accelerator's worker one, whatever its backend.
  DeviceSpec plugin = device_of(DeviceKind::kCpu, BackendKind::kPjrt);
  plugin.cores = 1;
  EXPECT_EQ(backend_of(BackendKind::kPjrt).busy_host_cores(plugin, 8), 8);
  EXPECT_EQ(backend_of(BackendKind::kPjrt)
                .busy_host_cores(device_of(DeviceKind::kTpu, BackendKind::kPjrt), 8),
            1);
  EXPECT_EQ(backend_of(BackendKind::kCuda)
                .busy_host_cores(device_of(DeviceKind::kGpu, BackendKind::kCuda), 8),
            1);
  EXPECT_EQ(backend_of(BackendKind::kNone)
                .busy_host_cores(device_of(DeviceKind::kCpu, BackendKind::kNone), 8),
            8);
}

// The CPU backend says how its kernels share work among the threads by the same grains they run
// with: a cheap elementwise op on one thread below 65,536 elements, a costly one split from
// 8,192; a library's product and an unknown shape undeclared; the other backends declare none.
TEST(Registry, CpuDeclaresHowItsKernelsShareWorkAmongThreads) {
  const Backend& cpu = backend_of(BackendKind::kCpu);
  ASSERT_NE(cpu.thread_splits, nullptr);
  const auto split_of = [&](const std::string& op_type, int64_t elements) {
    const TensorType type{DType::kFloat32, {elements}};
    return cpu.thread_splits(one_node(op_type, {type}, type).graph).at(0);
  };
  EXPECT_EQ(split_of("Relu", 65535), ThreadSplit::kOneThread);
  EXPECT_EQ(split_of("Relu", 65536), ThreadSplit::kOutputRanges);
  EXPECT_EQ(split_of("Erf", 8191), ThreadSplit::kOneThread);
  EXPECT_EQ(split_of("Erf", 8192), ThreadSplit::kOutputRanges);
  EXPECT_EQ(split_of("Gelu", 8192), ThreadSplit::kOutputRanges);
  EXPECT_EQ(split_of("Softmax", 8192), ThreadSplit::kOneThread);  // splits past 8,192
  EXPECT_EQ(split_of("Softmax", 8193), ThreadSplit::kOutputRanges);
  const TensorType two_d{DType::kFloat32, {512, 512}};
  EXPECT_EQ(cpu.thread_splits(one_node("Add", {two_d, two_d}, two_d).graph).at(0),
            ThreadSplit::kOutputRanges);
  EXPECT_EQ(cpu.thread_splits(one_node("MatMul", {kMatrix, kMatrix}, kMatrix).graph).at(0),
            ThreadSplit::kUndeclared);
  const TensorType unknown{DType::kFloat32, {-1, 64}};
  EXPECT_EQ(cpu.thread_splits(one_node("Relu", {unknown}, unknown).graph).at(0),
            ThreadSplit::kUndeclared);
  EXPECT_EQ(backend_of(BackendKind::kPjrt).thread_splits, nullptr);
  EXPECT_EQ(backend_of(BackendKind::kCuda).thread_splits, nullptr);
}

}  // namespace
}  // namespace tandem
