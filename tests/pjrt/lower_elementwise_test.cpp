// The StableHLO lowering of the elementwise family against the CPU backend on the xla-cpu-pjrt
// plugin: arithmetic, comparisons, logic, casts and activations, with NaN, infinities, integer
// wrap-around and the attribute variants models use.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "backends/cpu/cpu_device.h"
#include "backends/pjrt/lower.h"
#include "pjrt_op_util.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor f32(Shape shape, std::vector<float> values) {
  return Tensor::from_vector<float>(DType::kFloat32, std::move(shape), values);
}

template <typename T>
Tensor ints(DType dtype, Shape shape, std::vector<T> values) {
  return Tensor::from_vector<T>(dtype, std::move(shape), values);
}

Tensor bools(Shape shape, std::vector<uint8_t> values) {
  return Tensor::from_vector<uint8_t>(DType::kBool, std::move(shape), values);
}

// Signed zeros, halves, large values, infinities and NaN: shape {4, 4}.
Tensor specials() {
  return f32({4, 4}, {-kInf, -100.0f, -7.25f, -2.5f, -1.5f, -0.5f, -0.0f, 0.0f, 0.5f, 1.5f, 2.5f,
                      7.25f, 100.0f, kInf, kNaN, 1e-3f});
}

// Small integers of either sign and the extremes of `T`: shape {2, 5}.
template <typename T>
Tensor int_values(DType dtype) {
  using limits = std::numeric_limits<T>;
  if constexpr (std::is_unsigned_v<T>) {
    return ints<T>(dtype, {2, 5}, {0, 1, 2, 3, 7, 100, 127, 128, 200, limits::max()});
  } else {
    return ints<T>(dtype, {2, 5}, {limits::min(), -100, -7, -2, -1, 0, 1, 3, 100, limits::max()});
  }
}

// Nonzero divisors of either sign (unsigned: positive), broadcast along the rows: shape {5}.
template <typename T>
Tensor int_divisors(DType dtype) {
  if constexpr (std::is_unsigned_v<T>) {
    return ints<T>(dtype, {5}, {1, 2, 3, 7, 255});
  } else {
    return ints<T>(dtype, {5}, {-1, 2, -3, 7, -4});
  }
}

// ---- Arithmetic ----

TEST(LowerElementwise, ArithmeticFloat32Broadcasts) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    expect_matches_cpu(
        {op, {random(DType::kFloat32, {2, 3, 4}, 1), random(DType::kFloat32, {3, 1}, 2)}});
    expect_matches_cpu({op, {specials(), f32({4}, {2.0f, -0.0f, kInf, kNaN})}});
    expect_matches_cpu({op, {f32({}, {1.5f}), random(DType::kFloat32, {2, 3}, 3)}});
  }
}

TEST(LowerElementwise, ArithmeticFloat64) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    expect_matches_cpu({op, {random(DType::kFloat64, {3, 4}, 1), random(DType::kFloat64, {4}, 2)}});
  }
}

template <typename T>
void expect_integer_arithmetic_matches(DType dtype) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {  // wrap-around; Div truncates to zero
    expect_identical_to_cpu({op, {int_values<T>(dtype), int_divisors<T>(dtype)}});
  }
}

TEST(LowerElementwise, ArithmeticIntegersWrapAndTruncate) {
  expect_integer_arithmetic_matches<int8_t>(DType::kInt8);
  expect_integer_arithmetic_matches<uint8_t>(DType::kUInt8);
  expect_integer_arithmetic_matches<int32_t>(DType::kInt32);
  expect_integer_arithmetic_matches<int64_t>(DType::kInt64);
}

TEST(LowerElementwise, PowFloat32) {
  // Fractional exponents of positive bases, integral exponents of negative ones, specials.
  expect_matches_cpu(
      {"Pow", {random_scaled({3, 4}, 4.0f, 1), f32({4}, {2.0f, 3.0f, -1.0f, 0.0f})}});
  expect_matches_cpu({"Pow",
                      {f32({4}, {0.5f, 2.0f, 3.0f, 10.0f}), random_scaled({2, 4}, 3.0f, 2)},
                      {},
                      {},
                      1,
                      1e-5,
                      1e-6});
  expect_matches_cpu({"Pow", {specials(), f32({}, {0.5f})}});
  expect_matches_cpu({"Pow", {specials(), f32({}, {2.0f})}});
  expect_matches_cpu({"Pow", {specials(), f32({}, {-1.5f})}});
  expect_matches_cpu({"Pow", {specials(), f32({4}, {0.0f, kNaN, kInf, -kInf})}});
}

