// Tests of the elementwise family: schemas (shapes, dtypes, folding, errors) and CPU kernels.
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/error.h"
#include "op_test_util.h"

namespace tandem::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor i32(Shape shape, std::vector<int32_t> values) {
  return Tensor::from_vector(DType::kInt32, std::move(shape), values);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& inputs,
            std::map<std::string, Attribute, std::less<>> attributes = {}) {
  return run_op(op, inputs, std::move(attributes)).outputs[0];
}

ValueInfo info(DType dtype, Shape shape, const Tensor* value = nullptr) {
  return ValueInfo{dtype, std::move(shape), value};
}

// ---- Binary ops ----

TEST(Elementwise, AddSameShape) {
  expect_equal(run1("Add", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {10, 20, 30, 40})}),
               f32({2, 2}, {11, 22, 33, 44}));
}

TEST(Elementwise, AddChannelBias) {
  // [N,C,H,W] + [1,C,1,1]: a contiguous inner row against one value per channel.
  const Tensor x = f32({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor bias = f32({1, 2, 1, 1}, {100, 200});
  expect_equal(run1("Add", {x, bias}), f32({1, 2, 2, 2}, {100, 101, 102, 103, 204, 205, 206, 207}));
}

TEST(Elementwise, AddTrailingVector) {
  const Tensor x = f32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run1("Add", {x, f32({3}, {10, 20, 30})}), f32({2, 1, 3}, {11, 22, 33, 14, 25, 36}));
}

TEST(Elementwise, SubScalarOnEitherSide) {
  const Tensor x = f32({3}, {1, 2, 3});
  const Tensor scalar = f32({}, {10});
  expect_equal(run1("Sub", {x, scalar}), f32({3}, {-9, -8, -7}));
  expect_equal(run1("Sub", {scalar, x}), f32({3}, {9, 8, 7}));
}

TEST(Elementwise, MulOuterBroadcast) {
  // [2,1] * [1,3] -> [2,3]: both operands broadcast.
  expect_equal(run1("Mul", {f32({2, 1}, {2, 3}), f32({1, 3}, {1, 10, 100})}),
               f32({2, 3}, {2, 20, 200, 3, 30, 300}));
}

TEST(Elementwise, MulInt64Wraps) {
  const int64_t big = int64_t{1} << 62;
  expect_equal(run1("Mul", {i64({2}, {big, 3}), i64({2}, {4, -5})}), i64({2}, {0, -15}));
}

TEST(Elementwise, DivIntegerTruncatesTowardZero) {
  expect_equal(run1("Div", {i64({5}, {7, -7, 7, -7, std::numeric_limits<int64_t>::min()}),
                            i64({5}, {2, 2, -2, -2, -1})}),
               i64({5}, {3, -3, -3, 3, std::numeric_limits<int64_t>::min()}));
  expect_equal(run1("Div", {i32({2}, {9, -9}), i32({}, {4})}), i32({2}, {2, -2}));
}

TEST(Elementwise, DivFloat) {
  const Tensor out = run1("Div", {f32({3}, {1, -3, 1}), f32({3}, {4, 2, 0})});
  EXPECT_EQ(out.data<float>()[0], 0.25f);
  EXPECT_EQ(out.data<float>()[1], -1.5f);
  EXPECT_EQ(out.data<float>()[2], kInf);
}

TEST(Elementwise, DivIntegerByZeroFails) {
  EXPECT_THROW(run1("Div", {i64({2}, {1, 2}), i64({2}, {1, 0})}), InputError);
}

TEST(Elementwise, GeneralBroadcastMatchesReference) {
  // [4,1,30,10] + [1,5,1,10]: no dims merge; large enough to run on several threads.
  const Shape a_shape{4, 1, 30, 10}, b_shape{1, 5, 1, 10};
  std::vector<float> a(1200), b(50);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 1000;
  const Tensor out = run1("Add", {f32(a_shape, a), f32(b_shape, b)});
  std::vector<float> expected;
  for (int n = 0; n < 4; ++n)
    for (int c = 0; c < 5; ++c)
      for (int h = 0; h < 30; ++h)
        for (int w = 0; w < 10; ++w) expected.push_back(a[(n * 30 + h) * 10 + w] + b[c * 10 + w]);
  expect_equal(out, f32({4, 5, 30, 10}, expected));
}

TEST(Elementwise, LargeBiasAddIsParallelAndCorrect) {
  const int64_t n = 8, c = 3, hw = 64 * 64;
  std::vector<float> x(n * c * hw);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000);
  const Tensor out = run1("Add", {f32({n, c, 64, 64}, x), f32({1, c, 1, 1}, {1, 2, 3})});
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = x[i] + static_cast<float>((i / hw) % c + 1);
  expect_equal(out, f32({n, c, 64, 64}, expected));
}

