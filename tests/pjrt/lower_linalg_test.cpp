// The StableHLO lowering of MatMul, Gemm, Conv, BatchNormalization and pooling against the CPU
// backend on the xla-cpu-pjrt plugin.
#include <limits>

#include "backends/pjrt/lower.h"
#include "pjrt_op_util.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

using Attributes = std::map<std::string, Attribute, std::less<>>;
using Ints = std::vector<int64_t>;

Tensor f32(Shape shape, uint64_t seed) { return random(DType::kFloat32, std::move(shape), seed); }

// Signed bytes over the whole range, negatives included (random_tensor's are 0..3).
Tensor int8_ramp(Shape shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<int8_t> values;
  for (int64_t i = 0; i < count; ++i) values.push_back(static_cast<int8_t>((i * 37) % 256 - 128));
  return Tensor::from_vector(DType::kInt8, std::move(shape), values);
}

// Convolutions and products sum many terms: float32 rounding differs between the backends.
void expect_close(std::string op_type, std::vector<Tensor> inputs, Attributes attributes = {}) {
  expect_matches_cpu(
      {std::move(op_type), std::move(inputs), std::move(attributes), {}, 1, 1e-4, 1e-4});
}

// ---- MatMul ----

TEST(LowerLinalg, MatMulMatrices) { expect_close("MatMul", {f32({3, 5}, 1), f32({5, 4}, 2)}); }

TEST(LowerLinalg, MatMulVectorTimesMatrix) {
  expect_close("MatMul", {f32({5}, 1), f32({5, 4}, 2)});
}

TEST(LowerLinalg, MatMulMatrixTimesVector) {
  expect_close("MatMul", {f32({2, 3, 5}, 1), f32({5}, 2)});
}

TEST(LowerLinalg, MatMulVectorTimesVector) { expect_close("MatMul", {f32({5}, 1), f32({5}, 2)}); }

TEST(LowerLinalg, MatMulBroadcastsBatchDims) {
  expect_close("MatMul", {f32({2, 1, 3, 5}, 1), f32({4, 5, 6}, 2)});
  expect_close("MatMul", {f32({3, 5}, 3), f32({2, 2, 5, 6}, 4)});
}

// Weights whose batch dims are all 1 take the one-product path (rows of every batch at once).
TEST(LowerLinalg, MatMulBySingleWeightMatrix) {
  expect_close("MatMul", {f32({2, 3, 7, 5}, 1), f32({5, 6}, 2)});
  expect_close("MatMul", {f32({2, 3, 5}, 3), f32({1, 5, 4}, 4)});
  expect_close("MatMul", {f32({3, 5}, 5), f32({1, 1, 5, 4}, 6)});
  expect_close("MatMul", {f32({2, 3, 0}, 7), f32({0, 4}, 8)});  // nothing to sum: zeros
}

TEST(LowerLinalg, MatMulIntegersExactly) {
  expect_matches_cpu(
      {"MatMul", {random(DType::kInt32, {2, 3, 4}, 1), random(DType::kInt32, {4, 5}, 2)}});
  expect_matches_cpu(
      {"MatMul", {random(DType::kInt64, {3, 4}, 1), random(DType::kInt64, {2, 4, 5}, 2)}});
}

TEST(LowerLinalg, MatMulFusedActivations) {
  const std::vector<Attributes> activations = {
      {{"activation", std::string("Relu")}},
      {{"activation", std::string("LeakyRelu")}, {"activation_alpha", 0.2f}},
      {{"activation", std::string("LeakyRelu")}},  // default alpha 0.01
      {{"activation", std::string("HardSigmoid")},
       {"activation_alpha", 0.3f},
       {"activation_beta", 0.4f}},
      {{"activation", std::string("HardSwish")}},
      {{"activation", std::string("Sigmoid")}},
      {{"activation", std::string("Tanh")}},
      {{"activation", std::string("Gelu")}},
      {{"activation", std::string("Clip")}, {"activation_alpha", -0.5f}, {"activation_beta", 0.5f}},
      {{"activation", std::string("Clip")}, {"activation_alpha", 0.0f}},  // no upper bound
  };
  for (const Attributes& activation : activations) {
    SCOPED_TRACE(std::get<std::string>(activation.at("activation")));
    expect_close("MatMul", {f32({4, 6}, 1), f32({6, 5}, 2)}, activation);
  }
}

