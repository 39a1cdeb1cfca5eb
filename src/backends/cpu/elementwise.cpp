// CPU kernels of the broadcasting elementwise ops (binary, variadic, Where); the family's
// register function.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <type_traits>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/elementwise_internal.h"
#include "backends/cpu/elementwise_math.h"
#include "ir/error.h"
#include "ir/ops/elementwise_scalar.h"

namespace tandem::cpu {
namespace {

namespace ew = elementwise;

// Integer division and remainder trap on a zero divisor: report it before the loop starts.
template <typename T>
void check_no_zero_divisor(const Node& node, const Tensor& divisor) {
  if constexpr (std::integral<T>) {
    const T* values = divisor.data<T>();
    if (std::any_of(values, values + divisor.numel(), [](T v) { return v == 0; })) {
      throw InputError(node.label() + ": integer division by zero");
    }
  }
}

// A binary op over one dtype; the output is bool for comparisons and logic.
template <typename Op>
void binary_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  dispatch_kernel_dtype(node, a.dtype(), [&]<typename T>() {
    if constexpr (std::invocable<const Op&, T, T>) {
      if constexpr (std::same_as<Op, ew::Div>) check_no_zero_divisor<T>(node, b);
      broadcast_binary<T, T, std::invoke_result_t<Op, T, T>>(a, b, outputs[0], Op{});
    } else {
      throw_unsupported_dtype(node, a.dtype());
    }
  });
}

void mod_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const bool c_style = node.attr_int("fmod", 0) == 1;
  dispatch_kernel_dtype(node, inputs[0].dtype(), [&]<typename T>() {
    if constexpr (std::same_as<T, bool>) {
      throw_unsupported_dtype(node, inputs[0].dtype());
    } else {
      check_no_zero_divisor<T>(node, inputs[1]);
      if constexpr (std::floating_point<T>) {
        broadcast_binary<T, T, T>(inputs[0], inputs[1], outputs[0], ew::TruncMod{},
                                  kExpensiveGrain);
      } else if (c_style) {
        broadcast_binary<T, T, T>(inputs[0], inputs[1], outputs[0], ew::TruncMod{});
      } else {
        broadcast_binary<T, T, T>(inputs[0], inputs[1], outputs[0], ew::FloorMod{});
      }
    }
  });
}

// Integer powers computed in double and converted back (as ONNX Runtime does).
template <typename T, typename E>
T power(T base, E exponent) {
  if constexpr (std::same_as<T, float> && std::same_as<E, float>) {
    return std::pow(base, exponent);
  } else if constexpr (std::floating_point<T>) {
    return static_cast<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  } else {
    return ew::convert<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
}

// A scalar float exponent of 0.5, 1, 2 or 3 (LayerNorm decompositions, squares) is computed
// without pow; false when the exponent is anything else.
template <typename T>
bool pow_by_scalar_fast_path(const Tensor& base, double exponent, const Tensor& out) {
  if (exponent == 2.0) {
    map_unary<T, T>(base, out, [](T x) { return x * x; });
  } else if (exponent == 3.0) {
    map_unary<T, T>(base, out, [](T x) { return x * x * x; });
  } else if (exponent == 0.5) {
    map_unary<T, T>(base, out, [](T x) { return std::sqrt(x); });
  } else if (exponent == 1.0) {
    std::memcpy(out.raw(), base.raw(), base.nbytes());
  } else {
    return false;
  }
  return true;
}

void pow_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& base = inputs[0];
  const Tensor& exponent = inputs[1];
  dispatch_kernel_dtype(node, base.dtype(), [&]<typename T>() {
    dispatch_kernel_dtype(node, exponent.dtype(), [&]<typename E>() {
      if constexpr (std::same_as<T, bool> || std::same_as<E, bool>) {
        throw_unsupported_dtype(node, DType::kBool);
      } else {
        if constexpr (std::floating_point<T>) {
          if (exponent.numel() == 1 && base.shape() == outputs[0].shape() &&
              pow_by_scalar_fast_path<T>(base, static_cast<double>(exponent.data<E>()[0]),
                                         outputs[0])) {
            return;
          }
        }
        broadcast_binary<T, E, T>(
            base, exponent, outputs[0], [](T x, E y) { return power(x, y); }, kExpensiveGrain);
      }
    });
  });
}

template <typename T>
T prelu(T x, T slope) {
  if constexpr (std::floating_point<T>) {
    return fastmath::select(x < 0, slope * x, x);
  } else {
    using U = std::make_unsigned_t<T>;  // wraps around: signed overflow is undefined
    return x < 0 ? static_cast<T>(static_cast<U>(slope) * static_cast<U>(x)) : x;
  }
}

void prelu_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  dispatch_kernel_dtype(node, inputs[0].dtype(), [&]<typename T>() {
    if constexpr (std::same_as<T, bool> || std::unsigned_integral<T>) {
      throw_unsupported_dtype(node, inputs[0].dtype());
    } else {
      broadcast_binary<T, T, T>(inputs[0], inputs[1], outputs[0],
                                [](T x, T slope) { return prelu(x, slope); });
    }
  });
}

