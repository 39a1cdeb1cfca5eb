#include "devices/capabilities.h"

#include "ir/op_schema.h"

namespace tandem {

// Ops the PJRT backend lowers to StableHLO: dense math, elementwise ops and activations,
// normalisations, reductions, and static data movement. Each must have a schema (a test checks).
const std::set<std::string, std::less<>>& tpu_op_types() {
  static const std::set<std::string, std::less<>> ops = {
      // Linear algebra and pooling.
      "MatMul", "Gemm", "Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool",
      "GlobalMaxPool",
      // Elementwise arithmetic, comparisons and logic.
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Neg", "Abs", "Sign", "Reciprocal", "Sqrt", "Exp",
      "Log", "Sin", "Cos", "Erf", "Floor", "Ceil", "Round", "Max", "Min", "Sum", "Mean", "Clip",
      "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not",
      "IsInf", "IsNaN", "Where", "Cast", "CastLike", "Identity", "Dropout",
      // Activations.
      "Relu", "LeakyRelu", "PRelu", "Elu", "Celu", "Selu", "Sigmoid", "HardSigmoid", "HardSwish",
      "Tanh", "Gelu", "Softplus", "Softsign",
      // Normalisation and softmax.
      "Softmax", "LogSoftmax", "LayerNormalization",
      // Reductions.
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
      "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
      // Static data movement.
      "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice",
      "Gather", "Expand", "Tile", "Pad", "Shape", "Size", "Constant", "ConstantOfShape"};
  return ops;
}

namespace {

LoweringCheck lowering_check = nullptr;

std::string compiled_refusal(const Node& node, const Graph& graph, const OpSchema& schema,
                             bool tpu) {
  if (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan") {
    return "control flow (" + node.op_type + ") does not compile to a static XLA program";
  }
  if (schema.data_dependent_shape) return node.op_type + "'s output shape depends on data";
  if (!tpu_lowers(node.op_type)) return "no StableHLO lowering for " + node.op_type;
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[id];
      if (tpu && value.type.dtype == DType::kFloat64) {
        return "float64 " + value.name + " (TPUs have no fp64)";
      }
      if (!is_static(value.type.shape)) {
        return "dynamic shape of " + value.name + " (XLA compiles static shapes only)";
      }
    }
  }
  return lowering_check ? lowering_check(node, graph) : "";
}

}  // namespace

void set_lowering_check(LoweringCheck check) { lowering_check = check; }

bool tpu_lowers(std::string_view op_type) { return tpu_op_types().count(op_type) > 0; }

std::string cannot_run_reason(const DeviceSpec& device, const Node& node, const Graph& graph) {
  const OpSchema* schema =
      node.domain.empty() ? OpRegistry::instance().find(node.op_type) : nullptr;
  if (!schema) return "no op " + node.op_type + (node.domain.empty() ? "" : " in " + node.domain);
  const bool tpu = device.kind == DeviceKind::kTpu;
  if (!tpu && device.backend != BackendKind::kPjrt) return "";
  const std::string refusal = compiled_refusal(node, graph, *schema, tpu);
  return refusal.empty() ? "" : (tpu ? "TPU: " : "PJRT: ") + refusal;
}

}  // namespace tandem
