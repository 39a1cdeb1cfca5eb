// Schemas of the elementwise family: broadcasting binary and variadic ops, Where, unary math and
// activations, Clip, Cast/CastLike and Dropout; the family's register function.
#include <concepts>
#include <cstring>
#include <limits>
#include <optional>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/ops/elementwise_scalar.h"
#include "ir/ops/families.h"

namespace tandem {
namespace {

namespace ew = elementwise;

// A set of dtypes, one bit per DType.
using TypeSet = uint32_t;
constexpr TypeSet type_bit(DType dtype) { return TypeSet{1} << static_cast<int>(dtype); }

constexpr TypeSet kFloats = type_bit(DType::kFloat32) | type_bit(DType::kFloat16) |
                            type_bit(DType::kBFloat16) | type_bit(DType::kFloat64);
constexpr TypeSet kSignedInts = type_bit(DType::kInt8) | type_bit(DType::kInt16) |
                                type_bit(DType::kInt32) | type_bit(DType::kInt64);
constexpr TypeSet kNumeric = kFloats | kSignedInts | type_bit(DType::kUInt8);
constexpr TypeSet kSigned = kFloats | kSignedInts;
constexpr TypeSet kBool = type_bit(DType::kBool);
constexpr TypeSet kAny = kNumeric | kBool;
constexpr TypeSet kPowBase = kFloats | type_bit(DType::kInt32) | type_bit(DType::kInt64);

std::string type_set_str(TypeSet set) {
  if (set == kFloats) return "a floating-point type";
  if (set == kBool) return "bool";
  if (set == kNumeric) return "a numeric type";
  if (set == kSigned) return "a signed numeric type";
  if (set == kPowBase) return "float, int32 or int64";
  return "a numeric or bool type";
}

void require_type(const InferContext& ctx, size_t index, TypeSet allowed) {
  const DType dtype = ctx.input(index).dtype;
  if (!(allowed & type_bit(dtype))) {
    ctx.fail("input " + std::to_string(index) + " has dtype " + std::string(dtype_name(dtype)) +
             "; expected " + type_set_str(allowed));
  }
}

void require_same_type(const InferContext& ctx, size_t first, size_t index) {
  const DType expected = ctx.input(first).dtype;
  const DType actual = ctx.input(index).dtype;
  if (actual != expected) {
    ctx.fail("input " + std::to_string(index) + " has dtype " + std::string(dtype_name(actual)) +
             ", input " + std::to_string(first) + " has " + std::string(dtype_name(expected)));
  }
}

// A tensor that must hold one element (Clip bounds, Dropout ratio): rank 0, or [1] as some
// exporters write it. Dynamic dims are accepted here and checked by the kernel.
void require_scalar(const InferContext& ctx, size_t index, std::string_view what) {
  const Shape& shape = ctx.input(index).shape;
  if (shape.size() > 1 || (shape.size() == 1 && shape[0] != 1 && shape[0] != kDynamicDim)) {
    ctx.fail(std::string(what) + " must be a scalar, not " + shape_str(shape));
  }
}

// Numpy broadcast; a dynamic dim against a known dim other than 1 can only be that dim.
Shape broadcast_pair(const InferContext& ctx, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1 || db == kDynamicDim) {
      out[i] = (da == 1 && db == kDynamicDim) ? db : da;
    } else if (da == 1 || da == kDynamicDim) {
      out[i] = db;
    } else {
      ctx.fail("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast");
    }
  }
  return out;
}

Shape broadcast_inputs(const InferContext& ctx, size_t count) {
  Shape out = ctx.input(0).shape;
  for (size_t i = 1; i < count; ++i) out = broadcast_pair(ctx, out, ctx.input(i).shape);
  return out;
}

InferredOutput typed(DType dtype, Shape shape) { return {dtype, std::move(shape), Tensor()}; }

// ---- Folding of known values (shape arithmetic) ----

// Contents of the inputs when all are known and the output is small enough to compute at import.
std::optional<std::vector<const Tensor*>> fold_inputs(const InferContext& ctx, size_t count,
                                                      const Shape& out_shape) {
  if (!is_static(out_shape) || numel(out_shape) > kMaxFoldedElements) return std::nullopt;
  std::vector<const Tensor*> values;
  for (size_t i = 0; i < count; ++i) {
    const Tensor* value = ctx.input_value(i);
    if (!value) return std::nullopt;
    values.push_back(value);
  }
  return values;
}