TEST(LowerElementwise, PowConstantExponents) {
  // 0.5 is a square root in the CPU kernel: sqrt(-inf) is NaN where pow(-inf, 0.5) is inf.
  for (float exponent : {0.5f, 1.0f, 2.0f, 3.0f, -2.0f}) {
    expect_matches_cpu({"Pow", {specials(), f32({}, {exponent})}, {}, {false, true}});
  }
}

TEST(LowerElementwise, PowMixedTypes) {
  const Tensor base = f32({2, 4}, {-3.0f, -1.5f, -0.5f, 0.0f, 0.5f, 1.5f, 2.0f, 10.0f});
  expect_matches_cpu({"Pow", {base, ints<int64_t>(DType::kInt64, {4}, {2, 3, -1, 5})}});
  expect_matches_cpu({"Pow", {base, ints<int32_t>(DType::kInt32, {}, {3})}});
  expect_matches_cpu({"Pow", {random(DType::kFloat64, {3, 4}, 1), f32({}, {3.0f})}});
}

TEST(LowerElementwise, PowIntegersLikeDoublePowConverted) {
  // Negative exponents truncate to 0 (or ±1), 0 ** -1 saturates, large powers round in double.
  expect_identical_to_cpu({"Pow",
                           {ints<int32_t>(DType::kInt32, {6, 1}, {-3, -2, -1, 0, 1, 5}),
                            ints<int32_t>(DType::kInt32, {7}, {-2, -1, 0, 1, 2, 13, 31})}});
  expect_identical_to_cpu({"Pow",
                           {ints<int64_t>(DType::kInt64, {6, 1}, {-3, -2, 2, 3, 7, 0}),
                            ints<int64_t>(DType::kInt64, {5}, {-1, 39, 41, 62, 63})}});
  expect_identical_to_cpu({"Pow",
                           {ints<int64_t>(DType::kInt64, {4}, {2, 3, -8, 10}),
                            f32({4}, {0.5f, 2.5f, 0.333333f, -2.0f})}});
  expect_identical_to_cpu({"Pow",
                           {ints<int32_t>(DType::kInt32, {4}, {2, 3, 4, 5}),
                            ints<uint8_t>(DType::kUInt8, {4}, {0, 1, 10, 200})}});
}

TEST(LowerElementwise, ModFloatIsFmod) {
  expect_matches_cpu({"Mod",
                      {random_scaled({3, 4}, 10.0f, 1), f32({4}, {3.0f, -3.0f, 0.7f, -2.5f})},
                      {{"fmod", int64_t{1}}}});
  expect_matches_cpu(
      {"Mod", {specials(), f32({4}, {2.0f, -1.5f, kInf, kNaN})}, {{"fmod", int64_t{1}}}});
}

template <typename T>
void expect_integer_mod_matches(DType dtype) {
  for (int64_t fmod : {0, 1}) {
    expect_identical_to_cpu(
        {"Mod", {int_values<T>(dtype), int_divisors<T>(dtype)}, {{"fmod", fmod}}});
  }
}

TEST(LowerElementwise, ModIntegersTakeDivisorOrDividendSign) {
  expect_integer_mod_matches<int8_t>(DType::kInt8);
  expect_integer_mod_matches<uint8_t>(DType::kUInt8);
  expect_integer_mod_matches<int32_t>(DType::kInt32);
  expect_integer_mod_matches<int64_t>(DType::kInt64);
}

// ---- Unary math ----

