// Lowering rules: elementwise arithmetic, comparisons, logic, casts and activations.
// Each rule computes what the CPU kernel computes, down to NaN handling, integer wrap-around and
// the saturation of float-to-integer casts.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "backends/pjrt/lower_rules.h"

namespace tandem::pjrt {
namespace {

using OpNames = std::pair<std::string_view, std::string_view>;

// The StableHLO name of an ONNX op in `table`.
template <size_t N>
std::string_view hlo_name(const OpNames (&table)[N], std::string_view onnx_op) {
  for (const auto& [onnx, hlo] : table) {
    if (onnx == onnx_op) return hlo;
  }
  throw std::logic_error("no StableHLO op for " + std::string(onnx_op));
}

// Input `i` broadcast to output 0's shape, in its own dtype.
HloValue broadcast_operand(LowerContext& context, const Node& node, size_t i) {
  return broadcast_input(context, node, i, context.input_type(node, i).dtype);
}

HloValue zeros_like(HloBuilder& b, const HloValue& x) { return b.splat(x.dtype, x.shape, 0); }

// An int64 constant of `shape`; splat() goes through double, which cannot hold INT64_MAX.
HloValue int64_splat(HloBuilder& b, const Shape& shape, int64_t value) {
  return b.broadcast_to(b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {value})),
                        shape);
}

// Float to int64 as the CPU kernel converts: truncation toward zero, saturating at the int64
// limits, NaN to 0. XLA leaves out-of-range conversions implementation-defined, so the limits
// are selected explicitly.
HloValue float_to_int64(HloBuilder& b, const HloValue& x) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  const HloValue truncated = b.convert(x, DType::kInt64);
  const HloValue high =
      b.select(b.compare("GE", x, b.splat(x.dtype, x.shape, kTwoTo63)),
               int64_splat(b, x.shape, std::numeric_limits<int64_t>::max()), truncated);
  const HloValue low = b.select(b.compare("LT", x, b.splat(x.dtype, x.shape, -kTwoTo63)),
                                int64_splat(b, x.shape, std::numeric_limits<int64_t>::min()), high);
  return b.select(b.compare("NE", x, x), int64_splat(b, x.shape, 0), low);
}