// For each element of `out`, the flat index of the element of `in` it reads under broadcasting.
std::vector<int64_t> broadcast_sources(const Shape& out, const Shape& in) {
  const int64_t count = numel(out);
  const std::vector<int64_t> in_strides = contiguous_strides(in);
  const size_t offset = out.size() - in.size();
  std::vector<int64_t> sources(static_cast<size_t>(count));
  std::vector<int64_t> coord(out.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t source = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] != 1) source += coord[d + offset] * in_strides[d];
    }
    sources[static_cast<size_t>(i)] = source;
    for (size_t d = out.size(); d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return sources;
}

// Calls fn.template operator()<T>() for the integer types that shape arithmetic uses.
template <typename Fn>
Tensor with_fold_integer(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kInt64: return fn.template operator()<int64_t>();
    case DType::kInt32: return fn.template operator()<int32_t>();
    default: return Tensor();
  }
}

// Left fold of `Op` over broadcast integer inputs: a binary op, or a variadic Max/Min.
template <typename Op>
Tensor fold_broadcast(const std::vector<const Tensor*>& inputs, const Shape& out_shape) {
  const DType dtype = inputs[0]->dtype();
  return with_fold_integer(dtype, [&]<typename T>() -> Tensor {
    using Result = std::invoke_result_t<Op, T, T>;
    if constexpr (std::same_as<Op, ew::Div> || std::same_as<Op, ew::FloorMod> ||
                  std::same_as<Op, ew::TruncMod>) {
      const T* divisor = inputs[1]->data<T>();
      for (int64_t i = 0; i < inputs[1]->numel(); ++i) {
        if (divisor[i] == 0) return Tensor();  // left for the kernel to report at run time
      }
    }
    Tensor result = Tensor::allocate(std::same_as<Result, bool> ? DType::kBool : dtype, out_shape);
    std::vector<std::vector<int64_t>> sources;
    for (const Tensor* input : inputs)
      sources.push_back(broadcast_sources(out_shape, input->shape()));
    Result* out = result.data<Result>();
    const T* first = inputs[0]->data<T>();
    for (int64_t i = 0; i < result.numel(); ++i) {
      if constexpr (std::same_as<Result, T>) {
        T acc = first[sources[0][i]];
        for (size_t k = 1; k < inputs.size(); ++k)
          acc = Op{}(acc, inputs[k]->data<T>()[sources[k][i]]);
        out[i] = acc;
      } else {
        out[i] = Op{}(first[sources[0][i]], inputs[1]->data<T>()[sources[1][i]]);
      }
    }
    return result;
  });
}

template <typename Op>
Tensor fold_unary(const Tensor& input) {
  return with_fold_integer(input.dtype(), [&]<typename T>() -> Tensor {
    Tensor result = Tensor::allocate(input.dtype(), input.shape());
    for (int64_t i = 0; i < input.numel(); ++i) result.data<T>()[i] = Op{}(input.data<T>()[i]);
    return result;
  });
}

Tensor fold_cast(const Tensor& input, DType to) {
  return ew::dispatch_any_dtype(input.dtype(), [&]<typename From>() {
    return ew::dispatch_any_dtype(to, [&]<typename To>() {
      Tensor result = Tensor::allocate(to, input.shape());
      const From* in = input.data<From>();
      To* out = result.data<To>();
      for (int64_t i = 0; i < input.numel(); ++i) out[i] = ew::convert<To>(in[i]);
      return result;
    });
  });
}

// ---- Schemas ----

void add(OpRegistry& registry, std::string name, int min_inputs, int max_inputs, InferFn infer) {
  OpSchema schema;
  schema.name = std::move(name);
  schema.min_inputs = min_inputs;
  schema.max_inputs = max_inputs;
  schema.elementwise = true;
  schema.infer = [infer = std::move(infer)](const InferContext& ctx) {
    if (ctx.node().outputs.size() > 1) ctx.fail("has more than one output");
    return infer(ctx);
  };
  registry.add(std::move(schema));
}

