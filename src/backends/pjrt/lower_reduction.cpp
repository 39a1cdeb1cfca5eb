// Lowering rules: reductions, Softmax, LogSoftmax, LayerNormalization.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "backends/pjrt/lower_rules.h"

namespace tandem::pjrt {
namespace {

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

bool is_half(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// What arithmetic on `dtype` runs in: f32 for the half types (as XLA and the CPU kernels
// accumulate), the type itself otherwise.
DType compute_type(DType dtype) { return is_half(dtype) ? DType::kFloat32 : dtype; }

// `value`'s shape without `axes` (sorted, non-negative).
Shape without_axes(const Shape& shape, std::span<const int64_t> axes) {
  Shape kept;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) {
      kept.push_back(shape[d]);
    }
  }
  return kept;
}

// The dims of `rank` not in `axes` (sorted): where a reduced value broadcasts back from.
std::vector<int64_t> kept_dims(size_t rank, std::span<const int64_t> axes) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < rank; ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) {
      kept.push_back(static_cast<int64_t>(d));
    }
  }
  return kept;
}

int64_t count_of(const Shape& shape, std::span<const int64_t> axes) {
  int64_t count = 1;
  for (int64_t axis : axes) count *= shape[static_cast<size_t>(axis)];
  return count;
}

// The identity of maximum (`for_maximum`) or minimum on `dtype`, exactly: int64's extremes are
// not doubles, so integer identities are written as tensors.
HloValue order_identity(HloBuilder& b, DType dtype, bool for_maximum) {
  const auto extreme = [&]<typename T>() {
    const T value = for_maximum ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    return b.constant(Tensor::from_vector<T>(dtype, {}, {value}));
  };
  switch (dtype) {
    case DType::kBool: return b.scalar(dtype, for_maximum ? 0 : 1);
    case DType::kInt8: return extreme.operator()<int8_t>();
    case DType::kUInt8: return extreme.operator()<uint8_t>();
    case DType::kInt16: return extreme.operator()<int16_t>();
    case DType::kInt32: return extreme.operator()<int32_t>();
    case DType::kInt64: return extreme.operator()<int64_t>();
    default: {
      const double infinity = std::numeric_limits<double>::infinity();
      return b.scalar(dtype, for_maximum ? -infinity : infinity);
    }
  }
}

// Reduces `axes` (sorted, non-negative) of `value` with `body_op` from the scalar `init`.
HloValue reduce_axes(HloBuilder& b, const HloValue& value, std::span<const int64_t> axes,
                     std::string_view body_op, const HloValue& init) {
  const HloValue operands[] = {value, init};
  return b.op("reduce", operands, value.dtype, without_axes(value.shape, axes),
              "dimensions = " + i64_array(axes), b.binary_region(body_op, value.dtype));
}

HloValue reduce_max(HloBuilder& b, const HloValue& value, std::span<const int64_t> axes) {
  return reduce_axes(b, value, axes, "maximum", order_identity(b, value.dtype, true));
}

HloValue reduce_sum(HloBuilder& b, const HloValue& value, std::span<const int64_t> axes) {
  return reduce_axes(b, value, axes, "add", b.scalar(value.dtype, 0));
}

// A value reduced over `axes` broadcast back to `shape`, the shape it was reduced from.
HloValue expand(HloBuilder& b, const HloValue& reduced, const Shape& shape,
                std::span<const int64_t> axes) {
  return b.broadcast_in_dim(reduced, shape, kept_dims(shape.size(), axes));
}

// The axes a Reduce* node reduces, sorted and non-negative: from the constant `axes` input
// (opset 13/18 on) or the attribute; none given means all, or none with noop_with_empty_axes.
std::vector<int64_t> reduce_node_axes(const LowerContext& context, const Node& node, int64_t rank) {
  std::vector<int64_t> axes =
      context.has_input(node, 1) ? context.constant_ints(node, 1) : node.attr_ints("axes");
  if (axes.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) return {};
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    return axes;
  }
  for (int64_t& axis : axes) axis = normalize_axis(axis, rank);
  std::sort(axes.begin(), axes.end());
  return axes;
}

// log(sum(exp(x))) over `axes`, shifted by the maximum so that exp cannot overflow. As the CPU
// kernel, a non-finite maximum (all -inf, an inf or a NaN) is the result itself.
HloValue log_sum_exp(HloBuilder& b, const HloValue& x, std::span<const int64_t> axes) {
  const HloValue peak = reduce_max(b, x, axes);
  const HloValue finite = b.op("is_finite", {peak}, DType::kBool, peak.shape);
  const HloValue shift = b.select(finite, peak, b.splat(x.dtype, peak.shape, 0));
  const HloValue sum = reduce_sum(
      b, b.unary("exponential", b.binary("subtract", x, expand(b, shift, x.shape, axes))), axes);
  return b.select(finite, b.binary("add", shift, b.unary("log", sum)), peak);
}