TEST(Elementwise, AddEmptyTensor) {
  const Tensor out = run1("Add", {f32({0, 3}, {}), f32({3}, {1, 2, 3})});
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
}

TEST(Elementwise, Float16ArithmeticFailsClearly) {
  const Tensor half = Tensor::from_vector(DType::kFloat16, {1}, std::vector<uint16_t>{0x3C00});
  try {
    run1("Add", {half, half});
    FAIL() << "float16 Add ran on the CPU";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("test_Add (Add)"), std::string::npos) << error.what();
  }
}

TEST(Elementwise, PowFloatAndIntegerExponents) {
  expect_close(run1("Pow", {f32({3}, {2, 1.5f, 3}), f32({3}, {0.5f, -2, 2.5f})}),
               f32({3}, {1.41421356f, 0.444444444f, 15.5884573f}));
  expect_equal(run1("Pow", {f32({3}, {2, -3, 0.5f}), i64({}, {3})}), f32({3}, {8, -27, 0.125f}));
  expect_equal(run1("Pow", {f32({2}, {-3, 4}), f32({}, {2})}), f32({2}, {9, 16}));
  expect_equal(run1("Pow", {i64({2}, {3, -2}), i64({2}, {4, 3})}), i64({2}, {81, -8}));
}

TEST(Elementwise, ModFloorAndTruncated) {
  const Tensor a = i64({4}, {-7, 7, -7, 7});
  const Tensor b = i64({4}, {3, -3, -3, 3});
  expect_equal(run1("Mod", {a, b}), i64({4}, {2, -2, -1, 1}));
  expect_equal(run1("Mod", {a, b}, {{"fmod", int64_t{1}}}), i64({4}, {-1, 1, -1, 1}));
  expect_equal(run1("Mod", {f32({2}, {-7.5f, 7.5f}), f32({}, {2})}, {{"fmod", int64_t{1}}}),
               f32({2}, {-1.5f, 1.5f}));
}

TEST(Elementwise, ModFloatNeedsFmod) {
  EXPECT_THROW(run1("Mod", {f32({1}, {1}), f32({1}, {1})}), InputError);
  EXPECT_THROW(run1("Mod", {i64({1}, {1}), i64({1}, {1})}, {{"fmod", int64_t{2}}}), InputError);
}

TEST(Elementwise, Comparisons) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  const Tensor b = f32({2}, {2, 3});
  expect_equal(run1("Equal", {a, b}), boolean({2, 2}, {0, 0, 0, 0}));
  expect_equal(run1("Equal", {a, f32({1}, {3})}), boolean({2, 2}, {0, 0, 1, 0}));
  expect_equal(run1("Less", {a, b}), boolean({2, 2}, {1, 1, 0, 0}));
  expect_equal(run1("LessOrEqual", {a, b}), boolean({2, 2}, {1, 1, 0, 0}));
  expect_equal(run1("Greater", {a, b}), boolean({2, 2}, {0, 0, 1, 1}));
  expect_equal(run1("GreaterOrEqual", {a, f32({}, {2})}), boolean({2, 2}, {0, 1, 1, 1}));
  expect_equal(run1("Equal", {boolean({2}, {1, 0}), boolean({2}, {1, 1})}), boolean({2}, {1, 0}));
}

TEST(Elementwise, LogicOps) {
  const Tensor a = boolean({4}, {0, 0, 1, 1});
  const Tensor b = boolean({4}, {0, 1, 0, 1});
  expect_equal(run1("And", {a, b}), boolean({4}, {0, 0, 0, 1}));
  expect_equal(run1("Or", {a, b}), boolean({4}, {0, 1, 1, 1}));
  expect_equal(run1("Xor", {a, b}), boolean({4}, {0, 1, 1, 0}));
  EXPECT_THROW(run1("And", {f32({1}, {1}), f32({1}, {1})}), InputError);
}