// ---- Gemm ----

TEST(LowerLinalg, GemmPlain) { expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2)}); }

TEST(LowerLinalg, GemmTransposes) {
  expect_close("Gemm", {f32({5, 3}, 1), f32({5, 4}, 2), f32({3, 4}, 3)}, {{"transA", int64_t{1}}});
  expect_close("Gemm", {f32({3, 5}, 1), f32({4, 5}, 2), f32({4}, 3)}, {{"transB", int64_t{1}}});
  expect_close("Gemm", {f32({5, 3}, 1), f32({4, 5}, 2)},
               {{"transA", int64_t{1}}, {"transB", int64_t{1}}});
}

// Constant weights stored [n, k] (transB, torch's nn.Linear) become a [k, n] parameter,
// transposed on the host once: the plugin packs a product's weights on every run, and packing
// them across their rows ran a 2-row product 5-6x slower.
TEST(LowerLinalg, GemmConstantTransposedWeightsAreLaidOutOnTheHost) {
  const OpCase linear{"Gemm",
                      {f32({2, 96}, 1), f32({80, 96}, 2), f32({80}, 3)},
                      {{"transB", int64_t{1}}},
                      {false, true, true},
                      1,
                      1e-4,
                      1e-4};
  expect_matches_cpu(linear);
  const LoweredGraph lowered = lower_graph(one_node_graph(linear));
  ASSERT_EQ(lowered.constants.size(), 2u);  // the weights and the bias
  EXPECT_EQ(lowered.constants[0].shape(), (Shape{96, 80}));
  EXPECT_NE(lowered.module.find("rhs_contracting_dimensions = [0]"), std::string::npos);
  // With A transposed too; and weights fed at run time, which the product reads as they are.
  expect_matches_cpu({"Gemm",
                      {f32({96, 2}, 4), f32({80, 96}, 5)},
                      {{"transA", int64_t{1}}, {"transB", int64_t{1}}},
                      {false, true},
                      1,
                      1e-4,
                      1e-4});
  expect_close("Gemm", {f32({2, 96}, 6), f32({80, 96}, 7)}, {{"transB", int64_t{1}}});
}

TEST(LowerLinalg, GemmAlphaBetaAndBroadcastC) {
  const Attributes scaled = {{"alpha", 0.5f}, {"beta", 2.0f}};
  expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2), f32({3, 4}, 3)}, scaled);
  expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2), f32({4}, 3)}, scaled);
  expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2), f32({3, 1}, 3)}, scaled);
  expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2), f32({1, 4}, 3)}, scaled);
  expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2), f32({}, 3)}, scaled);
  expect_close("Gemm", {f32({3, 5}, 1), f32({5, 4}, 2), f32({3, 4}, 3)}, {{"beta", 0.0f}});
}

TEST(LowerLinalg, GemmLinearLayerWithFusedActivation) {
  // A classifier head: [N, K] x [Nout, K]^T + bias[Nout], as exported from PyTorch.
  expect_close("Gemm", {f32({2, 64}, 1), f32({10, 64}, 2), f32({10}, 3)},
               {{"transB", int64_t{1}}, {"activation", std::string("Relu")}});
  expect_close(
      "Gemm", {f32({2, 16}, 1), f32({16, 8}, 2), f32({8}, 3)},
      {{"activation", std::string("Clip")}, {"activation_alpha", 0.0f}, {"activation_beta", 6.0f}});
}

TEST(LowerLinalg, GemmIntegersExactly) {
  expect_matches_cpu({"Gemm",
                      {random(DType::kInt64, {3, 5}, 1), random(DType::kInt64, {5, 4}, 2),
                       random(DType::kInt64, {4}, 3)}});
  // Scaled integers are truncated, as the CPU kernel does.
  expect_matches_cpu({"Gemm",
                      {random(DType::kInt32, {3, 5}, 1), random(DType::kInt32, {4, 5}, 2),
                       random(DType::kInt32, {3, 4}, 3)},
                      {{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 1.5f}}});
}