bool is_half_float(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// CHLO's erf (StableHLO has none). Below float64 it is exactly ±1 from |x| = 4 on, as in the
// CPU kernel: XLA's float32 erf stops 3 ulps short of 1, which Gelu would scale by x.
HloValue erf(HloBuilder& b, const HloValue& x) {
  const HloValue approximation = b.unary("chlo.erf", x);
  if (x.dtype == DType::kFloat64) return approximation;
  const HloValue saturated = b.compare("GE", b.unary("abs", x), b.splat(x.dtype, x.shape, 4));
  return b.select(saturated, b.unary("sign", x), approximation);
}

// ONNX Cast by the CPU kernel's rules: 16-bit floats go through float32 both ways, anything to
// bool is `!= 0` (NaN is true), floats to integers saturate at int64 and then wrap like an
// integer conversion.
HloValue cast(HloBuilder& b, HloValue x, DType to) {
  if (x.dtype == to) return x;
  if (is_half_float(x.dtype)) x = b.convert(x, DType::kFloat32);
  if (to == DType::kBool) return b.compare("NE", x, zeros_like(b, x));
  if (is_half_float(to)) x = b.convert(x, DType::kFloat32);
  if (is_integer(to) && is_floating(x.dtype)) x = float_to_int64(b, x);
  return b.convert(x, to);
}

constexpr OpNames kBinaryOps[] = {{"Add", "add"},    {"Sub", "subtract"}, {"Mul", "multiply"},
                                  {"Div", "divide"}, {"And", "and"},      {"Or", "or"},
                                  {"Xor", "xor"}};

// XLA folds an integer division by a constant at compile time, and a constant zero divisor
// kills the process there (SIGFPE in the plugin): such a node stays on an eager device, which
// reports the division by zero as an error.
void refuse_constant_zero_divisor(const LowerContext& context, const Node& node) {
  const Tensor* divisor = context.constant(node, 1);
  if (!divisor || is_floating(divisor->dtype())) return;
  for (double value : divisor->to_doubles()) {
    if (value == 0) throw LoweringRefused("integer division by a constant zero");
  }
}

// One StableHLO op on broadcast operands. Integer Div truncates toward zero as in C, and
// add/subtract/multiply wrap on overflow as the CPU kernels do.
void lower_binary(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  if (node.op_type == "Div") refuse_constant_zero_divisor(context, node);
  context.set_output(
      node, 0,
      b.binary(hlo_name(kBinaryOps, node.op_type), broadcast_operand(context, node, 0),
               broadcast_operand(context, node, 1)));
}

constexpr OpNames kComparisons[] = {{"Equal", "EQ"},
                                    {"Less", "LT"},
                                    {"LessOrEqual", "LE"},
                                    {"Greater", "GT"},
                                    {"GreaterOrEqual", "GE"}};

void lower_comparison(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  context.set_output(
      node, 0,
      b.compare(hlo_name(kComparisons, node.op_type), broadcast_operand(context, node, 0),
                broadcast_operand(context, node, 1)));
}

// The base's dtype for the result. float32 ** float32 is a float32 power; every other pairing is
// computed in double and converted back (integers by Cast's rules), as the CPU kernel does.
void lower_pow(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue base = broadcast_operand(context, node, 0);
  const HloValue exponent = broadcast_operand(context, node, 1);
  HloValue power;
  if (base.dtype == DType::kFloat32 && exponent.dtype == DType::kFloat32) {
    power = b.binary("power", base, exponent);
  } else {
    const HloValue wide =
        b.binary("power", cast(b, base, DType::kFloat64), cast(b, exponent, DType::kFloat64));
    power = cast(b, wide, base.dtype);
  }
  // The CPU kernel (like ONNX Runtime) computes a one-element exponent of 0.5 on a float base
  // of the output's shape as a square root, which differs from pow at -inf (NaN, not inf).
  const bool sqrt_path = is_floating(base.dtype) && numel(context.input_type(node, 1).shape) == 1 &&
                         context.input_type(node, 0).shape == base.shape;
  if (sqrt_path) {
    const HloValue half = b.compare("EQ", cast(b, exponent, DType::kFloat64),
                                    b.splat(DType::kFloat64, base.shape, 0.5));
    power = b.select(half, b.unary("sqrt", base), power);
  }
  context.set_output(node, 0, power);
}

// fmod=1: the remainder has the dividend's sign (C's fmod and %), StableHLO's remainder.
// fmod=0 (integers only): the divisor's sign, as Python's %.
void lower_mod(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  refuse_constant_zero_divisor(context, node);
  const HloValue a = broadcast_operand(context, node, 0);
  const HloValue divisor = broadcast_operand(context, node, 1);
  const HloValue remainder = b.binary("remainder", a, divisor);
  const bool floor_mod = node.attr_int("fmod", 0) == 0 && a.dtype != DType::kUInt8;
  if (!floor_mod) {
    context.set_output(node, 0, remainder);
    return;
  }
  const HloValue zero = zeros_like(b, a);
  const HloValue signs_differ =
      b.compare("NE", b.compare("LT", remainder, zero), b.compare("LT", divisor, zero));
  const HloValue adjust = b.binary("and", b.compare("NE", remainder, zero), signs_differ);
  context.set_output(node, 0, b.select(adjust, b.binary("add", remainder, divisor), remainder));
}

constexpr OpNames kUnaryOps[] = {
    {"Neg", "negate"},
    {"Sqrt", "sqrt"},
    {"Exp", "exponential"},
    {"Log", "log"},
    {"Sin", "sine"},
    {"Cos", "cosine"},
    {"Floor", "floor"},
    {"Ceil", "ceil"},
    {"Round", "round_nearest_even"},  // halves to even, as std::nearbyint
    {"Not", "not"}};

void lower_unary(LowerContext& context, const Node& node) {
  context.set_output(
      node, 0, context.builder().unary(hlo_name(kUnaryOps, node.op_type), context.input(node, 0)));
}

void lower_erf(LowerContext& context, const Node& node) {
  context.set_output(node, 0, erf(context.builder(), context.input(node, 0)));
}

void lower_abs(LowerContext& context, const Node& node) {
  const HloValue x = context.input(node, 0);
  // StableHLO's abs takes signed types only; an unsigned value is its own magnitude.
  context.set_output(node, 0, x.dtype == DType::kUInt8 ? x : context.builder().unary("abs", x));
}

void lower_sign(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  // StableHLO's sign takes signed types only (and keeps NaN, as the CPU kernel does).
  context.set_output(node, 0,
                     x.dtype == DType::kUInt8
                         ? b.convert(b.compare("GT", x, zeros_like(b, x)), x.dtype)
                         : b.unary("sign", x));
}

void lower_reciprocal(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  context.set_output(node, 0, b.binary("divide", b.splat(x.dtype, x.shape, 1), x));
}

// Max and Min as the CPU kernel folds them: the later operand wins when it is larger (smaller)
// or NaN, so NaN propagates from either side. XLA's maximum and minimum on CPU keep the first
// operand when the second is NaN.
HloValue extremum(HloBuilder& b, std::string_view op, const HloValue& kept, const HloValue& next) {
  HloValue take_next = b.compare(op == "Max" ? "GT" : "LT", next, kept);
  if (is_floating(next.dtype)) take_next = b.binary("or", take_next, b.compare("NE", next, next));
  return b.select(take_next, next, kept);
}

// Folds the broadcast inputs left to right, as the CPU kernel does.
void lower_variadic(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const bool sum = node.op_type == "Sum" || node.op_type == "Mean";
  HloValue result = broadcast_operand(context, node, 0);
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const HloValue next = broadcast_operand(context, node, i);
    result = sum ? b.binary("add", result, next) : extremum(b, node.op_type, result, next);
  }
  if (node.op_type == "Mean") {
    const double count = static_cast<double>(node.inputs.size());
    result = b.binary("divide", result, b.splat(result.dtype, result.shape, count));
  }
  context.set_output(node, 0, result);
}

