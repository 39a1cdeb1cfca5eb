// Reductions and normalisations: Reduce*, ArgMax/ArgMin, Softmax, LayerNormalization,
// InstanceNormalization, LpNormalization, BatchNormalization, CumSum.
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/error.h"
#include "op_test_util.h"

namespace tandem::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor arange_f32(Shape shape) {
  std::vector<float> values(static_cast<size_t>(numel(shape)));
  std::iota(values.begin(), values.end(), 0.0f);
  return f32(std::move(shape), values);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& inputs,
            std::map<std::string, Attribute, std::less<>> attributes = {}, int opset = 21) {
  return run_op(op, inputs, std::move(attributes), 1, opset).outputs.at(0);
}

ValueInfo info(DType dtype, Shape shape, const Tensor* value = nullptr) {
  return {dtype, std::move(shape), value};
}

// ---- Reduce* ----

TEST(Reduction, ReduceSumLastAxis) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run1("ReduceSum", {x, i64({1}, {-1})}), f32({2, 1}, {6, 15}));
}

TEST(Reduction, ReduceSumAllAxesByDefault) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run1("ReduceSum", {x}, {{"keepdims", int64_t{0}}}), f32({}, {21}));
  expect_equal(run1("ReduceSum", {x}), f32({1, 1}, {21}));
}

TEST(Reduction, ReduceSumNoopWithEmptyAxes) {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  expect_equal(run1("ReduceSum", {x, i64({0}, {})}, {{"noop_with_empty_axes", int64_t{1}}}), x);
  // The element transform still applies, as in the ONNX reference.
  expect_equal(run1("ReduceSumSquare", {x}, {{"noop_with_empty_axes", int64_t{1}}}),
               f32({2, 2}, {1, 4, 9, 16}));
}

TEST(Reduction, ReduceSumInt32AndInt64) {
  const Tensor x32 = Tensor::from_vector(DType::kInt32, {2, 2}, std::vector<int32_t>{1, 2, 3, 4});
  expect_equal(run1("ReduceSum", {x32, i64({1}, {0})}),
               Tensor::from_vector(DType::kInt32, {1, 2}, std::vector<int32_t>{4, 6}));
  expect_equal(run1("ReduceSum", {i64({3}, {5, -7, 9})}, {{"keepdims", int64_t{0}}}), i64({}, {7}));
}

TEST(Reduction, ReduceMeanAxesAttributeBeforeOpset18) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor y =
      run1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}, 13);
  expect_equal(y, f32({3}, {2.5f, 3.5f, 4.5f}));
  // ReduceSum took axes as an input already in opset 13.
  expect_equal(run1("ReduceSum", {x, i64({1}, {0})}, {}, 13), f32({1, 3}, {5, 7, 9}));
}

TEST(Reduction, ReduceMeanOverSpatialDimsOfNCHW) {
  const Tensor x = arange_f32({2, 3, 4, 5});  // channel k holds 20k .. 20k+19
  const Tensor y = run1("ReduceMean", {x, i64({2}, {2, 3})});
  std::vector<float> expected;
  for (int k = 0; k < 6; ++k) expected.push_back(20.0f * k + 9.5f);
  expect_close(y, f32({2, 3, 1, 1}, expected));
}

TEST(Reduction, ReduceMaxMiddleAxis) {
  // [2, 3, 2]: reducing axis 1 takes the column-wise path with inner = 2.
  const Tensor x = f32({2, 3, 2}, {1, 9, 5, 2, 3, 4, -1, -2, -3, -4, -5, -6});
  expect_equal(run1("ReduceMax", {x, i64({1}, {1})}, {{"keepdims", int64_t{0}}}),
               f32({2, 2}, {5, 9, -1, -2}));
}

TEST(Reduction, ReduceMinInt64AndMaxBool) {
  expect_equal(run1("ReduceMin", {i64({2, 2}, {4, -3, 7, 8}), i64({1}, {1})}),
               i64({2, 1}, {-3, 7}));
  const Tensor flags = boolean({2, 2}, {0, 1, 0, 0});
  expect_equal(run1("ReduceMax", {flags, i64({1}, {1})}), boolean({2, 1}, {1, 0}));
  expect_equal(run1("ReduceMin", {boolean({2}, {1, 1})}), boolean({1}, {1}));
}