TEST(Elementwise, PReluSlopePerChannel) {
  expect_equal(run1("PRelu", {f32({2, 3}, {-1, -2, 3, -4, 5, -6}), f32({3}, {0.5f, 2, 10})}),
               f32({2, 3}, {-0.5f, -4, 3, -2, 5, -60}));
  EXPECT_THROW(run1("PRelu", {f32({1, 3}, {1, 2, 3}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}),
               InputError);
}

// ---- Variadic ops ----

TEST(Elementwise, MaxMinOfThreeBroadcast) {
  const Tensor a = f32({2, 2}, {1, 5, 3, 8});
  const Tensor b = f32({2}, {4, 2});
  const Tensor c = f32({}, {3});
  expect_equal(run1("Max", {a, b, c}), f32({2, 2}, {4, 5, 4, 8}));
  expect_equal(run1("Min", {a, b, c}), f32({2, 2}, {1, 2, 3, 2}));
  expect_equal(run1("Max", {i64({2}, {-1, 9}), i64({2}, {4, 2})}), i64({2}, {4, 9}));
}

TEST(Elementwise, MaxPropagatesNaN) {
  expect_equal(run1("Max", {f32({2}, {kNaN, 1}), f32({2}, {1, kNaN})}), f32({2}, {kNaN, kNaN}));
  expect_equal(run1("Min", {f32({2}, {kNaN, 1}), f32({2}, {1, kNaN})}), f32({2}, {kNaN, kNaN}));
}

TEST(Elementwise, SumMeanAndSingleInput) {
  const Tensor a = f32({2}, {1, 2});
  const Tensor b = f32({2}, {3, 4});
  const Tensor c = f32({1}, {5});
  expect_equal(run1("Sum", {a, b, c}), f32({2}, {9, 11}));
  expect_equal(run1("Mean", {a, b, c}), f32({2}, {3, 11.0f / 3}));
  expect_equal(run1("Sum", {a}), a);
  expect_equal(run1("Max", {b}), b);
  EXPECT_THROW(run1("Sum", {i64({1}, {1}), i64({1}, {1})}), InputError);
}

// ---- Where ----

TEST(Elementwise, WhereThreeWayBroadcast) {
  const Tensor cond = boolean({2, 1}, {1, 0});
  const Tensor x = f32({1, 3}, {1, 2, 3});
  const Tensor y = f32({}, {-1});
  expect_equal(run1("Where", {cond, x, y}), f32({2, 3}, {1, 2, 3, -1, -1, -1}));
}

TEST(Elementwise, WhereMaskFillInt64AndBool) {
  const Tensor cond = boolean({4}, {1, 0, 0, 1});
  expect_equal(run1("Where", {cond, i64({4}, {1, 2, 3, 4}), i64({1}, {0})}),
               i64({4}, {1, 0, 0, 4}));
  expect_equal(run1("Where", {cond, boolean({}, {0}), boolean({4}, {1, 1, 0, 0})}),
               boolean({4}, {0, 1, 0, 0}));
}

TEST(Elementwise, WhereMovesFloat16Bytes) {
  const Tensor a = Tensor::from_vector(DType::kFloat16, {2}, std::vector<uint16_t>{0x3C00, 0x4000});
  const Tensor b = Tensor::from_vector(DType::kFloat16, {}, std::vector<uint16_t>{0});
  expect_equal(run1("Where", {boolean({2}, {0, 1}), a, b}),
               Tensor::from_vector(DType::kFloat16, {2}, std::vector<uint16_t>{0, 0x4000}));
}

TEST(Elementwise, WhereOfLongRowsKeepsEveryBitOfTheValueChosen) {
  // A causal mask over rows of 1,000 (the vector loop and its tail), NaN and -inf kept.
  const int64_t rows = 3, columns = 1000;
  std::vector<uint8_t> mask(rows * columns);
  std::vector<float> scores(rows * columns), expected(rows * columns);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) {
      const int64_t i = r * columns + c;
      mask[i] = c <= r * 400 ? 1 : 0;
      scores[i] = c % 7 == 0 ? kNaN : static_cast<float>(i) * 0.5f;
      expected[i] = mask[i] ? scores[i] : -kInf;
    }
  }
  const Tensor out = run1("Where", {boolean({1, rows, columns}, mask),
                                    f32({2, rows, columns},
                                        [&] {
                                          std::vector<float> both = scores;
                                          both.insert(both.end(), scores.begin(), scores.end());
                                          return both;
                                        }()),
                                    f32({}, {-kInf})});
  ASSERT_EQ(out.shape(), (Shape{2, rows, columns}));
  for (int64_t i = 0; i < 2 * rows * columns; ++i) {
    const float want = expected[i % (rows * columns)];
    const float got = out.data<float>()[i];
    ASSERT_EQ(std::memcmp(&want, &got, sizeof(float)), 0) << i;
  }
}