using FoldFn = Tensor (*)(const std::vector<const Tensor*>&, const Shape&);

// A two-input op with numpy broadcasting; comparisons yield bool.
void add_binary(OpRegistry& registry, std::string name, TypeSet allowed, bool bool_output,
                FoldFn fold = nullptr) {
  add(registry, std::move(name), 2, 2, [=](const InferContext& ctx) {
    require_type(ctx, 0, allowed);
    require_same_type(ctx, 0, 1);
    InferredOutput out =
        typed(bool_output ? DType::kBool : ctx.input(0).dtype, broadcast_inputs(ctx, 2));
    if (fold) {
      if (auto values = fold_inputs(ctx, 2, out.shape)) out.value = fold(*values, out.shape);
    }
    return std::vector<InferredOutput>{out};
  });
}

// Max, Min, Sum, Mean: one or more inputs of one dtype, broadcast together.
void add_variadic(OpRegistry& registry, std::string name, TypeSet allowed, FoldFn fold = nullptr) {
  add(registry, std::move(name), 1, std::numeric_limits<int>::max(), [=](const InferContext& ctx) {
    const size_t count = ctx.num_inputs();
    if (count == 0) ctx.fail("needs at least one input");
    require_type(ctx, 0, allowed);
    for (size_t i = 1; i < count; ++i) require_same_type(ctx, 0, i);
    InferredOutput out = typed(ctx.input(0).dtype, broadcast_inputs(ctx, count));
    if (fold) {
      if (auto values = fold_inputs(ctx, count, out.shape)) out.value = fold(*values, out.shape);
    }
    return std::vector<InferredOutput>{out};
  });
}

void register_binary_ops(OpRegistry& registry) {
  add_binary(registry, "Add", kNumeric, false, &fold_broadcast<ew::Add>);
  add_binary(registry, "Sub", kNumeric, false, &fold_broadcast<ew::Sub>);
  add_binary(registry, "Mul", kNumeric, false, &fold_broadcast<ew::Mul>);
  add_binary(registry, "Div", kNumeric, false, &fold_broadcast<ew::Div>);
  add_binary(registry, "Equal", kAny, true, &fold_broadcast<ew::Equal>);
  add_binary(registry, "Less", kNumeric, true, &fold_broadcast<ew::Less>);
  add_binary(registry, "Greater", kNumeric, true, &fold_broadcast<ew::Greater>);
  add_binary(registry, "LessOrEqual", kNumeric, true);
  add_binary(registry, "GreaterOrEqual", kNumeric, true);
  add_binary(registry, "And", kBool, true);
  add_binary(registry, "Or", kBool, true);
  add_binary(registry, "Xor", kBool, true);

  add(registry, "Pow", 2, 2, [](const InferContext& ctx) {
    require_type(ctx, 0, kPowBase);
    require_type(ctx, 1, kNumeric);
    return std::vector{typed(ctx.input(0).dtype, broadcast_inputs(ctx, 2))};
  });
  add(registry, "Mod", 2, 2, [](const InferContext& ctx) {
    require_type(ctx, 0, kNumeric);
    require_same_type(ctx, 0, 1);
    const int64_t fmod = ctx.node().attr_int("fmod", 0);
    if (fmod != 0 && fmod != 1) ctx.fail("fmod must be 0 or 1, not " + std::to_string(fmod));
    if (fmod == 0 && is_floating(ctx.input(0).dtype)) {
      ctx.fail("fmod must be 1 for floating-point inputs");
    }
    // torch 2's exporter computes MultiheadAttention's reshape targets with a Mod of constants.
    InferredOutput out = typed(ctx.input(0).dtype, broadcast_inputs(ctx, 2));
    if (auto values = fold_inputs(ctx, 2, out.shape)) {
      out.value = fmod ? fold_broadcast<ew::TruncMod>(*values, out.shape)
                       : fold_broadcast<ew::FloorMod>(*values, out.shape);
    }
    return std::vector{out};
  });
  // The slope broadcasts to the input's shape, never the other way.
  add(registry, "PRelu", 2, 2, [](const InferContext& ctx) {
    require_type(ctx, 0, kSigned);
    require_same_type(ctx, 0, 1);
    const Shape& input = ctx.input(0).shape;
    const Shape out = broadcast_inputs(ctx, 2);
    for (size_t i = 0; i < out.size(); ++i) {
      if (out.size() != input.size() || (input[i] != kDynamicDim && out[i] != input[i])) {
        ctx.fail("slope " + shape_str(ctx.input(1).shape) + " does not broadcast to input " +
                 shape_str(input));
      }
    }
    return std::vector{typed(ctx.input(0).dtype, out)};
  });

  add_variadic(registry, "Max", kNumeric, &fold_broadcast<ew::Max>);
  add_variadic(registry, "Min", kNumeric, &fold_broadcast<ew::Min>);
  add_variadic(registry, "Sum", kFloats);
  add_variadic(registry, "Mean", kFloats);

  add(registry, "Where", 3, 3, [](const InferContext& ctx) {
    require_type(ctx, 0, kBool);
    require_type(ctx, 1, kAny);
    require_same_type(ctx, 1, 2);
    InferredOutput out = typed(ctx.input(1).dtype, broadcast_inputs(ctx, 3));
    if (auto values = fold_inputs(ctx, 3, out.shape)) {
      const Tensor* cond = (*values)[0];
      const Tensor* x = (*values)[1];
      const Tensor* y = (*values)[2];
      const size_t size = dtype_size(out.dtype);
      out.value = Tensor::allocate(out.dtype, out.shape);
      const auto cond_at = broadcast_sources(out.shape, cond->shape());
      const auto x_at = broadcast_sources(out.shape, x->shape());
      const auto y_at = broadcast_sources(out.shape, y->shape());
      auto* dst = static_cast<char*>(out.value.raw());
      for (size_t i = 0; i < cond_at.size(); ++i) {
        const bool pick_x = cond->data<bool>()[cond_at[i]];
        const char* src = pick_x ? static_cast<const char*>(x->raw()) + x_at[i] * size
                                 : static_cast<const char*>(y->raw()) + y_at[i] * size;
        std::memcpy(dst + i * size, src, size);
      }
    }
    return std::vector<InferredOutput>{out};
  });
}