TEST(Reduction, ReduceProdL1L2SumSquareLogSum) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run1("ReduceProd", {x, i64({1}, {1})}), f32({2, 1}, {6, 120}));
  const Tensor signed_x = f32({2, 2}, {1, -2, -3, 4});
  expect_equal(run1("ReduceL1", {signed_x, i64({1}, {1})}), f32({2, 1}, {3, 7}));
  expect_close(run1("ReduceL2", {f32({2, 2}, {3, 4, 6, -8}), i64({1}, {1})}), f32({2, 1}, {5, 10}));
  expect_equal(run1("ReduceSumSquare", {signed_x, i64({1}, {1})}), f32({2, 1}, {5, 25}));
  expect_close(run1("ReduceLogSum", {f32({2, 2}, {1, 2, 3, 4}), i64({1}, {1})}),
               f32({2, 1}, {1.0986123f, 1.9459101f}));
}

TEST(Reduction, ReduceLogSumExpIsStable) {
  const Tensor x = f32({2, 2}, {1000, 1000, 0, 0});
  expect_close(run1("ReduceLogSumExp", {x, i64({1}, {1})}), f32({2, 1}, {1000.6931f, 0.6931472f}));
  // Over axis 0 the column-wise path runs.
  expect_close(run1("ReduceLogSumExp", {f32({2, 2}, {1, 2, 3, 4}), i64({1}, {0})}),
               f32({1, 2}, {3.1269280f, 4.1269280f}));
  const Tensor masked = run1("ReduceLogSumExp", {f32({2}, {-kInf, -kInf})});
  ASSERT_EQ(shape_str(masked.shape()), "1");
  EXPECT_EQ(masked.data<float>()[0], -kInf);
}

TEST(Reduction, ReduceInterleavedAxes) {
  // [2, 3, 4] over axes 0 and 2: kept and reduced dims alternate, so the input is permuted.
  const Tensor x = arange_f32({2, 3, 4});
  expect_equal(run1("ReduceSum", {x, i64({2}, {0, -1})}, {{"keepdims", int64_t{0}}}),
               f32({3}, {60, 92, 124}));
  expect_equal(run1("ReduceMax", {x, i64({2}, {2, 0})}), f32({1, 3, 1}, {15, 19, 23}));
  // [2, 3, 4, 5] over axes 0 and 2, a kept dim last: element (a, b, c, d) is 60a + 20b + 5c + d.
  std::vector<float> expected;
  for (int b = 0; b < 3; ++b) {
    for (int d = 0; d < 5; ++d) expected.push_back(300.0f + 160.0f * b + 8.0f * d);
  }
  expect_equal(
      run1("ReduceSum", {arange_f32({2, 3, 4, 5}), i64({2}, {0, 2})}, {{"keepdims", int64_t{0}}}),
      f32({3, 5}, expected));
}

TEST(Reduction, ReduceOverEmptySet) {
  const Tensor x = Tensor::zeros(DType::kFloat32, {2, 0});
  expect_equal(run1("ReduceSum", {x, i64({1}, {1})}), f32({2, 1}, {0, 0}));
  const Tensor max = run1("ReduceMax", {x, i64({1}, {1})});
  ASSERT_EQ(shape_str(max.shape()), "2x1");
  EXPECT_EQ(max.data<float>()[0], -kInf);
  EXPECT_EQ(max.data<float>()[1], -kInf);
  const Tensor mean = run1("ReduceMean", {x, i64({1}, {1})});
  EXPECT_TRUE(std::isnan(mean.data<float>()[0]));
}