TEST(Elementwise, WhereNeedsBoolCondition) {
  EXPECT_THROW(run1("Where", {f32({1}, {1}), f32({1}, {1}), f32({1}, {2})}), InputError);
  EXPECT_THROW(run1("Where", {boolean({1}, {1}), f32({1}, {1}), i64({1}, {2})}), InputError);
}

// ---- Shape inference and folding ----

TEST(Elementwise, InferBroadcastWithDynamicDims) {
  auto shape_of = [](Shape a, Shape b) {
    return infer_op("Add", {info(DType::kFloat32, a), info(DType::kFloat32, b)})[0].shape;
  };
  EXPECT_EQ(shape_of({kDynamicDim, 3}, {4, 1}), (Shape{4, 3}));
  EXPECT_EQ(shape_of({kDynamicDim, 3}, {1, 3}), (Shape{kDynamicDim, 3}));
  EXPECT_EQ(shape_of({kDynamicDim, 1}, {kDynamicDim}), (Shape{kDynamicDim, kDynamicDim}));
  EXPECT_EQ(shape_of({2, 1, 5}, {3, 1}), (Shape{2, 3, 5}));
  EXPECT_EQ(shape_of({0, 3}, {1, 3}), (Shape{0, 3}));
  EXPECT_THROW(shape_of({2, 3}, {4}), InputError);
  const auto compare = infer_op("Less", {info(DType::kInt64, {2}), info(DType::kInt64, {})});
  EXPECT_EQ(compare[0].dtype, DType::kBool);
}

TEST(Elementwise, InferRejectsBadDtypes) {
  EXPECT_THROW(infer_op("Add", {info(DType::kFloat32, {2}), info(DType::kInt64, {2})}), InputError);
  EXPECT_THROW(infer_op("Add", {info(DType::kBool, {2}), info(DType::kBool, {2})}), InputError);
  EXPECT_THROW(infer_op("Sqrt", {info(DType::kInt64, {2})}), InputError);
  EXPECT_THROW(infer_op("Not", {info(DType::kFloat32, {2})}), InputError);
  EXPECT_THROW(infer_op("Relu", {info(DType::kFloat32, {2})}, {}, 2), InputError);
}

TEST(Elementwise, FoldIntegerArithmetic) {
  const Tensor shape = i64({3}, {2, 12, 64});
  const Tensor two = i64({}, {2});
  auto fold = [&](const std::string& op, const Tensor& a, const Tensor& b) {
    const auto out = infer_op(op, {info(a.dtype(), a.shape(), &a), info(b.dtype(), b.shape(), &b)});
    return out[0].value;
  };
  expect_equal(fold("Add", shape, two), i64({3}, {4, 14, 66}));
  expect_equal(fold("Sub", two, shape), i64({3}, {0, -10, -62}));
  expect_equal(fold("Mul", shape, two), i64({3}, {4, 24, 128}));
  expect_equal(fold("Div", i64({3}, {-7, 12, 64}), two), i64({3}, {-3, 6, 32}));
  expect_equal(fold("Equal", shape, i64({3}, {2, 0, 64})), boolean({3}, {1, 0, 1}));
  expect_equal(fold("Less", shape, i64({}, {12})), boolean({3}, {1, 0, 0}));
  expect_equal(fold("Greater", shape, i64({}, {12})), boolean({3}, {0, 0, 1}));
  expect_equal(fold("Add", i32({2}, {1, 2}), i32({}, {3})), i32({2}, {4, 5}));
  EXPECT_FALSE(fold("Div", shape, i64({}, {0})).defined());
  EXPECT_FALSE(fold("Add", f32({1}, {1}), f32({1}, {2})).defined());
}

// torch 2's exporter slices MultiheadAttention's reshape targets at a Mod of two constants.
TEST(Elementwise, FoldIntegerModBothWays) {
  const Tensor a = i64({4}, {-7, 7, -7, 7});
  const Tensor b = i64({4}, {3, -3, -3, 3});
  auto fold = [&](const Tensor& divisor, int64_t fmod) {
    return infer_op(
               "Mod",
               {info(a.dtype(), a.shape(), &a), info(divisor.dtype(), divisor.shape(), &divisor)},
               {{"fmod", fmod}})[0]
        .value;
  };
  expect_equal(fold(b, 0), i64({4}, {2, -2, -1, 1}));
  expect_equal(fold(b, 1), i64({4}, {-1, 1, -1, 1}));
  EXPECT_FALSE(fold(i64({}, {0}), 0).defined()) << "a zero divisor is left for the kernel";
}