// A one-input op whose output has the input's shape; `check` validates attributes.
void add_unary(OpRegistry& registry, std::string name, TypeSet allowed,
               std::function<void(const InferContext&)> check = {},
               std::optional<DType> out_dtype = std::nullopt, FoldFn fold = nullptr) {
  add(registry, std::move(name), 1, 1, [=](const InferContext& ctx) {
    require_type(ctx, 0, allowed);
    if (check) check(ctx);
    InferredOutput out = typed(out_dtype.value_or(ctx.input(0).dtype), ctx.input(0).shape);
    if (fold) {
      if (auto values = fold_inputs(ctx, 1, out.shape)) out.value = fold(*values, out.shape);
    }
    return std::vector<InferredOutput>{out};
  });
}

template <typename Op>
Tensor fold_unary_op(const std::vector<const Tensor*>& inputs, const Shape&) {
  return fold_unary<Op>(*inputs[0]);
}

// Reads each float attribute once so that one of the wrong type fails at import.
std::function<void(const InferContext&)> float_attributes(std::vector<std::string> names) {
  return [names = std::move(names)](const InferContext& ctx) {
    for (const std::string& name : names) ctx.node().attr_float(name, 0.0f);
  };
}

void register_unary_ops(OpRegistry& registry) {
  for (const char* name : {"Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Reciprocal", "Floor",
                           "Ceil", "Round", "Sin", "Cos", "Softplus", "Softsign", "HardSwish"}) {
    add_unary(registry, name, kFloats);
  }
  add_unary(registry, "Relu", kSigned);
  add_unary(registry, "Neg", kSigned, {}, std::nullopt, &fold_unary_op<ew::Neg>);
  add_unary(registry, "Abs", kNumeric, {}, std::nullopt, &fold_unary_op<ew::Abs>);
  add_unary(registry, "Sign", kNumeric);
  add_unary(registry, "Not", kBool);
  add_unary(registry, "IsNaN", kFloats, {}, DType::kBool);
  add_unary(
      registry, "IsInf", kFloats,
      [](const InferContext& ctx) {
        for (const char* attr : {"detect_negative", "detect_positive"}) {
          const int64_t flag = ctx.node().attr_int(attr, 1);
          if (flag != 0 && flag != 1) ctx.fail(std::string(attr) + " must be 0 or 1");
        }
      },
      DType::kBool);
  add_unary(registry, "LeakyRelu", kFloats, float_attributes({"alpha"}));
  add_unary(registry, "Elu", kFloats, float_attributes({"alpha"}));
  add_unary(registry, "Selu", kFloats, float_attributes({"alpha", "gamma"}));
  add_unary(registry, "Celu", kFloats, [](const InferContext& ctx) {
    if (ctx.node().attr_float("alpha", 1.0f) == 0.0f) ctx.fail("alpha must not be 0");
  });
  add_unary(registry, "HardSigmoid", kFloats, float_attributes({"alpha", "beta"}));
  add_unary(registry, "Gelu", kFloats, [](const InferContext& ctx) {
    const std::string approximate = ctx.node().attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      ctx.fail("approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
    }
  });

  // Opset 11 made the bounds optional inputs; 13 only widened the types.
  add(registry, "Clip", 1, 3, [](const InferContext& ctx) {
    require_type(ctx, 0, kNumeric);
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      require_same_type(ctx, 0, i);
      require_scalar(ctx, i, i == 1 ? "min" : "max");
    }
    return std::vector{typed(ctx.input(0).dtype, ctx.input(0).shape)};
  });
}