template <Reduction kKind>
void lower_reduce(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const bool floating = is_floating(data.dtype);
  constexpr bool kFloatResult =
      kKind == Reduction::kL2 || kKind == Reduction::kLogSum || kKind == Reduction::kLogSumExp;
  if (kFloatResult && !floating) {
    // The CPU kernel truncates a float result into the integer type; not worth mirroring.
    throw LoweringRefused("integer data");
  }
  const std::vector<int64_t> axes =
      reduce_node_axes(context, node, static_cast<int64_t>(data.shape.size()));
  // Integer means divide the int64 sum, as the CPU kernel does (a narrower sum could wrap).
  const DType dtype = kKind == Reduction::kMean && !floating ? DType::kInt64
                      : kKind == Reduction::kMax || kKind == Reduction::kMin
                          ? data.dtype
                          : compute_type(data.dtype);
  HloValue x = b.convert(data, dtype);
  if constexpr (kKind == Reduction::kL1) x = b.unary("abs", x);
  if constexpr (kKind == Reduction::kL2 || kKind == Reduction::kSumSquare) {
    x = b.binary("multiply", x, x);
  }
  HloValue result = x;
  if constexpr (kKind == Reduction::kLogSumExp) {
    if (!axes.empty()) result = log_sum_exp(b, x, axes);
  } else if (!axes.empty()) {
    switch (kKind) {
      case Reduction::kMax: result = reduce_max(b, x, axes); break;
      case Reduction::kMin:
        result = reduce_axes(b, x, axes, "minimum", order_identity(b, dtype, false));
        break;
      case Reduction::kProd:
        result = reduce_axes(b, x, axes, "multiply", b.scalar(dtype, 1));
        break;
      default: result = reduce_sum(b, x, axes); break;
    }
  }
  if constexpr (kKind == Reduction::kMean) {
    const int64_t count = count_of(data.shape, axes);
    // XLA's integer division by zero gives -1; the CPU kernel's empty integer mean is 0.
    result =
        count == 0 && !floating
            ? b.splat(dtype, result.shape, 0)
            : b.binary("divide", result, b.splat(dtype, result.shape, static_cast<double>(count)));
  }
  if constexpr (kKind == Reduction::kL2) result = b.unary("sqrt", result);
  if constexpr (kKind == Reduction::kLogSum) result = b.unary("log", result);
  context.set_output(node, 0, b.reshape(b.convert(result, out.dtype), out.shape));
}

std::string comparison_type(DType dtype) {
  if (is_floating(dtype)) return "FLOAT";
  return dtype == DType::kUInt8 || dtype == DType::kBool ? "UNSIGNED" : "SIGNED";
}

}  // namespace

// The body of an arg-reduction over (value, index) pairs: the better value wins, a tie goes to
// the lower index (the higher with `last`). It is a total order on pairs, so XLA may combine
// partial results in any order.
std::string arg_reduce_region(DType dtype, bool maximum, bool last) {
  const std::string value = tensor_type(dtype, {});
  const std::string index = tensor_type(DType::kInt64, {});
  const auto compare = [](const std::string& name, const std::string& a, const std::string& b,
                          const std::string& direction, const std::string& type,
                          const std::string& compare_type) {
    return "      " + name + " = \"stablehlo.compare\"(" + a + ", " + b +
           ") {comparison_direction = #stablehlo<comparison_direction " + direction +
           ">, compare_type = #stablehlo<comparison_type " + compare_type + ">} : (" + type + ", " +
           type + ") -> tensor<i1>\n";
  };
  const auto logical = [](const std::string& name, const std::string& op, const std::string& a,
                          const std::string& b) {
    return "      " + name + " = \"stablehlo." + op + "\"(" + a + ", " + b +
           ") : (tensor<i1>, tensor<i1>) -> tensor<i1>\n";
  };
  const auto select = [](const std::string& name, const std::string& a, const std::string& b,
                         const std::string& type) {
    return "      " + name + " = \"stablehlo.select\"(%take, " + a + ", " + b +
           ") : (tensor<i1>, " + type + ", " + type + ") -> " + type + "\n";
  };
  return "({\n    ^bb0(%best: " + value + ", %best_index: " + index + ", %candidate: " + value +
         ", %candidate_index: " + index + "):\n" +
         compare("%better", "%candidate", "%best", maximum ? "GT" : "LT", value,
                 comparison_type(dtype)) +
         compare("%tied", "%candidate", "%best", "EQ", value, comparison_type(dtype)) +
         compare("%preferred_index", "%candidate_index", "%best_index", last ? "GT" : "LT", index,
                 "SIGNED") +
         logical("%tie_wins", "and", "%tied", "%preferred_index") +
         logical("%take", "or", "%better", "%tie_wins") +
         select("%value", "%candidate", "%best", value) +
         select("%index", "%candidate_index", "%best_index", index) +
         "      \"stablehlo.return\"(%value, %index) : (" + value + ", " + index +
         ") -> ()\n    })";
}