TEST(Reduction, ReduceSumLongRowStaysAccurate) {
  // 2^22 elements in one row, and a [3, 2^20] batch: blocked sums on one and many threads.
  for (const Shape& shape : {Shape{1, int64_t{1} << 22}, Shape{3, int64_t{1} << 20}}) {
    std::vector<float> values(static_cast<size_t>(numel(shape)));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = 0.1f * static_cast<float>(i % 10) + 1e-3f;
    const int64_t row = shape[1];
    std::vector<float> expected;
    for (int64_t r = 0; r < shape[0]; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < row; ++i) sum += values[static_cast<size_t>(r * row + i)];
      expected.push_back(static_cast<float>(sum / static_cast<double>(row)));
    }
    expect_close(
        run1("ReduceMean", {f32(shape, values), i64({1}, {1})}, {{"keepdims", int64_t{0}}}),
        f32({shape[0]}, expected), 1e-6, 0);
  }
}

TEST(Reduction, ReduceInferKeepsDynamicDims) {
  const Tensor axes = i64({1}, {1});
  const auto out = infer_op(
      "ReduceMax",
      {info(DType::kFloat32, {kDynamicDim, 8, kDynamicDim}), info(DType::kInt64, {1}, &axes)},
      {{"keepdims", int64_t{0}}});
  EXPECT_EQ(shape_str(out.at(0).shape), "?x?");
}

TEST(Reduction, ReduceInferWithUnknownAxes) {
  const std::vector<ValueInfo> inputs{info(DType::kFloat32, {4, 1, 6}), info(DType::kInt64, {1})};
  EXPECT_EQ(shape_str(infer_op("ReduceSum", inputs).at(0).shape), "?x1x?");
  EXPECT_THROW(infer_op("ReduceSum", inputs, {{"keepdims", int64_t{0}}}), InputError);
  // An axes input known to be empty needs no value.
  const std::vector<ValueInfo> empty_axes{info(DType::kFloat32, {4, 6}), info(DType::kInt64, {0})};
  EXPECT_EQ(shape_str(infer_op("ReduceSum", empty_axes, {{"keepdims", int64_t{0}}}).at(0).shape),
            "scalar");
}

TEST(Reduction, ReduceFoldsKnownIntegers) {
  const Tensor dims = i64({3}, {2, 3, 4});
  const auto prod =
      infer_op("ReduceProd", {info(DType::kInt64, {3}, &dims)}, {{"keepdims", int64_t{0}}});
  ASSERT_TRUE(prod.at(0).value.defined());
  expect_equal(prod.at(0).value, i64({}, {24}));
  const Tensor matrix = i64({2, 2}, {1, 5, 7, 3});
  const Tensor axes = i64({1}, {0});
  const auto max = infer_op(
      "ReduceMax", {info(DType::kInt64, {2, 2}, &matrix), info(DType::kInt64, {1}, &axes)});
  expect_equal(max.at(0).value, i64({1, 2}, {7, 5}));
  const auto min = infer_op("ReduceMin", {info(DType::kInt64, {2, 2}, &matrix)},
                            {{"axes", std::vector<int64_t>{1}}}, 1, 13);
  expect_equal(min.at(0).value, i64({2, 1}, {1, 3}));
  const auto sum =
      infer_op("ReduceSum", {info(DType::kInt64, {2, 2}, &matrix)}, {{"keepdims", int64_t{0}}});
  expect_equal(sum.at(0).value, i64({}, {16}));
  // Floats are not shape arithmetic.
  const Tensor floats = f32({2}, {1, 2});
  EXPECT_FALSE(infer_op("ReduceSum", {info(DType::kFloat32, {2}, &floats)}).at(0).value.defined());
}

TEST(Reduction, ReduceRejectsBadNodes) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run1("ReduceSum", {x, i64({1}, {2})}), InputError);      // out of range
  EXPECT_THROW(run1("ReduceSum", {x, i64({2}, {1, -1})}), InputError);  // repeated
  EXPECT_THROW(run1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}}),
               InputError);                                                  // opset 21
  EXPECT_THROW(run1("ReduceMean", {x, i64({1}, {1})}, {}, 13), InputError);  // input before 18
  EXPECT_THROW(run1("ReduceSum", {boolean({2}, {1, 0})}), InputError);       // bool sum
  EXPECT_THROW(run1("ReduceSum", {x, f32({1}, {1})}), InputError);           // float axes
}

