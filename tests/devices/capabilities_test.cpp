// What each kind of device can run: TPUs refuse data-dependent shapes, fp64 and control flow.
#include "devices/capabilities.h"

#include <gtest/gtest.h>

#include "ir/op_schema.h"

namespace tandem {
namespace {

DeviceSpec device_of(DeviceKind kind) {
  DeviceSpec device;
  device.kind = kind;
  return device;
}

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

TEST(Capabilities, TpuRefusesDataDependentShapes) {
  const OneNode nonzero = one_node("NonZero", {kMatrix}, {DType::kInt64, {2, kDynamicDim}});
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), nonzero.node(), nonzero.graph);
  EXPECT_NE(reason.find("NonZero's output shape depends on data"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kCpu), nonzero.node(), nonzero.graph));
  EXPECT_TRUE(can_run(device_of(DeviceKind::kGpu), nonzero.node(), nonzero.graph));
}

TEST(Capabilities, TpuRefusesFp64) {
  const TensorType doubles{DType::kFloat64, {64, 64}};
  const OneNode add = one_node("Add", {doubles, doubles}, doubles);
  const std::string reason = cannot_run_reason(device_of(DeviceKind::kTpu), add.node(), add.graph);
  EXPECT_NE(reason.find("float64"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kCpu), add.node(), add.graph));
  EXPECT_TRUE(can_run(device_of(DeviceKind::kGpu), add.node(), add.graph));
}

TEST(Capabilities, TpuRefusesControlFlow) {
  const OneNode branch = one_node("If", {{DType::kBool, {}}}, kMatrix);
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), branch.node(), branch.graph);
  EXPECT_NE(reason.find("control flow"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kCpu), branch.node(), branch.graph));
}

TEST(Capabilities, TpuRefusesDynamicDims) {
  const OneNode relu = one_node("Relu", {{DType::kFloat32, {kDynamicDim, 64}}},
                                {DType::kFloat32, {kDynamicDim, 64}});
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), relu.node(), relu.graph);
  EXPECT_NE(reason.find("dynamic shape"), std::string::npos) << reason;
}

TEST(Capabilities, TpuRefusesOpsWithoutLowering) {
  const OneNode scatter =
      one_node("ScatterND", {kMatrix, {DType::kInt64, {4, 2}}, {DType::kFloat32, {4}}}, kMatrix);
  const std::string reason =
      cannot_run_reason(device_of(DeviceKind::kTpu), scatter.node(), scatter.graph);
  EXPECT_NE(reason.find("no StableHLO lowering for ScatterND"), std::string::npos) << reason;
  EXPECT_TRUE(can_run(device_of(DeviceKind::kGpu), scatter.node(), scatter.graph));
}

TEST(Capabilities, TpuRunsStaticDenseMath) {
  const OneNode matmul = one_node("MatMul", {kMatrix, kMatrix}, kMatrix);
  EXPECT_TRUE(can_run(device_of(DeviceKind::kTpu), matmul.node(), matmul.graph));
  const OneNode softmax = one_node("Softmax", {kMatrix}, kMatrix);
  EXPECT_TRUE(can_run(device_of(DeviceKind::kTpu), softmax.node(), softmax.graph));
}

TEST(Capabilities, UnknownOpRunsNowhere) {
  const OneNode unknown = one_node("FrobnicateV9", {kMatrix}, kMatrix);
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu, DeviceKind::kTpu}) {
    const std::string reason = cannot_run_reason(device_of(kind), unknown.node(), unknown.graph);
    EXPECT_NE(reason.find("no op FrobnicateV9"), std::string::npos) << reason;
  }
}

TEST(Capabilities, TpuOpListNamesOnlyRegisteredOps) {
  int lowered = 0;
  for (const std::string& op_type : OpRegistry::instance().op_types()) {
    lowered += tpu_lowers(op_type);
  }
  for (const std::string& op_type : tpu_op_types()) {
    EXPECT_NE(OpRegistry::instance().find(op_type), nullptr) << op_type;
  }
  EXPECT_EQ(lowered, static_cast<int>(tpu_op_types().size()));
}

}  // namespace
}  // namespace tandem