// The largest finite value of a float dtype.
double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return std::numeric_limits<double>::max();
    case DType::kFloat16: return 65504.0;
    case DType::kBFloat16: return 3.3895313892515355e38;
    default: return std::numeric_limits<float>::max();
  }
}

// x < low ? low : (x > high ? high : x), so NaN stays NaN. An absent bound of a float type is
// the type's finite range, as in the CPU kernel (and ONNX Runtime): infinities clip to it.
void lower_clip(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const auto bound = [&](size_t i, double fallback) -> std::optional<HloValue> {
    if (context.has_input(node, i)) {
      return b.broadcast_to(b.reshape(context.input(node, i), {}), x.shape);
    }
    if (is_floating(x.dtype)) return b.splat(x.dtype, x.shape, fallback);
    return std::nullopt;  // the integer range clips nothing
  };
  HloValue y = x;
  if (const auto high = bound(2, largest_finite(x.dtype))) {
    y = b.select(b.compare("GT", x, *high), *high, y);
  }
  if (const auto low = bound(1, -largest_finite(x.dtype))) {
    y = b.select(b.compare("LT", x, *low), *low, y);
  }
  context.set_output(node, 0, y);
}

void lower_is_nan(LowerContext& context, const Node& node) {
  const HloValue x = context.input(node, 0);
  context.set_output(node, 0, context.builder().compare("NE", x, x));
}

void lower_is_inf(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const double inf = std::numeric_limits<double>::infinity();
  HloValue result = b.splat(DType::kBool, x.shape, 0);
  if (node.attr_int("detect_positive", 1) != 0) {
    result = b.binary("or", result, b.compare("EQ", x, b.splat(x.dtype, x.shape, inf)));
  }
  if (node.attr_int("detect_negative", 1) != 0) {
    result = b.binary("or", result, b.compare("EQ", x, b.splat(x.dtype, x.shape, -inf)));
  }
  context.set_output(node, 0, result);
}

void lower_where(LowerContext& context, const Node& node) {
  context.set_output(node, 0,
                     context.builder().select(broadcast_operand(context, node, 0),
                                              broadcast_operand(context, node, 1),
                                              broadcast_operand(context, node, 2)));
}

// Cast and CastLike: the target is the output's dtype.
void lower_cast(LowerContext& context, const Node& node) {
  context.set_output(
      node, 0, cast(context.builder(), context.input(node, 0), context.output_type(node, 0).dtype));
}