TEST(Elementwise, FoldNeedsEveryValue) {
  const Tensor a = i64({2}, {1, 2});
  const auto out = infer_op("Add", {info(DType::kInt64, {2}, &a), info(DType::kInt64, {2})});
  EXPECT_FALSE(out[0].value.defined());
  EXPECT_EQ(out[0].shape, (Shape{2}));
}

TEST(Elementwise, FoldMaxMinWhereNegAbs) {
  const Tensor a = i64({3}, {-4, 5, 0});
  const Tensor b = i64({}, {1});
  const Tensor cond = boolean({3}, {1, 0, 1});
  auto value = [](const std::string& op, const std::vector<const Tensor*>& inputs) {
    std::vector<ValueInfo> infos;
    for (const Tensor* t : inputs) infos.push_back(info(t->dtype(), t->shape(), t));
    return infer_op(op, infos)[0].value;
  };
  expect_equal(value("Max", {&a, &b}), i64({3}, {1, 5, 1}));
  expect_equal(value("Min", {&a, &b, &a}), i64({3}, {-4, 1, 0}));
  expect_equal(value("Where", {&cond, &a, &b}), i64({3}, {-4, 1, 0}));
  expect_equal(value("Neg", {&a}), i64({3}, {4, -5, 0}));
  expect_equal(value("Abs", {&a}), i64({3}, {4, 5, 0}));
}

// ---- Unary ops ----

const Tensor kSamples = f32({5}, {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f});

TEST(Elementwise, ReluFloatAndInt) {
  expect_equal(run1("Relu", {kSamples}), f32({5}, {0, 0, 0, 0.5f, 3}));
  expect_equal(run1("Relu", {i64({3}, {-3, 0, 7})}), i64({3}, {0, 0, 7}));
}

TEST(Elementwise, Transcendentals) {
  expect_close(run1("Sigmoid", {kSamples}),
               f32({5}, {0.119202922f, 0.377540669f, 0.5f, 0.622459331f, 0.952574127f}));
  expect_close(run1("Tanh", {kSamples}),
               f32({5}, {-0.96402758f, -0.462117157f, 0, 0.462117157f, 0.995054754f}));
  expect_close(run1("Exp", {kSamples}),
               f32({5}, {0.135335283f, 0.60653066f, 1, 1.64872127f, 20.0855369f}));
  expect_close(run1("Erf", {kSamples}),
               f32({5}, {-0.995322265f, -0.520499878f, 0, 0.520499878f, 0.99997791f}));
  expect_close(run1("Sin", {kSamples}),
               f32({5}, {-0.909297427f, -0.479425539f, 0, 0.479425539f, 0.141120008f}));
  expect_close(run1("Cos", {kSamples}),
               f32({5}, {-0.416146837f, 0.877582562f, 1, 0.877582562f, -0.989992497f}));
  expect_close(run1("Log", {f32({4}, {0.5f, 1, 2, 4})}),
               f32({4}, {-0.693147181f, 0, 0.693147181f, 1.38629436f}));
  expect_close(run1("Sqrt", {f32({3}, {0.5f, 2, 4})}), f32({3}, {0.707106781f, 1.41421356f, 2}));
}

TEST(Elementwise, TranscendentalsFloat64) {
  const Tensor x = Tensor::from_vector(DType::kFloat64, {2}, std::vector<double>{-0.5, 3.0});
  expect_close(run1("Tanh", {x}),
               Tensor::from_vector(DType::kFloat64, {2},
                                   std::vector<double>{-0.46211715726000974, 0.99505475368673046}),
               1e-12, 0);
}