TEST(Reduction, ReduceCostsOneOpPerInputElement) {
  const OpSchema* schema = OpRegistry::instance().find("ReduceMean");
  ASSERT_NE(schema, nullptr);
  const std::vector<TensorType> inputs{{DType::kFloat32, {8, 100}}};
  const std::vector<TensorType> outputs{{DType::kFloat32, {8, 1}}};
  const OpCost cost = schema->cost(Node{}, inputs, outputs);
  EXPECT_DOUBLE_EQ(cost.flops, 800);
  EXPECT_DOUBLE_EQ(cost.bytes, 4 * (800 + 8));
  const OpCost softmax = OpRegistry::instance().find("Softmax")->cost(Node{}, inputs, inputs);
  EXPECT_DOUBLE_EQ(softmax.flops, 4000);
}

// ---- ArgMax / ArgMin ----

TEST(Reduction, ArgMaxLastAxis) {
  const Tensor x = f32({2, 4}, {1, 7, 7, 2, -1, -5, -3, -1});
  expect_equal(run1("ArgMax", {x}, {{"axis", int64_t{1}}}), i64({2, 1}, {1, 0}));
  expect_equal(
      run1("ArgMax", {x},
           {{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}}),
      i64({2}, {2, 3}));
}

TEST(Reduction, ArgMinMiddleAxis) {
  const Tensor x = i64({2, 3, 2}, {3, 1, 2, 1, 5, 0, 0, 0, 0, -1, 9, -1});
  expect_equal(run1("ArgMin", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}),
               i64({2, 2}, {1, 2, 0, 1}));
  expect_equal(run1("ArgMin", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}),
               i64({2, 1, 2}, {1, 2, 1, 2}));
}

TEST(Reduction, ArgMaxRejectsBadNodes) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(run1("ArgMax", {x}, {{"axis", int64_t{2}}}), InputError);
  EXPECT_THROW(run1("ArgMax", {x}, {{"select_last_index", int64_t{2}}}), InputError);
  EXPECT_THROW(infer_op("ArgMin", {info(DType::kFloat32, {0, 3})}), InputError);
  EXPECT_EQ(infer_op("ArgMax", {info(DType::kFloat32, {kDynamicDim, 3})}).at(0).dtype,
            DType::kInt64);
}

// ---- Softmax / LogSoftmax ----

TEST(Reduction, SoftmaxLastAxis) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  expect_close(run1("Softmax", {x}),
               f32({2, 3}, {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f}));
}

TEST(Reduction, SoftmaxFirstAxis) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  expect_close(run1("Softmax", {x}, {{"axis", int64_t{0}}}),
               f32({2, 2}, {0.11920292f, 0.11920292f, 0.88079708f, 0.88079708f}));
}

TEST(Reduction, SoftmaxIsStableAndMasks) {
  expect_close(run1("Softmax", {f32({2}, {1000, 1001})}), f32({2}, {0.26894142f, 0.73105858f}));
  expect_close(run1("Softmax", {f32({3}, {0, -kInf, 0})}), f32({3}, {0.5f, 0, 0.5f}));
}

