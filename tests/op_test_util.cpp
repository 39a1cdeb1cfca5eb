#include "op_test_util.h"

#include <cmath>

#include "backends/cpu/cpu_device.h"

namespace tandem::testing {
namespace {

Node make_node(const std::string& op_type, size_t num_inputs, const std::vector<bool>& present,
               std::map<std::string, Attribute, std::less<>> attributes, int num_outputs) {
  Node node;
  node.name = "test_" + op_type;
  node.op_type = op_type;
  node.attributes = std::move(attributes);
  for (size_t i = 0; i < num_inputs; ++i)
    node.inputs.push_back(present[i] ? static_cast<int>(i) : -1);
  for (int i = 0; i < num_outputs; ++i) node.outputs.push_back(static_cast<int>(num_inputs) + i);
  return node;
}

std::vector<InferredOutput> infer_node(const Node& node, const std::vector<ValueInfo>& inputs,
                                       int opset) {
  const OpSchema* schema = OpRegistry::instance().find(node.op_type);
  if (!schema) throw std::runtime_error("no schema for " + node.op_type);
  InferContext context(node, opset, inputs);
  return schema->infer(context);
}

}  // namespace

std::vector<InferredOutput> infer_op(const std::string& op_type,
                                     const std::vector<ValueInfo>& inputs,
                                     std::map<std::string, Attribute, std::less<>> attributes,
                                     int num_outputs, int opset) {
  std::vector<bool> present;
  for (const ValueInfo& info : inputs) present.push_back(info.present());
  Node node = make_node(op_type, inputs.size(), present, std::move(attributes), num_outputs);
  return infer_node(node, inputs, opset);
}

OpResult run_op(const std::string& op_type, const std::vector<Tensor>& inputs,
                std::map<std::string, Attribute, std::less<>> attributes, int num_outputs,
                int opset) {
  std::vector<bool> present;
  std::vector<ValueInfo> infos;
  std::vector<TensorType> input_types;
  for (const Tensor& t : inputs) {
    present.push_back(t.defined());
    infos.push_back(t.defined() ? ValueInfo{t.dtype(), t.shape(), &t} : ValueInfo{});
    input_types.push_back({t.dtype(), t.shape()});
  }
  Node node = make_node(op_type, inputs.size(), present, std::move(attributes), num_outputs);
  OpResult result;
  result.inferred = infer_node(node, infos, opset);
  const OpSchema* schema = OpRegistry::instance().find(op_type);
  std::vector<TensorType> output_types;
  for (const InferredOutput& out : result.inferred) output_types.push_back({out.dtype, out.shape});
  std::vector<const Tensor*> constants(inputs.size(), nullptr);
  for (const InferredOutput& out : result.inferred) {
    if (schema->output_aliases_input) {
      result.outputs.push_back(inputs[0].reshaped(out.shape));
    } else if (!schema->data_dependent_shape && is_static(out.shape)) {
      result.outputs.push_back(Tensor::allocate(out.dtype, out.shape));
    } else {
      result.outputs.emplace_back();
    }
  }
  if (!schema->output_aliases_input) {
    cpu::CpuDevice device;
    KernelSpec spec{node, opset, input_types, output_types, constants};
    auto kernel = device.compile(spec);
    kernel->run(inputs, result.outputs);
  }
  return result;
}

Tensor f32(Shape shape, std::vector<float> values) {
  return Tensor::from_vector(DType::kFloat32, std::move(shape), values);
}
Tensor i64(Shape shape, std::vector<int64_t> values) {
  return Tensor::from_vector(DType::kInt64, std::move(shape), values);
}
Tensor boolean(Shape shape, std::vector<uint8_t> values) {
  return Tensor::from_vector(DType::kBool, std::move(shape), values);
}

void expect_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  ASSERT_TRUE(actual.defined());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(shape_str(actual.shape()), shape_str(expected.shape()));
  const std::vector<double> a = actual.to_doubles();
  const std::vector<double> b = expected.to_doubles();
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    ASSERT_TRUE(both_nan || a[i] == b[i] || std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i]))
        << "element " << i << ": got " << a[i] << ", expected " << b[i];
  }
}

void expect_equal(const Tensor& actual, const Tensor& expected) {
  expect_close(actual, expected, 0, 0);
}

}  // namespace tandem::testing