TEST(LowerElementwise, UnaryMathFloat32) {
  for (const char* op : {"Neg", "Abs", "Sign", "Reciprocal", "Sqrt", "Exp", "Log", "Sin", "Cos",
                         "Erf", "Floor", "Ceil", "Round"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu({op, {specials()}});
    expect_matches_cpu({op, {random_scaled({3, 5}, 6.0f, 7)}});
  }
}

TEST(LowerElementwise, UnaryMathFloat64) {
  for (const char* op : {"Neg", "Abs", "Sqrt", "Exp", "Log", "Erf", "Round"}) {
    expect_matches_cpu({op, {random(DType::kFloat64, {3, 5}, 7)}});
  }
}

TEST(LowerElementwise, ErfIsExactlyOneFromFour) {
  expect_identical_to_cpu(
      {"Erf", {f32({8}, {-kInf, -100.0f, -4.0f, 4.0f, 4.5f, 1e6f, kInf, kNaN})}});
}

TEST(LowerElementwise, RoundHalvesToEven) {
  expect_identical_to_cpu(
      {"Round", {f32({8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 4.50001f})}});
}

template <typename T>
void expect_integer_unary_matches(DType dtype) {
  std::vector<const char*> ops = {"Abs", "Sign"};
  if (std::is_signed_v<T>) ops.push_back("Neg");
  for (const char* op : ops) expect_identical_to_cpu({op, {int_values<T>(dtype)}});
}

TEST(LowerElementwise, UnaryMathIntegers) {
  expect_integer_unary_matches<int8_t>(DType::kInt8);
  expect_integer_unary_matches<uint8_t>(DType::kUInt8);
  expect_integer_unary_matches<int32_t>(DType::kInt32);
  expect_integer_unary_matches<int64_t>(DType::kInt64);
}

// ---- Variadic ----

TEST(LowerElementwise, VariadicFloat32) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu({op, {random(DType::kFloat32, {2, 3, 4}, 1)}});
    expect_matches_cpu({op,
                        {random(DType::kFloat32, {3, 1}, 1), random(DType::kFloat32, {2, 3, 4}, 2),
                         random(DType::kFloat32, {4}, 3)}});
    expect_matches_cpu({op,
                        {specials(), f32({4}, {0.0f, kNaN, -kInf, 1.0f}),
                         f32({4, 1}, {kNaN, 2.0f, -0.0f, 5.0f})}});
  }
}

TEST(LowerElementwise, MaxMinIntegers) {
  for (const char* op : {"Max", "Min"}) {
    expect_identical_to_cpu(
        {op, {int_values<int8_t>(DType::kInt8), int_divisors<int8_t>(DType::kInt8)}});
    expect_identical_to_cpu(
        {op, {int_values<uint8_t>(DType::kUInt8), int_divisors<uint8_t>(DType::kUInt8)}});
    expect_identical_to_cpu(
        {op,
         {int_values<int32_t>(DType::kInt32), int_divisors<int32_t>(DType::kInt32),
          ints<int32_t>(DType::kInt32, {2, 1}, {-5, 5})}});
    expect_identical_to_cpu(
        {op, {int_values<int64_t>(DType::kInt64), int_divisors<int64_t>(DType::kInt64)}});
  }
}

// ---- Clip ----

TEST(LowerElementwise, ClipWithConstantBounds) {
  const Tensor low = f32({}, {-1.0f}), high = f32({1}, {2.0f});
  expect_matches_cpu({"Clip", {specials(), low, high}, {}, {false, true, true}});
  expect_matches_cpu({"Clip", {specials(), low}, {}, {false, true}});
  expect_matches_cpu({"Clip", {specials(), Tensor(), high}, {}, {false, false, true}});
  expect_matches_cpu({"Clip", {specials()}});
  // A low bound above the high one: the low bound wins, as in the CPU kernel.
  expect_matches_cpu({"Clip", {specials(), high, low}, {}, {false, true, true}});
}

TEST(LowerElementwise, ClipWithRuntimeBounds) {
  expect_matches_cpu({"Clip", {random_scaled({3, 4}, 5.0f, 1), f32({}, {-2.0f}), f32({}, {0.5f})}});
}

TEST(LowerElementwise, ClipIntegers) {
  expect_identical_to_cpu(
      {"Clip",
       {int_values<int32_t>(DType::kInt32), ints<int32_t>(DType::kInt32, {}, {-7}),
        ints<int32_t>(DType::kInt32, {}, {100})},
       {},
       {false, true, false}});
  expect_identical_to_cpu(
      {"Clip",
       {int_values<uint8_t>(DType::kUInt8), Tensor(), ints<uint8_t>(DType::kUInt8, {}, {128})}});
  expect_identical_to_cpu(
      {"Clip", {int_values<int64_t>(DType::kInt64), ints<int64_t>(DType::kInt64, {}, {0})}});
}

// ---- Comparisons and logic ----