void lower_identity(LowerContext& context, const Node& node) {
  context.set_output(node, 0, context.input(node, 0));
}

// Inference only: the input passes through and the optional mask keeps everything. A
// training_mode known only at run time may be true, which the CPU kernel rejects.
void lower_dropout(LowerContext& context, const Node& node) {
  if (context.has_input(node, 2)) {
    const Tensor* training = context.constant(node, 2);
    if (!training || training->to_int64s().at(0) != 0) {
      throw LoweringRefused("Dropout's training_mode must be a constant false");
    }
  }
  const HloValue x = context.input(node, 0);
  context.set_output(node, 0, x);
  if (context.has_output(node, 1)) {
    context.set_output(node, 1, context.builder().splat(DType::kBool, x.shape, 1));
  }
}

// ---- Activations ----

// Whether x < 0 (or > 0): the CPU kernels take the linear branch for NaN, which keeps it.
HloValue negative(HloBuilder& b, const HloValue& x) { return b.compare("LT", x, zeros_like(b, x)); }
HloValue positive(HloBuilder& b, const HloValue& x) { return b.compare("GT", x, zeros_like(b, x)); }

// The ops apply_activation covers, with their ONNX attribute defaults.
void lower_listed_activation(LowerContext& context, const Node& node) {
  const float alpha = node.attr_float("alpha", node.op_type == "LeakyRelu" ? 0.01f : 0.2f);
  const float beta = node.attr_float("beta", 0.5f);
  context.set_output(
      node, 0,
      apply_activation(context.builder(), context.input(node, 0), node.op_type, alpha, beta));
}

void lower_prelu(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const HloValue slope = broadcast_operand(context, node, 1);
  context.set_output(node, 0, b.select(negative(b, x), b.binary("multiply", slope, x), x));
}

void lower_elu(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const HloValue alpha = b.splat(x.dtype, x.shape, node.attr_float("alpha", 1.0f));
  const HloValue curve = b.binary("multiply", alpha, b.unary("exponential_minus_one", x));
  context.set_output(node, 0, b.select(negative(b, x), curve, x));
}

void lower_celu(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const HloValue alpha = b.splat(x.dtype, x.shape, node.attr_float("alpha", 1.0f));
  const HloValue curve =
      b.binary("multiply", alpha, b.unary("exponential_minus_one", b.binary("divide", x, alpha)));
  context.set_output(node, 0, b.select(positive(b, x), x, curve));
}

void lower_selu(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const HloValue alpha =
      b.splat(x.dtype, x.shape, node.attr_float("alpha", 1.67326319217681884765625f));
  const HloValue gamma =
      b.splat(x.dtype, x.shape, node.attr_float("gamma", 1.05070102214813232421875f));
  const HloValue curve =
      b.binary("multiply", b.binary("multiply", gamma, alpha), b.unary("exponential_minus_one", x));
  context.set_output(node, 0, b.select(positive(b, x), b.binary("multiply", gamma, x), curve));
}

void lower_gelu(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  if (node.attr_string("approximate", "none") != "tanh") {  // the schema allows none or tanh
    context.set_output(node, 0, apply_activation(b, x, "Gelu", 0, 0));
    return;
  }
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  const auto splat = [&](double value) { return b.splat(x.dtype, x.shape, value); };
  const HloValue cube =
      b.binary("multiply", b.binary("multiply", b.binary("multiply", splat(0.044715), x), x), x);
  const HloValue inner = b.binary("multiply", splat(0.7978845608028654), b.binary("add", x, cube));
  context.set_output(node, 0,
                     b.binary("multiply", b.binary("multiply", splat(0.5), x),
                              b.binary("add", splat(1), b.unary("tanh", inner))));
}

// log(1 + e^x), written as x + log1p(e^-x) for positive x so that it does not overflow.
void lower_softplus(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const auto log1p_exp = [&](const HloValue& v) {
    return b.unary("log_plus_one", b.unary("exponential", v));
  };
  context.set_output(
      node, 0,
      b.select(positive(b, x), b.binary("add", x, log1p_exp(b.unary("negate", x))), log1p_exp(x)));
}

void lower_softsign(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  context.set_output(
      node, 0,
      b.binary("divide", x, b.binary("add", b.splat(x.dtype, x.shape, 1), b.unary("abs", x))));
}

}  // namespace