// Max, Min, Sum and Mean fold their inputs pairwise into the output.
template <typename Op, bool kMean = false>
void variadic_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& out = outputs[0];
  dispatch_kernel_dtype(node, out.dtype(), [&]<typename T>() {
    if constexpr (std::invocable<const Op&, T, T>) {
      if (inputs.size() == 1) {
        std::memcpy(out.raw(), inputs[0].raw(), out.nbytes());
        return;
      }
      broadcast_binary<T, T, T>(inputs[0], inputs[1], out, Op{});
      for (size_t k = 2; k < inputs.size(); ++k)
        broadcast_binary<T, T, T>(out, inputs[k], out, Op{});
      if constexpr (kMean) {
        const T count = static_cast<T>(inputs.size());
        map_unary<T, T>(out, out, [count](T x) { return x / count; });
      }
    } else {
      throw_unsupported_dtype(node, out.dtype());
    }
  });
}

// One row of Where; each operand is a contiguous run or a single repeated value (T an unsigned
// integer of the element's size). The choice is a mask made of the condition's byte read as a
// byte: GCC vectorizes neither a select of T by a bool nor a bool's widening, and the scalar
// loop made gpt's causal mask (2x8x128x128) take 63 us, against 12 for an Add of a scalar.
template <bool kContiguousCond, bool kContiguousX, bool kContiguousY, typename T>
void where_row(const uint8_t* cond, const T* x, const T* y, T* out, int64_t length) {
  const uint8_t c0 = *cond;
  const T x0 = *x;
  const T y0 = *y;
  for (int64_t i = 0; i < length; ++i) {
    const T take_x = static_cast<T>(T{0} - static_cast<T>(kContiguousCond ? cond[i] : c0));
    out[i] = static_cast<T>(((kContiguousX ? x[i] : x0) & take_x) |
                            ((kContiguousY ? y[i] : y0) & static_cast<T>(~take_x)));
  }
}

template <typename T>
using WhereRowFn = void (*)(const uint8_t*, const T*, const T*, T*, int64_t);

template <typename T>
constexpr WhereRowFn<T> kWhereRows[8] = {
    where_row<false, false, false, T>, where_row<false, false, true, T>,
    where_row<false, true, false, T>,  where_row<false, true, true, T>,
    where_row<true, false, false, T>,  where_row<true, false, true, T>,
    where_row<true, true, false, T>,   where_row<true, true, true, T>,
};

void where_kernel(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& out = outputs[0];
  const BroadcastPlan<3> plan(out.shape(),
                              {&inputs[0].shape(), &inputs[1].shape(), &inputs[2].shape()});
  dispatch_by_size(out.dtype(), [&]<typename T>() {
    const WhereRowFn<T> row =
        kWhereRows<T>[plan.contiguous(0) * 4 + plan.contiguous(1) * 2 + plan.contiguous(2)];
    // A bool tensor holds bytes of 0 or 1.
    const auto* cond = reinterpret_cast<const uint8_t*>(inputs[0].data<bool>());
    const T* x = inputs[1].data<T>();
    const T* y = inputs[2].data<T>();
    T* dst = out.data<T>();
    plan.for_each_segment(kCheapGrain,
                          [&](int64_t o, const std::array<int64_t, 3>& in, int64_t length) {
                            row(cond + in[0], x + in[1], y + in[2], dst + o, length);
                          });
  });
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& registry) {
  // The grains the kernels pass to parallel_ranges. Mod and Pow take another by dtype or
  // exponent: undeclared.
  registry.add("Add", &binary_kernel<ew::Add>, Elements::kNumeric, kCheapGrain);
  registry.add("Sub", &binary_kernel<ew::Sub>, Elements::kNumeric, kCheapGrain);
  registry.add("Mul", &binary_kernel<ew::Mul>, Elements::kNumeric, kCheapGrain);
  registry.add("Div", &binary_kernel<ew::Div>, Elements::kNumeric, kCheapGrain);
  registry.add("Equal", &binary_kernel<ew::Equal>, Elements::kNumeric, kCheapGrain);
  registry.add("Less", &binary_kernel<ew::Less>, Elements::kNumeric, kCheapGrain);
  registry.add("LessOrEqual", &binary_kernel<ew::LessOrEqual>, Elements::kNumeric, kCheapGrain);
  registry.add("Greater", &binary_kernel<ew::Greater>, Elements::kNumeric, kCheapGrain);
  registry.add("GreaterOrEqual", &binary_kernel<ew::GreaterOrEqual>, Elements::kNumeric,
               kCheapGrain);
  registry.add("And", &binary_kernel<ew::And>, Elements::kNumeric, kCheapGrain);
  registry.add("Or", &binary_kernel<ew::Or>, Elements::kNumeric, kCheapGrain);
  registry.add("Xor", &binary_kernel<ew::Xor>, Elements::kNumeric, kCheapGrain);
  registry.add("Mod", &mod_kernel);
  registry.add("Pow", &pow_kernel);
  registry.add("PRelu", &prelu_kernel);
  registry.add("Max", &variadic_kernel<ew::Max>);
  registry.add("Min", &variadic_kernel<ew::Min>);
  registry.add("Sum", &variadic_kernel<ew::Add>);
  registry.add("Mean", &variadic_kernel<ew::Add, true>);
  registry.add("Where", &where_kernel, Elements::kNumeric, kCheapGrain);
  register_elementwise_unary_kernels(registry);
  register_elementwise_cast_kernels(registry);
}

}  // namespace tandem::cpu