TEST(LowerElementwise, ComparisonsFloat32WithNaN) {
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    expect_matches_cpu({op, {specials(), f32({4}, {-0.0f, kNaN, kInf, 1.5f})}});
    expect_matches_cpu({op, {random(DType::kFloat32, {2, 3}, 1), random(DType::kFloat32, {3}, 2)}});
  }
}

TEST(LowerElementwise, ComparisonsIntegers) {
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    SCOPED_TRACE(op);
    // uint8 above 127 must compare unsigned.
    expect_matches_cpu(
        {op, {int_values<uint8_t>(DType::kUInt8), int_divisors<uint8_t>(DType::kUInt8)}});
    expect_matches_cpu(
        {op, {int_values<int8_t>(DType::kInt8), int_divisors<int8_t>(DType::kInt8)}});
    expect_matches_cpu(
        {op, {int_values<int32_t>(DType::kInt32), int_divisors<int32_t>(DType::kInt32)}});
    expect_matches_cpu(
        {op, {int_values<int64_t>(DType::kInt64), int_divisors<int64_t>(DType::kInt64)}});
  }
}

TEST(LowerElementwise, EqualBool) {
  expect_matches_cpu({"Equal", {bools({2, 2}, {0, 1, 0, 1}), bools({2, 1}, {0, 1})}});
}

TEST(LowerElementwise, LogicBool) {
  for (const char* op : {"And", "Or", "Xor"}) {
    expect_matches_cpu({op, {bools({2, 4}, {0, 1, 0, 1, 1, 1, 0, 0}), bools({4}, {0, 0, 1, 1})}});
    expect_matches_cpu({op, {random(DType::kBool, {3, 4}, 1), bools({}, {1})}});
  }
  expect_matches_cpu({"Not", {random(DType::kBool, {3, 4}, 1)}});
}

TEST(LowerElementwise, IsNaNAndIsInf) {
  expect_matches_cpu({"IsNaN", {specials()}});
  for (int64_t positive : {0, 1}) {
    for (int64_t negative : {0, 1}) {
      expect_matches_cpu(
          {"IsInf", {specials()}, {{"detect_positive", positive}, {"detect_negative", negative}}});
    }
  }
  expect_matches_cpu(
      {"IsInf", {Tensor::from_vector<double>(DType::kFloat64, {3}, {-INFINITY, 1.0, INFINITY})}});
}

TEST(LowerElementwise, WhereBroadcasts) {
  const Tensor condition = bools({3, 1}, {1, 0, 1});
  expect_matches_cpu(
      {"Where", {condition, specials().reshaped({4, 1, 4}), f32({4}, {9, 8, 7, 6})}});
  expect_matches_cpu({"Where",
                      {condition, int_values<int64_t>(DType::kInt64).reshaped({10}),
                       ints<int64_t>(DType::kInt64, {}, {-5})}});
  expect_matches_cpu(
      {"Where",
       {random(DType::kBool, {2, 3}, 1), random(DType::kBool, {3}, 2), bools({2, 1}, {1, 0})}});
}

// ---- Casts ----

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                DType::kInt64,   DType::kBool};

int64_t onnx_code(DType dtype) {
  for (int64_t code = 0; code < 32; ++code) {
    if (dtype_from_onnx_code(code) == dtype) return code;
  }
  throw std::logic_error("no ONNX code");
}

// Values that round, overflow or saturate on the way to some dtype.
const std::vector<double> kCastValues = {
    NAN,     INFINITY, -INFINITY, 0.0,     -0.0,
    1e-3,    0.5,      -0.5,      2.5,     -2.5,
    127.9,   -128.9,   255.9,     300.7,   -300.7,
    65504.0, 70000.0,  3e9,       -3e9,    16777217.0,
    1e20,    -1e20,    9.3e18,    -9.3e18, 1.0 + 1.0 / (1 << 30),
    0.1,     -32769.5, 40000.25};