// ---- Conv ----

TEST(LowerLinalg, Conv2dPlain) {
  expect_close("Conv", {f32({1, 3, 8, 8}, 1), f32({4, 3, 3, 3}, 2)});
}

TEST(LowerLinalg, Conv1dAnd3d) {
  expect_close("Conv", {f32({2, 3, 16}, 1), f32({5, 3, 3}, 2), f32({5}, 3)},
               {{"pads", Ints{1, 2}}, {"strides", Ints{2}}});
  expect_close("Conv", {f32({1, 2, 6, 7, 8}, 1), f32({4, 2, 3, 3, 2}, 2), f32({4}, 3)},
               {{"pads", Ints{1, 0, 1, 1, 2, 0}}, {"strides", Ints{1, 2, 1}}});
}

// Windows larger than the output (a 3x3 kernel making a 2x2 map) are lowered as one matrix
// product over gathered patches, since XLA runs them slowly as convolutions.
TEST(LowerLinalg, ConvWindowLargerThanOutputAsPatches) {
  expect_matches_cpu({"Conv",
                      {f32({2, 8, 2, 2}, 1), f32({16, 8, 3, 3}, 2), f32({16}, 3)},
                      {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("Relu")}},
                      {false, true, true},
                      1,
                      1e-4,
                      1e-4});
  expect_close("Conv", {f32({1, 4, 3, 3}, 1), f32({5, 4, 3, 3}, 2)},
               {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"dilations", Ints{2, 2}}});
  expect_close("Conv", {f32({1, 3, 2}, 1), f32({4, 3, 3}, 2)}, {{"pads", Ints{1, 1}}});
  expect_close("Conv", {f32({1, 2, 2, 3, 2}, 1), f32({3, 2, 3, 3, 3}, 2)},
               {{"pads", Ints{1, 1, 1, 1, 1, 1}}});
}

TEST(LowerLinalg, ConvStridesPadsDilations) {
  expect_close("Conv", {f32({2, 3, 11, 9}, 1), f32({6, 3, 3, 2}, 2), f32({6}, 3)},
               {{"strides", Ints{2, 3}}, {"pads", Ints{1, 0, 2, 1}}, {"dilations", Ints{2, 1}}});
}