HloValue apply_activation(HloBuilder& b, const HloValue& x, std::string_view activation,
                          float alpha, float beta) {
  const auto splat = [&](double value) { return b.splat(x.dtype, x.shape, value); };
  // clamp(y, 0, 1) that sends NaN to 0, as the CPU kernels' selects do.
  const auto unit_gate = [&](const HloValue& y) {
    return b.select(b.compare("GT", y, splat(0)),
                    b.select(b.compare("LT", y, splat(1)), y, splat(1)), splat(0));
  };
  if (activation == "Relu") return b.select(negative(b, x), splat(0), x);
  if (activation == "LeakyRelu") {
    return b.select(negative(b, x), b.binary("multiply", splat(alpha), x), x);
  }
  if (activation == "Sigmoid") return b.unary("logistic", x);
  if (activation == "Tanh") return b.unary("tanh", x);
  if (activation == "HardSigmoid") {
    return unit_gate(b.binary("add", b.binary("multiply", splat(alpha), x), splat(beta)));
  }
  if (activation == "HardSwish") {
    return b.binary("multiply", x,
                    unit_gate(b.binary("add", b.binary("divide", x, splat(6)), splat(0.5))));
  }
  if (activation == "Gelu") {
    // Exact Gelu: x/2 * (1 + erf(x/sqrt 2)).
    const HloValue gate = erf(b, b.binary("multiply", x, splat(0.7071067811865476)));
    return b.binary("multiply", b.binary("multiply", splat(0.5), x),
                    b.binary("add", splat(1), gate));
  }
  if (activation == "Clip") {
    HloValue y = x;
    if (!std::isnan(beta)) y = b.select(b.compare("GT", x, splat(beta)), splat(beta), y);
    if (!std::isnan(alpha)) y = b.select(b.compare("LT", x, splat(alpha)), splat(alpha), y);
    return y;
  }
  throw LoweringRefused("no lowering of the activation " + std::string(activation));
}

HloValue apply_fused_activation(HloBuilder& b, const Node& node, const HloValue& x) {
  if (!node.has("activation")) return x;
  const std::string activation = node.attr_string("activation", "");
  // The CPU kernels' defaults: an absent Clip bound is the float range (infinities clip to it).
  const bool clip = activation == "Clip";
  const float alpha_default = activation == "LeakyRelu"     ? 0.01f
                              : activation == "HardSigmoid" ? 0.2f
                              : clip                        ? std::numeric_limits<float>::lowest()
                                                            : 0.0f;
  const float beta_default = activation == "HardSigmoid" ? 0.5f
                             : clip                      ? std::numeric_limits<float>::max()
                                                         : 0.0f;
  return apply_activation(b, x, activation, node.attr_float("activation_alpha", alpha_default),
                          node.attr_float("activation_beta", beta_default));
}

void add_elementwise_rules(RuleTable& rules) {
  const auto add = [&](std::string_view op, LowerRule lower) { rules[std::string(op)] = lower; };
  for (const auto& [onnx, hlo] : kBinaryOps) add(onnx, lower_binary);
  for (const auto& [onnx, hlo] : kComparisons) add(onnx, lower_comparison);
  for (const auto& [onnx, hlo] : kUnaryOps) add(onnx, lower_unary);
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) add(op, lower_variadic);
  add("Erf", lower_erf);
  add("Pow", lower_pow);
  add("Mod", lower_mod);
  add("Abs", lower_abs);
  add("Sign", lower_sign);
  add("Reciprocal", lower_reciprocal);
  add("Clip", lower_clip);
  add("IsNaN", lower_is_nan);
  add("IsInf", lower_is_inf);
  add("Where", lower_where);
  add("Cast", lower_cast);
  add("CastLike", lower_cast);
  add("Identity", lower_identity);
  add("Dropout", lower_dropout);
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish"}) {
    add(op, lower_listed_activation);
  }
  add("PRelu", lower_prelu);
  add("Elu", lower_elu);
  add("Celu", lower_celu);
  add("Selu", lower_selu);
  add("Gelu", lower_gelu);
  add("Softplus", lower_softplus);
  add("Softsign", lower_softsign);
}

}  // namespace tandem::pjrt