Tensor cast_input(DType dtype) {
  const Shape shape{static_cast<int64_t>(kCastValues.size())};
  switch (dtype) {
    case DType::kFloat64: return Tensor::from_vector<double>(dtype, shape, kCastValues);
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<float> values(kCastValues.begin(), kCastValues.end());
      if (dtype == DType::kFloat32) return f32(shape, values);
      std::vector<uint16_t> bits;
      for (float v : values)
        bits.push_back(dtype == DType::kFloat16 ? float_to_half(v) : float_to_bfloat16(v));
      return Tensor::from_vector<uint16_t>(dtype, shape, bits);
    }
    case DType::kInt8: return int_values<int8_t>(dtype);
    case DType::kUInt8: return int_values<uint8_t>(dtype);
    case DType::kInt16: return int_values<int16_t>(dtype);
    case DType::kInt32:
      return ints<int32_t>(dtype, {8},
                           {std::numeric_limits<int32_t>::min(), -16777217, -129, -1, 0, 255,
                            16777217, std::numeric_limits<int32_t>::max()});
    case DType::kInt64:
      return ints<int64_t>(
          dtype, {8},
          {std::numeric_limits<int64_t>::min(), -4294967297, -65505, -1, 0, 9007199254740993,
           4294967296 + 300, std::numeric_limits<int64_t>::max()});
    case DType::kBool: return bools({4}, {0, 1, 1, 0});
    case DType::kUndefined: break;
  }
  throw std::logic_error("no cast input");
}

TEST(LowerElementwise, CastBetweenAllDTypes) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      expect_identical_to_cpu({"Cast", {cast_input(from)}, {{"to", onnx_code(to)}}});
    }
  }
}

TEST(LowerElementwise, CastLikeTakesTheSecondInputsDType) {
  expect_identical_to_cpu(
      {"CastLike", {cast_input(DType::kFloat32), ints<int8_t>(DType::kInt8, {1}, {0})}});
  expect_identical_to_cpu(
      {"CastLike", {cast_input(DType::kInt64), random(DType::kFloat16, {2}, 1)}});
  expect_identical_to_cpu({"CastLike", {cast_input(DType::kFloat64), bools({}, {1})}});
}

// ---- Identity and Dropout ----

TEST(LowerElementwise, Identity) {
  expect_matches_cpu({"Identity", {specials()}});
  expect_matches_cpu({"Identity", {int_values<int64_t>(DType::kInt64)}});
  expect_matches_cpu({"Identity", {random(DType::kBool, {3}, 1)}});
}

TEST(LowerElementwise, DropoutPassesThroughWithAllTrueMask) {
  expect_matches_cpu({"Dropout", {specials()}});
  expect_matches_cpu({"Dropout", {specials()}, {}, {}, 2});
  expect_matches_cpu({"Dropout",
                      {random(DType::kFloat32, {2, 3}, 1), f32({}, {0.3f}), bools({}, {0})},
                      {},
                      {false, true, true},
                      2});
  expect_matches_cpu({"Dropout", {random(DType::kFloat32, {2, 3}, 1), f32({}, {0.3f})}, {}, {}, 2});
}

TEST(LowerElementwise, DropoutRefusesARuntimeTrainingMode) {
  EXPECT_EQ(refusal({"Dropout",
                     {random(DType::kFloat32, {2, 3}, 1), f32({}, {0.3f}), bools({}, {0})},
                     {},
                     {false, true, false}}),
            "Dropout's training_mode must be a constant false");
}

TEST(LowerElementwise, IntegerDivisionByAConstantZeroIsRefused) {
  const Tensor numerators = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {7, -7, 9});
  const Tensor divisors = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {2, 0, 3});
  for (const char* op : {"Div", "Mod"}) {
    EXPECT_EQ(refusal({op, {numerators, divisors}, {}, {false, true}}),
              "integer division by a constant zero")
        << op;
  }
  expect_matches_cpu({"Div",
                      {numerators, Tensor::from_vector<int32_t>(DType::kInt32, {3}, {2, -3, 4})},
                      {},
                      {false, true}});
}

// ---- Activations ----

void expect_activation_matches(const std::string& op,
                               std::map<std::string, Attribute, std::less<>> attributes = {}) {
  SCOPED_TRACE(op);
  expect_matches_cpu({op, {specials()}, attributes});
  expect_matches_cpu({op, {random_scaled({4, 8}, 8.0f, 11)}, attributes});
}

TEST(LowerElementwise, Relu) {
  expect_activation_matches("Relu");
  expect_identical_to_cpu({"Relu", {int_values<int8_t>(DType::kInt8)}});
  expect_identical_to_cpu({"Relu", {int_values<int32_t>(DType::kInt32)}});
  expect_identical_to_cpu({"Relu", {int_values<int64_t>(DType::kInt64)}});
}