TEST(LowerLinalg, ConvGroups) {
  expect_close("Conv", {f32({1, 8, 9, 9}, 1), f32({6, 4, 3, 3}, 2), f32({6}, 3)},
               {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
}

TEST(LowerLinalg, ConvDepthwise) {
  // MobileNet's depthwise 3x3 stride 2, and a channel multiplier of 2.
  expect_close("Conv", {f32({1, 16, 14, 14}, 1), f32({16, 1, 3, 3}, 2), f32({16}, 3)},
               {{"group", int64_t{16}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_close("Conv", {f32({1, 4, 10, 10}, 1), f32({8, 1, 3, 3}, 2)},
               {{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}});
}

TEST(LowerLinalg, ConvAutoPad) {
  for (const char* auto_pad : {"SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"}) {
    SCOPED_TRACE(auto_pad);
    // Stride 2 on an odd size makes SAME's padding uneven, so UPPER and LOWER differ.
    expect_close("Conv", {f32({1, 3, 9, 10}, 1), f32({4, 3, 4, 3}, 2), f32({4}, 3)},
                 {{"auto_pad", std::string(auto_pad)}, {"strides", Ints{2, 2}}});
  }
}

TEST(LowerLinalg, ConvRealModelShapes) {
  // 3x3 same-size on 1x16x14x14.
  expect_close("Conv", {f32({1, 16, 14, 14}, 1), f32({32, 16, 3, 3}, 2), f32({32}, 3)},
               {{"pads", Ints{1, 1, 1, 1}}, {"kernel_shape", Ints{3, 3}}});
  // 1x1 projection.
  expect_close("Conv", {f32({1, 64, 14, 14}, 1), f32({16, 64, 1, 1}, 2), f32({16}, 3)});
  // ResNet's stem: 7x7 stride 2 pad 3 on an image.
  expect_close("Conv", {f32({1, 3, 224, 224}, 1), f32({16, 3, 7, 7}, 2), f32({16}, 3)},
               {{"strides", Ints{2, 2}}, {"pads", Ints{3, 3, 3, 3}}});
}

TEST(LowerLinalg, ConvFusedActivation) {
  expect_close("Conv", {f32({1, 4, 8, 8}, 1), f32({8, 4, 3, 3}, 2), f32({8}, 3)},
               {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("Relu")}});
  expect_close("Conv", {f32({1, 4, 8, 8}, 1), f32({8, 4, 3, 3}, 2)},
               {{"activation", std::string("HardSwish")}});
  expect_close(
      "Conv", {f32({1, 4, 8, 8}, 1), f32({8, 4, 1, 1}, 2), f32({8}, 3)},
      {{"activation", std::string("Clip")}, {"activation_alpha", 0.0f}, {"activation_beta", 6.0f}});
}

TEST(LowerLinalg, ConvFusedResidualBeforeActivation) {
  // A ResNet block's tail: conv + bias + shortcut, then Relu.
  expect_close("Conv",
               {f32({1, 8, 7, 7}, 1), f32({8, 8, 3, 3}, 2), f32({8}, 3), f32({1, 8, 7, 7}, 4)},
               {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("Relu")}});
  // No bias, no activation.
  expect_close("Conv",
               {f32({2, 4, 6, 6}, 1), f32({4, 4, 1, 1}, 2), Tensor(), f32({2, 4, 6, 6}, 4)});
}

// ---- ConvTranspose ----

TEST(LowerLinalg, ConvTranspose2dPlainAndWithBias) {
  expect_close("ConvTranspose", {f32({1, 3, 5, 5}, 1), f32({3, 4, 3, 3}, 2)});
  expect_close("ConvTranspose", {f32({2, 3, 4, 6}, 1), f32({3, 2, 2, 3}, 2), f32({2}, 3)});
}

TEST(LowerLinalg, ConvTranspose1dStridesPadsOutputPadding) {
  expect_close("ConvTranspose", {f32({2, 3, 7}, 1), f32({3, 5, 3}, 2), f32({5}, 3)},
               {{"strides", Ints{2}}, {"pads", Ints{1, 2}}, {"output_padding", Ints{1}}});
  expect_close("ConvTranspose", {f32({1, 2, 5}, 1), f32({2, 3, 4}, 2)},
               {{"strides", Ints{3}}, {"dilations", Ints{2}}, {"output_padding", Ints{2}}});
}

TEST(LowerLinalg, ConvTranspose2dStridesDilationsUnevenPads) {
  expect_close("ConvTranspose", {f32({2, 3, 5, 4}, 1), f32({3, 4, 3, 2}, 2), f32({4}, 3)},
               {{"strides", Ints{2, 3}},
                {"pads", Ints{1, 0, 2, 1}},
                {"dilations", Ints{2, 1}},
                {"output_padding", Ints{1, 2}}});
}

TEST(LowerLinalg, ConvTransposeGroups) {
  // Two groups of 2 inputs making 3 outputs each; depthwise (one output per channel, the
  // AveragePool gradient's form); constant weights, permuted on the host.
  expect_close("ConvTranspose", {f32({2, 4, 5, 5}, 1), f32({4, 3, 3, 3}, 2), f32({6}, 3)},
               {{"group", int64_t{2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_close("ConvTranspose", {f32({1, 6, 4, 3}, 1), f32({6, 1, 2, 2}, 2)},
               {{"group", int64_t{6}}, {"strides", Ints{2, 2}}, {"output_padding", Ints{1, 0}}});
  expect_matches_cpu({"ConvTranspose",
                      {f32({1, 6, 4, 4}, 1), f32({6, 2, 3, 3}, 2), f32({6}, 3)},
                      {{"group", int64_t{3}}, {"strides", Ints{2, 1}}, {"pads", Ints{0, 1, 1, 0}}},
                      {false, true, true},
                      1,
                      1e-4,
                      1e-4});
}

TEST(LowerLinalg, ConvTransposeAsConvInputGradient) {
  // Conv 3x3 stride 2 pad 1 of 9x8 gives 5x4; its input gradient is the ConvTranspose of the
  // output gradient, with the output_padding that makes it 9x8 again.
  const Attributes attributes = {{"strides", Ints{2, 2}},
                                 {"pads", Ints{1, 1, 1, 1}},
                                 {"output_padding", Ints{0, 1}},
                                 {"kernel_shape", Ints{3, 3}}};
  const Graph graph =
      one_node_graph({"ConvTranspose", {f32({2, 8, 5, 4}, 1), f32({8, 3, 3, 3}, 2)}, attributes});
  EXPECT_EQ(graph.values[static_cast<size_t>(graph.outputs[0])].type.shape, (Shape{2, 3, 9, 8}));
  expect_close("ConvTranspose", {f32({2, 8, 5, 4}, 1), f32({8, 3, 3, 3}, 2)}, attributes);
}

TEST(LowerLinalg, ConvTransposePadsBeyondTheKernel) {
  // pads_begin 3 > extent - 1 = 1: the padding before would be negative, the result is cropped.
  expect_close("ConvTranspose", {f32({1, 2, 6, 6}, 1), f32({2, 3, 2, 2}, 2)},
               {{"strides", Ints{2, 2}}, {"pads", Ints{3, 0, 1, 4}}});
}

TEST(LowerLinalg, ConvTransposeAutoPadAndOutputShape) {
  for (const char* auto_pad : {"SAME_UPPER", "SAME_LOWER"}) {
    SCOPED_TRACE(auto_pad);
    expect_close("ConvTranspose", {f32({1, 3, 4, 5}, 1), f32({3, 2, 4, 3}, 2), f32({2}, 3)},
                 {{"auto_pad", std::string(auto_pad)}, {"strides", Ints{2, 2}}});
  }
  expect_close("ConvTranspose", {f32({1, 8, 5, 5}, 1), f32({8, 4, 3, 3}, 2)},
               {{"output_shape", Ints{1, 4, 10, 10}}, {"strides", Ints{2, 2}}});
}

TEST(LowerLinalg, ConvTransposeFusedActivation) {
  expect_close("ConvTranspose", {f32({1, 4, 3, 3}, 1), f32({4, 2, 3, 3}, 2), f32({2}, 3)},
               {{"strides", Ints{2, 2}}, {"activation", std::string("Relu")}});
}

// ---- BatchNormalization ----

TEST(LowerLinalg, BatchNormalizationInference) {
  const auto variance = [](Shape shape, uint64_t seed) {
    Tensor t = f32(std::move(shape), seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = t.data<float>()[i] + 1.5f;
    return t;
  };
  expect_matches_cpu(
      {"BatchNormalization",
       {f32({2, 4, 5, 6}, 1), f32({4}, 2), f32({4}, 3), f32({4}, 4), variance({4}, 5)},
       {},
       {},
       1,
       1e-5,
       1e-5});
  expect_matches_cpu({"BatchNormalization",
                      {f32({3, 5}, 1), f32({5}, 2), f32({5}, 3), f32({5}, 4), variance({5}, 5)},
                      {{"epsilon", 1e-3f}},
                      {},
                      1,
                      1e-5,
                      1e-5});
  // Opset 14's running statistics pass through in inference.
  expect_matches_cpu(
      {"BatchNormalization",
       {f32({1, 3, 4, 2, 2}, 1), f32({3}, 2), f32({3}, 3), f32({3}, 4), variance({3}, 5)},
       {{"training_mode", int64_t{0}}},
       {},
       3,
       1e-5,
       1e-5});
}

// ---- MaxPool ----

TEST(LowerLinalg, MaxPool2d) {
  // ResNet's: 3x3 stride 2 pad 1.
  expect_matches_cpu(
      {"MaxPool",
       {f32({1, 8, 28, 28}, 1)},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}});
  expect_matches_cpu(
      {"MaxPool", {f32({2, 3, 8, 8}, 1)}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}});
}

TEST(LowerLinalg, MaxPoolCeilModeAndDilations) {
  expect_matches_cpu(
      {"MaxPool",
       {f32({1, 2, 9, 10}, 1)},
       {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 3}}, {"ceil_mode", int64_t{1}}}});
  expect_matches_cpu({"MaxPool",
                      {f32({1, 2, 10, 10}, 1)},
                      {{"kernel_shape", Ints{3, 3}},
                       {"strides", Ints{2, 2}},
                       {"pads", Ints{1, 1, 1, 1}},
                       {"ceil_mode", int64_t{1}}}});
  expect_matches_cpu(
      {"MaxPool",
       {f32({1, 2, 11, 11}, 1)},
       {{"kernel_shape", Ints{2, 3}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 2}}}});
}

TEST(LowerLinalg, MaxPoolAutoPad) {
  for (const char* auto_pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(auto_pad);
    expect_matches_cpu({"MaxPool",
                        {f32({1, 3, 9, 8}, 1)},
                        {{"kernel_shape", Ints{4, 3}},
                         {"strides", Ints{2, 2}},
                         {"auto_pad", std::string(auto_pad)}}});
  }
}

TEST(LowerLinalg, MaxPool1dAnd3d) {
  expect_matches_cpu({"MaxPool",
                      {f32({2, 3, 17}, 1)},
                      {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{1, 1}}}});
  expect_matches_cpu({"MaxPool",
                      {f32({1, 2, 5, 6, 7}, 1)},
                      {{"kernel_shape", Ints{2, 2, 3}},
                       {"strides", Ints{1, 2, 2}},
                       {"pads", Ints{0, 1, 1, 1, 0, 1}}}});
}

TEST(LowerLinalg, MaxPoolBytesExactly) {
  // Padding must lose to every byte, -128 included.
  const Attributes padded = {
      {"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_matches_cpu({"MaxPool", {int8_ramp({1, 2, 7, 7})}, padded});
  expect_matches_cpu({"MaxPool", {random(DType::kUInt8, {1, 2, 7, 7}, 1)}, padded});
}

// ---- MaxPool's Indices ----

// MaxPool with both outputs, the same bytes as the CPU backend's loop gives.
void expect_indices_identical(Tensor x, Attributes attributes) {
  expect_identical_to_cpu({"MaxPool", {std::move(x)}, std::move(attributes), {}, 2});
}

// Float values from a few levels, so that most windows hold ties.
Tensor few_levels(Shape shape, uint64_t seed) {
  Tensor t = random(DType::kInt64, shape, seed);
  std::vector<float> values;
  for (int64_t v : t.to_int64s()) values.push_back(static_cast<float>(v) - 1.5f);
  return Tensor::from_vector(DType::kFloat32, std::move(shape), values);
}

TEST(LowerLinalg, MaxPoolIndicesHandComputed) {
  // As tests/ops checks the CPU backend: row-major flat indices, column-major with
  // storage_order 1.
  const Tensor x = Tensor::from_vector(DType::kFloat32, {1, 1, 3, 3},
                                       std::vector<float>{1, 9, 2, 4, 3, 8, 7, 5, 6});
  for (int64_t order : {0, 1}) {
    SCOPED_TRACE(order);
    const Graph graph = one_node_graph(
        {"MaxPool", {x}, {{"kernel_shape", Ints{2, 2}}, {"storage_order", order}}, {}, 2});
    ASSERT_EQ(lowering_refusal(graph.nodes[0], graph), "");
    const std::vector<Tensor> inputs = {x};
    std::vector<Tensor> outputs = GraphExecutor(graph, cpu_plugin_device()).run(inputs);
    EXPECT_EQ(outputs[0].to_host().to_doubles(), (std::vector<double>{9, 9, 7, 8}));
    EXPECT_EQ(outputs[1].to_host().to_int64s(),
              order == 0 ? (std::vector<int64_t>{1, 1, 6, 5}) : (std::vector<int64_t>{3, 3, 2, 7}));
  }
}

TEST(LowerLinalg, MaxPoolIndicesStridesPadsBatchesAndChannels) {
  // Flat indices into the whole input: planes after the first count from their own offset.
  expect_indices_identical(
      f32({2, 3, 9, 9}, 1),
      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_indices_identical(f32({2, 4, 8, 6}, 2),
                           {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  expect_indices_identical(
      f32({1, 2, 11, 10}, 3),
      {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 3}}, {"pads", Ints{0, 1, 2, 0}}});
}

TEST(LowerLinalg, MaxPoolIndicesTiesGoToTheFirstElement) {
  // Overlapping windows (stride 1) over values of four levels: most windows tie.
  expect_indices_identical(few_levels({2, 3, 7, 7}, 1),
                           {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_indices_identical(Tensor::zeros(DType::kFloat32, {1, 2, 5, 5}),
                           {{"kernel_shape", Ints{2, 3}}, {"strides", Ints{1, 2}}});
  // Bytes of four values, where ties are everywhere.
  expect_indices_identical(random(DType::kInt8, {2, 2, 6, 6}, 4),
                           {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}});
}

TEST(LowerLinalg, MaxPoolIndicesCeilModeDilationsAutoPad) {
  expect_indices_identical(few_levels({1, 2, 10, 9}, 2), {{"kernel_shape", Ints{3, 3}},
                                                          {"strides", Ints{2, 2}},
                                                          {"pads", Ints{1, 1, 1, 1}},
                                                          {"ceil_mode", int64_t{1}}});
  expect_indices_identical(
      f32({1, 2, 11, 11}, 1),
      {{"kernel_shape", Ints{2, 3}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 2}}});
  for (const char* auto_pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(auto_pad);
    expect_indices_identical(f32({1, 3, 9, 8}, 1), {{"kernel_shape", Ints{4, 3}},
                                                    {"strides", Ints{2, 2}},
                                                    {"auto_pad", std::string(auto_pad)}});
  }
}

TEST(LowerLinalg, MaxPoolIndices1dAnd3d) {
  expect_indices_identical(few_levels({2, 3, 17}, 3),
                           {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{1, 1}}});
  expect_indices_identical(f32({2, 2, 5, 6, 7}, 1), {{"kernel_shape", Ints{2, 2, 3}},
                                                     {"strides", Ints{1, 2, 2}},
                                                     {"pads", Ints{0, 1, 1, 1, 0, 1}}});
}

TEST(LowerLinalg, MaxPoolIndicesColumnMajor) {
  const Attributes column_major = {{"kernel_shape", Ints{2, 3}},
                                   {"strides", Ints{2, 1}},
                                   {"pads", Ints{1, 0, 0, 1}},
                                   {"storage_order", int64_t{1}}};
  expect_indices_identical(few_levels({2, 3, 7, 6}, 5), column_major);
  expect_indices_identical(
      f32({1, 2, 4, 5, 3}, 6),
      {{"kernel_shape", Ints{2, 2, 2}}, {"strides", Ints{1, 2, 1}}, {"storage_order", int64_t{1}}});
}

TEST(LowerLinalg, MaxPoolIndicesWhereNothingIsTaken) {
  // The CPU's search starts at the lowest finite value and takes only larger ones: NaN, -inf
  // and that lowest value are never taken; a window of nothing else gives the lowest value and
  // its plane's first index.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float lowest = std::numeric_limits<float>::lowest();
  Tensor x = few_levels({2, 2, 6, 6}, 7);
  float* v = x.data<float>();
  for (int64_t i = 0; i < x.numel(); i += 3) v[i] = i % 2 ? nan : -inf;
  for (int64_t i = 1; i < x.numel(); i += 7) v[i] = lowest;
  for (int64_t i : {0, 1, 6, 7, 36 + 14, 36 + 15, 36 + 20, 36 + 21}) v[i] = -inf;
  expect_indices_identical(x, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  // Bytes: -128 is int8's lowest, 0 uint8's, so those are never taken.
  expect_indices_identical(
      int8_ramp({1, 2, 7, 7}),
      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_indices_identical(random(DType::kUInt8, {1, 3, 6, 6}, 9),
                           {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{1, 1}}});
}

TEST(LowerLinalg, MaxPoolIndicesAreAccepted) {
  EXPECT_EQ(refusal({"MaxPool", {f32({1, 2, 6, 6}, 1)}, {{"kernel_shape", Ints{2, 2}}}, {}, 2}),
            "");
}

// ---- AveragePool ----

TEST(LowerLinalg, AveragePoolPadding) {
  for (int64_t include : {0, 1}) {
    SCOPED_TRACE(include);
    expect_matches_cpu({"AveragePool",
                        {f32({2, 3, 9, 9}, 1)},
                        {{"kernel_shape", Ints{3, 3}},
                         {"strides", Ints{2, 2}},
                         {"pads", Ints{1, 2, 1, 0}},
                         {"count_include_pad", include}}});
  }
}

TEST(LowerLinalg, AveragePoolCeilMode) {
  for (int64_t include : {0, 1}) {
    SCOPED_TRACE(include);
    // The last window overhangs the end padding: the overhang never counts.
    expect_matches_cpu({"AveragePool",
                        {f32({1, 2, 10, 11}, 1)},
                        {{"kernel_shape", Ints{3, 3}},
                         {"strides", Ints{2, 2}},
                         {"pads", Ints{1, 1, 1, 1}},
                         {"ceil_mode", int64_t{1}},
                         {"count_include_pad", include}}});
    expect_matches_cpu({"AveragePool",
                        {f32({1, 2, 8, 9}, 1)},
                        {{"kernel_shape", Ints{2, 3}},
                         {"strides", Ints{3, 2}},
                         {"ceil_mode", int64_t{1}},
                         {"count_include_pad", include}}});
  }
}

TEST(LowerLinalg, PoolCeilModeDropsWindowStartingInPadding) {
  // 4 + 1 end pad, window 2 stride 2: a third window would start in the padding.
  const Attributes attributes = {{"kernel_shape", Ints{2, 2}},
                                 {"strides", Ints{2, 2}},
                                 {"pads", Ints{0, 0, 1, 1}},
                                 {"ceil_mode", int64_t{1}}};
  expect_matches_cpu({"MaxPool", {f32({1, 2, 4, 4}, 1)}, attributes});
  expect_matches_cpu({"AveragePool", {f32({1, 2, 4, 4}, 1)}, attributes});
}

TEST(LowerLinalg, PoolStrideBeyondWindow) {
  // Stride 3 over 1-wide windows on 5: the input's last element is never read.
  const Attributes attributes = {{"kernel_shape", Ints{1, 2}}, {"strides", Ints{3, 3}}};
  expect_matches_cpu({"MaxPool", {f32({1, 2, 5, 6}, 1)}, attributes});
  expect_matches_cpu({"AveragePool", {f32({1, 2, 5, 6}, 1)}, attributes});
}

TEST(LowerLinalg, AveragePoolAutoPadAndRanks) {
  for (const char* auto_pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(auto_pad);
    expect_matches_cpu({"AveragePool",
                        {f32({1, 3, 9, 8}, 1)},
                        {{"kernel_shape", Ints{3, 2}},
                         {"strides", Ints{2, 2}},
                         {"auto_pad", std::string(auto_pad)}}});
  }
  expect_matches_cpu({"AveragePool",
                      {f32({2, 3, 15}, 1)},
                      {{"kernel_shape", Ints{4}},
                       {"strides", Ints{3}},
                       {"pads", Ints{2, 1}},
                       {"count_include_pad", int64_t{1}}}});
  expect_matches_cpu({"AveragePool",
                      {f32({1, 2, 5, 6, 7}, 1)},
                      {{"kernel_shape", Ints{2, 3, 3}},
                       {"strides", Ints{1, 2, 2}},
                       {"pads", Ints{1, 1, 1, 0, 1, 1}}}});
  // A plain 7x7 average over a 7x7 map, as classifier heads write GlobalAveragePool.
  expect_matches_cpu({"AveragePool", {f32({1, 32, 7, 7}, 1)}, {{"kernel_shape", Ints{7, 7}}}});
}

// ---- Global pools ----

TEST(LowerLinalg, GlobalPools) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu({op, {f32({2, 8, 7, 7}, 1)}});
    expect_matches_cpu({op, {f32({2, 3, 11}, 2)}});
    expect_matches_cpu({op, {f32({1, 2, 3, 4, 5}, 3)}});
  }
}

}  // namespace
}  // namespace tandem::pjrt::testing