TEST(Reduction, SoftmaxLongRowsSumToOne) {
  // Rows of 1000 elements (not a multiple of 8) over 64 rows: vector tails and threads.
  std::vector<float> values(64 * 1000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(0.37f * static_cast<float>(i)) * 20;
  const Tensor y = run1("Softmax", {f32({64, 1000}, values)});
  for (int r = 0; r < 64; ++r) {
    double sum = 0;
    double max_error = 0;
    double peak = -1e30;
    for (int i = 0; i < 1000; ++i) peak = std::max(peak, double(values[r * 1000 + i]));
    double denominator = 0;
    for (int i = 0; i < 1000; ++i) denominator += std::exp(values[r * 1000 + i] - peak);
    for (int i = 0; i < 1000; ++i) {
      const double expected = std::exp(values[r * 1000 + i] - peak) / denominator;
      const double got = y.data<float>()[r * 1000 + i];
      sum += got;
      max_error = std::max(max_error, std::abs(got - expected) / expected);
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_LT(max_error, 1e-5);
  }
}

TEST(Reduction, LogSoftmax) {
  expect_close(run1("LogSoftmax", {f32({1, 3}, {1, 2, 3})}),
               f32({1, 3}, {-2.40760596f, -1.40760596f, -0.40760596f}));
  expect_close(run1("LogSoftmax", {f32({2, 1}, {1, 3})}, {{"axis", int64_t{0}}}),
               f32({2, 1}, {std::log(0.11920292f), std::log(0.88079708f)}));
}

TEST(Reduction, SoftmaxRejectsBadNodes) {
  EXPECT_THROW(run1("Softmax", {i64({2}, {1, 2})}), InputError);
  EXPECT_THROW(run1("Softmax", {f32({2}, {1, 2})}, {{"axis", int64_t{1}}}), InputError);
  EXPECT_THROW(infer_op("Softmax", {info(DType::kFloat32, {2})}, {}, 1, 11), InputError);
  EXPECT_EQ(
      shape_str(infer_op("LogSoftmax", {info(DType::kFloat32, {kDynamicDim, 5})}).at(0).shape),
      "?x5");
}

// ---- LayerNormalization ----

TEST(Reduction, LayerNormLastAxisWithStatistics) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 6});
  const OpResult result =
      run_op("LayerNormalization", {x, f32({3}, {1, 2, 0.5f}), f32({3}, {0, 1, -1})}, {}, 3);
  expect_close(result.outputs.at(0),
               f32({2, 3}, {-1.2247357f, 1, -0.38763216f, -1.2247426f, 1, -0.38762871f}));
  expect_close(result.outputs.at(1), f32({2, 1}, {2, 4}));
  expect_close(result.outputs.at(2), f32({2, 1}, {1.2247357f, 0.61237129f}));
}

TEST(Reduction, LayerNormOverTwoAxesWithBroadcastScale) {
  const Tensor x = arange_f32({2, 2, 2});
  expect_close(run1("LayerNormalization", {x, f32({2, 2}, {1, 2, 3, 4})}, {{"axis", int64_t{1}}}),
               f32({2, 2, 2}, {-1.3416354f, -0.89442361f, 1.3416354f, 5.3665417f, -1.3416354f,
                               -0.89442361f, 1.3416354f, 5.3665417f}));
  // A scale of shape [2] broadcasts over the first normalised dim.
  expect_close(run1("LayerNormalization", {x, f32({2}, {2, -1})}, {{"axis", int64_t{-2}}}),
               f32({2, 2, 2}, {-2.6832708f, 0.44721181f, 0.89442361f, -1.3416354f, -2.6832708f,
                               0.44721181f, 0.89442361f, -1.3416354f}));
}

TEST(Reduction, LayerNormRejectsBadScale) {
  EXPECT_THROW(run1("LayerNormalization", {f32({2, 2}, {1, 2, 3, 4}), f32({3}, {1, 1, 1})}),
               InputError);
  // A scale that varies over the outer dims is not a LayerNorm scale.
  EXPECT_THROW(infer_op("LayerNormalization",
                        {info(DType::kFloat32, {4, 8}), info(DType::kFloat32, {4, 8})}, {}, 1),
               InputError);
  EXPECT_THROW(
      run1("LayerNormalization", {f32({2}, {1, 2}), f32({2}, {1, 1})}, {{"axis", int64_t{1}}}),
      InputError);
  const auto out =
      infer_op("LayerNormalization",
               {info(DType::kFloat32, {kDynamicDim, 7, 16}), info(DType::kFloat32, {16})}, {}, 2);
  EXPECT_EQ(shape_str(out.at(1).shape), "?x7x1");
}

// ---- InstanceNormalization / LpNormalization ----

TEST(Reduction, InstanceNorm) {
  const Tensor x = f32({1, 2, 3}, {1, 2, 3, 4, 4, 4});
  expect_close(run1("InstanceNormalization", {x, f32({2}, {2, 1}), f32({2}, {0.5f, -1})}),
               f32({1, 2, 3}, {-1.9494714f, 0.5f, 2.9494714f, -1, -1, -1}));
  EXPECT_THROW(run1("InstanceNormalization", {x, f32({3}, {1, 1, 1}), f32({2}, {0, 0})}),
               InputError);
}