TEST(LowerElementwise, LeakyRelu) {
  expect_activation_matches("LeakyRelu");
  expect_activation_matches("LeakyRelu", {{"alpha", 0.2f}});
}

TEST(LowerElementwise, PReluSlopeBroadcasts) {
  const Tensor x = random_scaled({2, 3, 2, 2}, 4.0f, 1);
  expect_matches_cpu({"PRelu", {x, f32({3, 1, 1}, {0.1f, -0.5f, 2.0f})}});
  expect_matches_cpu({"PRelu", {x, f32({1}, {0.25f})}});
  expect_matches_cpu({"PRelu", {x, random_scaled({2, 3, 2, 2}, 1.0f, 2)}});
  expect_matches_cpu({"PRelu", {specials(), f32({4}, {0.1f, 0.2f, kNaN, 3.0f})}});
  expect_identical_to_cpu(
      {"PRelu",
       {int_values<int8_t>(DType::kInt8), ints<int8_t>(DType::kInt8, {5}, {2, 3, -1, 0, 1})}});
  expect_identical_to_cpu(
      {"PRelu", {int_values<int32_t>(DType::kInt32), ints<int32_t>(DType::kInt32, {1}, {3})}});
}

TEST(LowerElementwise, EluCeluSelu) {
  expect_activation_matches("Elu");
  expect_activation_matches("Elu", {{"alpha", 0.5f}});
  expect_activation_matches("Celu");
  expect_activation_matches("Celu", {{"alpha", 2.5f}});
  expect_activation_matches("Selu");
  expect_activation_matches("Selu", {{"alpha", 1.5f}, {"gamma", 2.0f}});
}

TEST(LowerElementwise, SigmoidAndTanh) {
  expect_activation_matches("Sigmoid");
  expect_activation_matches("Tanh");
}

TEST(LowerElementwise, HardSigmoidAndHardSwish) {
  expect_activation_matches("HardSigmoid");
  expect_activation_matches("HardSigmoid", {{"alpha", 0.5f}, {"beta", 0.25f}});
  expect_activation_matches("HardSwish");
}

TEST(LowerElementwise, GeluExactAndTanh) {
  expect_activation_matches("Gelu");
  expect_activation_matches("Gelu", {{"approximate", std::string("none")}});
  expect_activation_matches("Gelu", {{"approximate", std::string("tanh")}});
  expect_matches_cpu({"Gelu", {random(DType::kFloat64, {3, 4}, 1)}});
}

TEST(LowerElementwise, GeluOfLargeInputsIsZeroOrIdentity) {
  expect_identical_to_cpu(
      {"Gelu", {f32({8}, {-kInf, -1e6f, -1000.0f, -100.0f, 100.0f, 1000.0f, 1e6f, kInf})}});
}

TEST(LowerElementwise, SoftplusAndSoftsign) {
  expect_activation_matches("Softplus");
  expect_matches_cpu({"Softplus", {f32({6}, {-200.0f, -20.0f, 0.0f, 20.0f, 89.0f, 200.0f})}});
  expect_activation_matches("Softsign");
}

// apply_fused_activation's Clip without bounds clips infinities to the float range, as the CPU
// kernels' fused Clip does.
TEST(LowerElementwise, FusedClipWithoutBoundsClipsToTheFloatRange) {
  expect_matches_cpu({"MatMul",
                      {f32({4, 1}, {-kInf, -1.0f, 2.0f, kInf}), f32({1, 2}, {1.0f, 3.0f})},
                      {{"activation", std::string("Clip")}}});
}

TEST(LowerElementwise, EveryElementwiseOpHasARule) {
  const std::vector<std::string> lowered = lowered_op_types();
  std::istringstream ops(
      "Add Sub Mul Div Pow Mod Neg Abs Sign Reciprocal Sqrt Exp Log Sin Cos Erf Floor Ceil Round "
      "Max Min Sum Mean Clip Equal Less LessOrEqual Greater GreaterOrEqual And Or Xor Not IsInf "
      "IsNaN Where Cast CastLike Identity Dropout Relu LeakyRelu PRelu Elu Celu Selu Sigmoid "
      "HardSigmoid HardSwish Tanh Gelu Softplus Softsign");
  for (std::string op; ops >> op;) {
    EXPECT_NE(std::find(lowered.begin(), lowered.end(), op), lowered.end()) << op;
  }
}

}  // namespace
}  // namespace tandem::pjrt::testing