// The vectorised float32 approximations against the double-precision library over a sweep
// and at the edges of their ranges (subnormal results, overflow, infinities, NaN).
TEST(Elementwise, FastMathAccuracy) {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
  for (float special : {-1e-30f, 1e-30f, 50.0f, -50.0f, 88.0f, -88.0f, 88.7f, 89.0f, 100.0f,
                        -100.0f, -110.0f, kInf, -kInf, kNaN}) {
    x.push_back(special);
  }
  const Tensor input = f32({static_cast<int64_t>(x.size())}, x);
  auto check = [&](const std::string& op, double (*reference)(double)) {
    const Tensor out = run1(op, {input});
    for (size_t i = 0; i < x.size(); ++i) {
      const float expected = static_cast<float>(reference(x[i]));
      const float actual = out.data<float>()[i];
      if (std::isnan(expected) || std::isinf(expected)) {
        ASSERT_TRUE(std::isnan(expected) ? std::isnan(actual) : actual == expected)
            << op << "(" << x[i] << ") = " << actual << ", expected " << expected;
      } else {
        ASSERT_NEAR(actual, expected, 1e-6 * std::abs(expected) + 1e-37)
            << op << "(" << x[i] << ")";
      }
    }
  };
  check("Exp", [](double v) { return std::exp(v); });
  check("Tanh", [](double v) { return std::tanh(v); });
  check("Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); });
  check("Erf", [](double v) { return std::erf(v); });
}

TEST(Elementwise, NegAbsSignReciprocal) {
  expect_equal(run1("Neg", {kSamples}), f32({5}, {2, 0.5f, -0.0f, -0.5f, -3}));
  expect_equal(run1("Neg", {i64({2}, {3, -4})}), i64({2}, {-3, 4}));
  expect_equal(run1("Abs", {kSamples}), f32({5}, {2, 0.5f, 0, 0.5f, 3}));
  expect_equal(run1("Abs", {i32({2}, {-3, 4})}), i32({2}, {3, 4}));
  expect_equal(run1("Sign", {kSamples}), f32({5}, {-1, -1, 0, 1, 1}));
  expect_equal(run1("Sign", {i64({3}, {-9, 0, 9})}), i64({3}, {-1, 0, 1}));
  expect_equal(run1("Reciprocal", {f32({2}, {4, -0.5f})}), f32({2}, {0.25f, -2}));
}

TEST(Elementwise, FloorCeilRoundHalfToEven) {
  const Tensor x = f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f});
  expect_equal(run1("Round", {x}), f32({6}, {0, 2, 2, -0.0f, -2, 2}));
  expect_equal(run1("Floor", {x}), f32({6}, {0, 1, 2, -1, -2, 2}));
  expect_equal(run1("Ceil", {x}), f32({6}, {1, 2, 3, -0.0f, -1, 3}));
}

TEST(Elementwise, NotIsNaNIsInf) {
  expect_equal(run1("Not", {boolean({2}, {1, 0})}), boolean({2}, {0, 1}));
  const Tensor x = f32({4}, {1, kNaN, kInf, -kInf});
  expect_equal(run1("IsNaN", {x}), boolean({4}, {0, 1, 0, 0}));
  expect_equal(run1("IsInf", {x}), boolean({4}, {0, 0, 1, 1}));
  expect_equal(run1("IsInf", {x}, {{"detect_negative", int64_t{0}}}), boolean({4}, {0, 0, 1, 0}));
  expect_equal(run1("IsInf", {x}, {{"detect_positive", int64_t{0}}}), boolean({4}, {0, 0, 0, 1}));
}

TEST(Elementwise, SoftplusSoftsign) {
  expect_close(run1("Softplus", {kSamples}),
               f32({5}, {0.126928011f, 0.474076984f, 0.693147181f, 0.974076984f, 3.04858735f}));
  expect_close(run1("Softplus", {f32({2}, {100, -100})}), f32({2}, {100, 3.72007598e-44f}));
  expect_close(run1("Softsign", {kSamples}),
               f32({5}, {-0.666666667f, -0.333333333f, 0, 0.333333333f, 0.75f}));
}

TEST(Elementwise, ParametrisedActivations) {
  expect_close(run1("LeakyRelu", {kSamples}, {{"alpha", 0.1f}}),
               f32({5}, {-0.2f, -0.05f, 0, 0.5f, 3}));
  expect_close(run1("LeakyRelu", {kSamples}), f32({5}, {-0.02f, -0.005f, 0, 0.5f, 3}));
  expect_close(run1("Elu", {kSamples}, {{"alpha", 0.5f}}),
               f32({5}, {-0.432332358f, -0.19673467f, 0, 0.5f, 3}));
  expect_close(run1("Selu", {kSamples}),
               f32({5}, {-1.52016647f, -0.69175819f, 0, 0.525350511f, 3.15210307f}));
  expect_close(run1("Celu", {kSamples}, {{"alpha", 2.0f}}),
               f32({5}, {-1.26424112f, -0.442398434f, 0, 0.5f, 3}));
  expect_close(run1("HardSigmoid", {kSamples}, {{"alpha", 0.3f}, {"beta", 0.4f}}),
               f32({5}, {0, 0.25f, 0.4f, 0.55f, 1}));
  expect_close(run1("HardSwish", {kSamples}),
               f32({5}, {-0.333333333f, -0.208333333f, 0, 0.291666667f, 3}));
}