TEST(Reduction, LpNorm) {
  expect_close(run1("LpNormalization", {f32({2, 2}, {3, 4, 0, 0})}),
               f32({2, 2}, {0.6f, 0.8f, 0, 0}));
  expect_close(run1("LpNormalization", {f32({2, 2}, {1, 2, 3, -2})},
                    {{"axis", int64_t{0}}, {"p", int64_t{1}}}),
               f32({2, 2}, {0.25f, 0.5f, 0.75f, -0.5f}));
  EXPECT_THROW(run1("LpNormalization", {f32({2}, {1, 2})}, {{"p", int64_t{3}}}), InputError);
}

// ---- BatchNormalization ----

TEST(Reduction, BatchNormInference) {
  const Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  const std::vector<Tensor> inputs{x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 2}),
                                   f32({2}, {4, 1})};
  const Tensor expected = f32({1, 2, 1, 2}, {0, 0.49999938f, 2.99999f, 4.99998f});
  expect_close(run1("BatchNormalization", inputs, {}, 13), expected);
  // Opset 15 with the running statistics requested: they pass through in inference.
  const OpResult result =
      run_op("BatchNormalization", inputs, {{"training_mode", int64_t{0}}}, 3, 15);
  expect_close(result.outputs.at(0), expected);
  expect_equal(result.outputs.at(1), inputs[3]);
  expect_equal(result.outputs.at(2), inputs[4]);
}

TEST(Reduction, BatchNormRejectsTraining) {
  const std::vector<ValueInfo> inputs{info(DType::kFloat32, {1, 2, 4, 4}),
                                      info(DType::kFloat32, {2}), info(DType::kFloat32, {2}),
                                      info(DType::kFloat32, {2}), info(DType::kFloat32, {2})};
  EXPECT_THROW(infer_op("BatchNormalization", inputs, {{"training_mode", int64_t{1}}}, 1, 15),
               InputError);
  EXPECT_THROW(infer_op("BatchNormalization", inputs, {}, 5, 13), InputError);
  std::vector<ValueInfo> wrong_channels = inputs;
  wrong_channels[3] = info(DType::kFloat32, {3});
  EXPECT_THROW(infer_op("BatchNormalization", wrong_channels), InputError);
  EXPECT_EQ(infer_op("BatchNormalization", inputs, {}, 3, 14).size(), 3u);
}

// ---- CumSum ----

TEST(Reduction, CumSumVariants) {
  const Tensor x = f32({5}, {1, 2, 3, 4, 5});
  const Tensor axis = i64({}, {0});
  expect_equal(run1("CumSum", {x, axis}), f32({5}, {1, 3, 6, 10, 15}));
  expect_equal(run1("CumSum", {x, axis}, {{"exclusive", int64_t{1}}}), f32({5}, {0, 1, 3, 6, 10}));
  expect_equal(run1("CumSum", {x, axis}, {{"reverse", int64_t{1}}}), f32({5}, {15, 14, 12, 9, 5}));
  expect_equal(run1("CumSum", {x, axis}, {{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}),
               f32({5}, {14, 12, 9, 5, 0}));
}

TEST(Reduction, CumSumAlongFirstAxisInt64) {
  const Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(
      run1("CumSum", {x, Tensor::from_vector(DType::kInt32, {1}, std::vector<int32_t>{0})}),
      i64({2, 3}, {1, 2, 3, 5, 7, 9}));
  expect_equal(run1("CumSum", {x, i64({}, {-1})}), i64({2, 3}, {1, 3, 6, 4, 9, 15}));
}

TEST(Reduction, CumSumRejectsBadAxis) {
  const Tensor x = f32({2}, {1, 2});
  EXPECT_THROW(run1("CumSum", {x, i64({}, {1})}), InputError);
  EXPECT_THROW(run1("CumSum", {x, f32({}, {0})}), InputError);
  EXPECT_THROW(run1("CumSum", {x, i64({}, {0})}, {{"exclusive", int64_t{2}}}), InputError);
}

}  // namespace
}  // namespace tandem::testing