// Cast's `to` holds an ONNX TensorProto.DataType code, as the importer copies attributes.
DType cast_target(const InferContext& ctx) {
  const int64_t code = ctx.node().attr_int("to", 0);
  const std::optional<DType> dtype = dtype_from_onnx_code(code);
  if (!dtype) ctx.fail("cannot cast to ONNX element type " + std::to_string(code));
  return *dtype;
}

std::vector<InferredOutput> infer_cast(const InferContext& ctx, DType to) {
  require_type(ctx, 0, kAny);
  InferredOutput out = typed(to, ctx.input(0).shape);
  if (auto values = fold_inputs(ctx, 1, out.shape)) out.value = fold_cast(*(*values)[0], to);
  return {out};
}

void register_cast_ops(OpRegistry& registry) {
  add(registry, "Cast", 1, 1, [](const InferContext& ctx) {
    if (!ctx.node().has("to")) ctx.fail("attribute 'to' is required");
    return infer_cast(ctx, cast_target(ctx));
  });
  add(registry, "CastLike", 2, 2, [](const InferContext& ctx) {
    require_type(ctx, 1, kAny);
    return infer_cast(ctx, ctx.input(1).dtype);
  });

  // Inference only: the output is the input and the optional mask is all true.
  OpSchema dropout;
  dropout.name = "Dropout";
  dropout.min_inputs = 1;
  dropout.max_inputs = 3;
  dropout.elementwise = true;
  dropout.infer = [](const InferContext& ctx) {
    if (ctx.node().outputs.size() > 2) ctx.fail("has more than two outputs");
    require_type(ctx, 0, kFloats);
    ctx.node().attr_int("seed", 0);
    if (ctx.has_input(1)) {
      require_type(ctx, 1, kFloats);
      require_scalar(ctx, 1, "ratio");
    }
    if (ctx.has_input(2)) {
      require_type(ctx, 2, kBool);
      require_scalar(ctx, 2, "training_mode");
      const Tensor* training = ctx.input_value(2);
      if (training && training->numel() == 1 && training->data<bool>()[0]) {
        ctx.fail("training mode is not supported; export the model for inference");
      }
    }
    std::vector outputs{typed(ctx.input(0).dtype, ctx.input(0).shape)};
    if (ctx.node().outputs.size() == 2) outputs.push_back(typed(DType::kBool, ctx.input(0).shape));
    return outputs;
  };
  registry.add(std::move(dropout));
}

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
  register_binary_ops(registry);
  register_unary_ops(registry);
  register_cast_ops(registry);
}

}  // namespace tandem