TEST(Elementwise, GeluExactAndTanh) {
  expect_close(run1("Gelu", {kSamples}),
               f32({5}, {-0.0455002639f, -0.154268769f, 0, 0.345731231f, 2.99595031f}));
  expect_close(run1("Gelu", {kSamples}, {{"approximate", std::string("tanh")}}),
               f32({5}, {-0.0454023059f, -0.15428599f, 0, 0.34571401f, 2.99636261f}));
}

TEST(Elementwise, GeluTanhOfLongRowsMatchesItsDefinition) {
  // 1,001 values from -20 to 20 (the vector loop and its tail), where 1 + tanh(u) cancels and
  // the exponential overflows, and infinities and NaN: 0.5 x (1 + tanh(u)) in double, written
  // as x / (1 + e^-2u) so that it does not cancel either.
  std::vector<float> x;
  for (int i = 0; i <= 1000; ++i) x.push_back(-20.0f + 0.04f * static_cast<float>(i));
  x.insert(x.end(), {kInf, -kInf, kNaN});
  const Tensor out = run1("Gelu", {f32({static_cast<int64_t>(x.size())}, x)},
                          {{"approximate", std::string("tanh")}});
  for (size_t i = 0; i + 3 < x.size(); ++i) {
    const double v = x[i];
    const double want = v / (1 + std::exp(-2 * 0.7978845608028654 * (v + 0.044715 * v * v * v)));
    // Within 1e-5 of it: fastmath::exp's error at arguments near 70 (x near -9, 1e-30 wanted;
    // through tanh, 0).
    EXPECT_NEAR(out.data<float>()[i], want, 1e-5 * std::abs(want) + 1e-37) << "x " << v;
  }
  EXPECT_EQ(out.data<float>()[x.size() - 3], kInf);
  EXPECT_TRUE(std::isnan(out.data<float>()[x.size() - 2]));  // -inf times 0
  EXPECT_TRUE(std::isnan(out.data<float>()[x.size() - 1]));
}

TEST(Elementwise, ActivationAttributeErrors) {
  EXPECT_THROW(run1("Gelu", {kSamples}, {{"approximate", std::string("erf")}}), InputError);
  EXPECT_THROW(run1("Celu", {kSamples}, {{"alpha", 0.0f}}), InputError);
  EXPECT_THROW(run1("LeakyRelu", {kSamples}, {{"alpha", int64_t{1}}}), InputError);
  EXPECT_THROW(run1("IsInf", {kSamples}, {{"detect_negative", int64_t{3}}}), InputError);
}

// ---- Clip ----

TEST(Elementwise, ClipBoundsAsInputs) {
  expect_equal(run1("Clip", {kSamples, f32({}, {-1}), f32({}, {1})}),
               f32({5}, {-1, -0.5f, 0, 0.5f, 1}));
  expect_equal(run1("Clip", {kSamples, Tensor(), f32({}, {0.25f})}),
               f32({5}, {-2, -0.5f, 0, 0.25f, 0.25f}));
  expect_equal(run1("Clip", {kSamples}), kSamples);
  expect_equal(run1("Clip", {i64({3}, {-9, 5, 9}), i64({}, {0}), i64({}, {6})}),
               i64({3}, {0, 5, 6}));
}

TEST(Elementwise, ClipRejectsNonScalarBounds) {
  EXPECT_THROW(run1("Clip", {kSamples, f32({2}, {0, 1})}), InputError);
  EXPECT_THROW(run1("Clip", {kSamples, i64({}, {0})}), InputError);
}

// ---- Cast, CastLike, Dropout ----

// ONNX TensorProto.DataType codes, as Cast's `to` attribute holds them.
constexpr int64_t kOnnxFloat = 1, kOnnxUInt8 = 2, kOnnxInt8 = 3, kOnnxInt32 = 6, kOnnxInt64 = 7,
                  kOnnxBool = 9, kOnnxFloat16 = 10, kOnnxDouble = 11, kOnnxBFloat16 = 16;

Tensor cast(const Tensor& x, int64_t to) { return run1("Cast", {x}, {{"to", to}}); }