namespace {

// ArgMax/ArgMin: a variadic reduce over the data and its indices along the axis.
template <bool kMaximum>
void lower_arg_reduce(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const int64_t axis =
      normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(data.shape.size()));
  const bool last = node.attr_int("select_last_index", 0) != 0;
  const HloValue indices = b.op("iota", {}, DType::kInt64, data.shape,
                                "iota_dimension = " + std::to_string(axis) + " : i64");
  // Index 0 with the identity value: element 0 is never worse, so it never wins wrongly.
  const HloValue operands[] = {data, indices, order_identity(b, data.dtype, kMaximum),
                               b.scalar(DType::kInt64, 0)};
  const std::vector<int64_t> axes = {axis};
  const Shape reduced = without_axes(data.shape, axes);
  const TensorType results[] = {{data.dtype, reduced}, {DType::kInt64, reduced}};
  const std::vector<HloValue> best =
      b.op_results("reduce", operands, results, "dimensions = " + i64_array(axes),
                   arg_reduce_region(data.dtype, kMaximum, last));
  context.set_output(node, 0, b.reshape(best[1], out.shape));
}

// Softmax and LogSoftmax along one axis (opset 13 semantics), shifted by the maximum.
template <bool kLog>
void lower_softmax(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const std::vector<int64_t> axes = {
      normalize_axis(node.attr_int("axis", -1), static_cast<int64_t>(data.shape.size()))};
  const HloValue x = b.convert(data, compute_type(data.dtype));
  const HloValue shifted =
      b.binary("subtract", x, expand(b, reduce_max(b, x, axes), x.shape, axes));
  const HloValue exp = b.unary("exponential", shifted);
  const HloValue sum = reduce_sum(b, exp, axes);
  const HloValue result =
      kLog ? b.binary("subtract", shifted, expand(b, b.unary("log", sum), x.shape, axes))
           : b.binary("divide", exp, expand(b, sum, x.shape, axes));
  context.set_output(node, 0, b.convert(result, out.dtype));
}

// LayerNormalization over the dims [axis, rank); Mean and InvStdDev (f32, those dims kept as 1)
// when asked for. Statistics in f32 for half data, as stash_type's default says.
void lower_layer_norm(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const auto rank = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> axes;
  for (int64_t d = normalize_axis(node.attr_int("axis", -1), rank); d < rank; ++d) {
    axes.push_back(d);
  }
  const DType dtype = compute_type(data.dtype);
  const HloValue x = b.convert(data, dtype);
  const Shape stats_shape = without_axes(x.shape, axes);
  const HloValue count = b.splat(dtype, stats_shape, static_cast<double>(count_of(x.shape, axes)));
  const HloValue mean = b.binary("divide", reduce_sum(b, x, axes), count);
  const HloValue centered = b.binary("subtract", x, expand(b, mean, x.shape, axes));
  const HloValue variance =
      b.binary("divide", reduce_sum(b, b.binary("multiply", centered, centered), axes), count);
  const HloValue epsilon = b.splat(dtype, stats_shape, node.attr_float("epsilon", 1e-5f));
  const HloValue inv_std = b.unary("rsqrt", b.binary("add", variance, epsilon));
  HloValue y =
      b.binary("multiply", b.binary("multiply", centered, expand(b, inv_std, x.shape, axes)),
               broadcast_input(context, node, 1, dtype));
  if (context.has_input(node, 2)) y = b.binary("add", y, broadcast_input(context, node, 2, dtype));
  context.set_output(node, 0, b.convert(y, out.dtype));
  const HloValue stats[] = {mean, inv_std};
  for (size_t i = 1; i <= 2; ++i) {
    if (!context.has_output(node, i)) continue;
    const TensorType& type = context.output_type(node, i);
    context.set_output(node, i, b.reshape(b.convert(stats[i - 1], type.dtype), type.shape));
  }
}

}  // namespace

void add_reduction_rules(RuleTable& rules) {
  rules["ReduceSum"] = lower_reduce<Reduction::kSum>;
  rules["ReduceMean"] = lower_reduce<Reduction::kMean>;
  rules["ReduceMax"] = lower_reduce<Reduction::kMax>;
  rules["ReduceMin"] = lower_reduce<Reduction::kMin>;
  rules["ReduceProd"] = lower_reduce<Reduction::kProd>;
  rules["ReduceL1"] = lower_reduce<Reduction::kL1>;
  rules["ReduceL2"] = lower_reduce<Reduction::kL2>;
  rules["ReduceSumSquare"] = lower_reduce<Reduction::kSumSquare>;
  rules["ReduceLogSum"] = lower_reduce<Reduction::kLogSum>;
  rules["ReduceLogSumExp"] = lower_reduce<Reduction::kLogSumExp>;
  rules["ArgMax"] = lower_arg_reduce<true>;
  rules["ArgMin"] = lower_arg_reduce<false>;
  rules["Softmax"] = lower_softmax<false>;
  rules["LogSoftmax"] = lower_softmax<true>;
  rules["LayerNormalization"] = lower_layer_norm;
}

}  // namespace tandem::pjrt