TEST(Elementwise, CastFloatToIntegersTruncates) {
  const Tensor x = f32({4}, {1.7f, -1.7f, 2.5f, 255.0f});
  expect_equal(cast(x, kOnnxInt64), i64({4}, {1, -1, 2, 255}));
  expect_equal(cast(x, kOnnxInt32), i32({4}, {1, -1, 2, 255}));
  expect_equal(cast(x, kOnnxUInt8),
               Tensor::from_vector(DType::kUInt8, {4}, std::vector<uint8_t>{1, 255, 2, 255}));
  expect_equal(cast(x, kOnnxInt8),
               Tensor::from_vector(DType::kInt8, {4}, std::vector<int8_t>{1, -1, 2, -1}));
  expect_equal(cast(f32({2}, {kNaN, 1e30f}), kOnnxInt64),
               i64({2}, {0, std::numeric_limits<int64_t>::max()}));
}

TEST(Elementwise, CastToAndFromBool) {
  expect_equal(cast(f32({4}, {0, -0.0f, 0.5f, kNaN}), kOnnxBool), boolean({4}, {0, 0, 1, 1}));
  expect_equal(cast(i64({3}, {0, 5, -1}), kOnnxBool), boolean({3}, {0, 1, 1}));
  expect_equal(cast(boolean({2}, {1, 0}), kOnnxFloat), f32({2}, {1, 0}));
}

TEST(Elementwise, CastHalfAndBFloat16) {
  const Tensor x = f32({4}, {1.0f, -2.5f, 65504.0f, 0.1f});
  const Tensor half = cast(x, kOnnxFloat16);
  ASSERT_EQ(half.dtype(), DType::kFloat16);
  EXPECT_EQ(half.data<uint16_t>()[0], 0x3C00);
  expect_close(cast(half, kOnnxFloat), f32({4}, {1.0f, -2.5f, 65504.0f, 0.1f}), 1e-3);
  const Tensor brain = cast(x, kOnnxBFloat16);
  ASSERT_EQ(brain.dtype(), DType::kBFloat16);
  EXPECT_EQ(brain.data<uint16_t>()[0], 0x3F80);
  expect_close(cast(brain, kOnnxDouble),
               Tensor::from_vector(DType::kFloat64, {4}, std::vector<double>{1, -2.5, 65536, 0.1}),
               1e-2);
  expect_equal(cast(half, kOnnxInt64), i64({4}, {1, -2, 65504, 0}));
}

TEST(Elementwise, CastIntegersAndDoubles) {
  expect_equal(cast(i64({2}, {int64_t{1} << 33 | 5, -3}), kOnnxInt32), i32({2}, {5, -3}));
  expect_equal(cast(i32({2}, {7, -8}), kOnnxDouble),
               Tensor::from_vector(DType::kFloat64, {2}, std::vector<double>{7, -8}));
  expect_equal(run1("CastLike", {i64({2}, {1, 2}), f32({}, {0})}), f32({2}, {1, 2}));
}

TEST(Elementwise, CastFoldsKnownValues) {
  const Tensor shape = i64({2}, {3, 4});
  const auto out = infer_op("Cast", {info(DType::kInt64, {2}, &shape)}, {{"to", kOnnxFloat}});
  EXPECT_EQ(out[0].dtype, DType::kFloat32);
  expect_equal(out[0].value, f32({2}, {3, 4}));
}

TEST(Elementwise, CastRejectsUnknownTarget) {
  EXPECT_THROW(cast(kSamples, 8), InputError);  // string
  EXPECT_THROW(cast(kSamples, 99), InputError);
  EXPECT_THROW(run1("Cast", {kSamples}), InputError);
}

TEST(Elementwise, DropoutInferenceIsIdentity) {
  const OpResult result = run_op("Dropout", {kSamples, f32({}, {0.5f})}, {}, 2);
  expect_equal(result.outputs[0], kSamples);
  expect_equal(result.outputs[1], boolean({5}, {1, 1, 1, 1, 1}));
  expect_equal(run1("Dropout", {kSamples, Tensor(), boolean({}, {0})}), kSamples);
}

TEST(Elementwise, DropoutTrainingModeFails) {
  EXPECT_THROW(run1("Dropout", {kSamples, Tensor(), boolean({}, {1})}), InputError);
  EXPECT_THROW(run1("Dropout", {kSamples, f32({2}, {0.5f, 0.5f})}), InputError);
}

}  // namespace
}  // namespace tandem::testing
