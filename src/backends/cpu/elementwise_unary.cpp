// CPU kernels of the unary elementwise ops: math functions, activations and Clip.
#include <cmath>
#include <concepts>
#include <limits>
#include <memory>
#include <numbers>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/elementwise_internal.h"
#include "backends/cpu/elementwise_math.h"
#include "ir/error.h"
#include "ir/ops/elementwise_scalar.h"

namespace tandem::cpu {
namespace {

namespace ew = elementwise;
using std::floating_point;

// How much work one element is: sets the size from which an op goes parallel.
struct Cheap {
  static constexpr int64_t kGrain = kCheapGrain;
};
struct Expensive {
  static constexpr int64_t kGrain = kExpensiveGrain;
};

struct Relu : Cheap {
  template <ew::Number T>
  requires(!std::unsigned_integral<T>) T operator()(T x) const {
    return x < 0 ? T{0} : x;  // keeps NaN
  }
};

struct Sigmoid : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    if constexpr (std::same_as<T, float>) return fastmath::sigmoid(x);
    return 1 / (1 + std::exp(-x));
  }
};

struct Tanh : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    if constexpr (std::same_as<T, float>) return fastmath::tanh(x);
    return std::tanh(x);
  }
};

struct Exp : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    if constexpr (std::same_as<T, float>) return fastmath::exp(x);
    return std::exp(x);
  }
};

struct Erf : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    if constexpr (std::same_as<T, float>) return fastmath::erf(x);
    return std::erf(x);
  }
};

struct Log : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    return std::log(x);
  }
};

struct Sin : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    return std::sin(x);
  }
};

struct Cos : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    return std::cos(x);
  }
};

struct Sqrt : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};

struct Reciprocal : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    return 1 / x;
  }
};

struct Floor : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    return std::floor(x);
  }
};

struct Ceil : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    return std::ceil(x);
  }
};

// Halves round to even: the default floating-point rounding mode.
struct Round : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    return std::nearbyint(x);
  }
};

struct Neg : Cheap, ew::Neg {};
struct Abs : Cheap, ew::Abs {};

struct Sign : Cheap {
  template <ew::Number T>
  T operator()(T x) const {
    if constexpr (std::unsigned_integral<T>) {
      return x > 0 ? 1 : 0;
    } else {
      return x > 0 ? T{1} : (x < 0 ? T{-1} : x);  // keeps 0 and NaN
    }
  }
};

struct Not : Cheap {
  template <std::same_as<bool> T>
  bool operator()(T x) const {
    return !x;
  }
};

// log(1 + e^x) without overflow for large x.
struct Softplus : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};

struct Softsign : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    return x / (1 + std::abs(x));
  }
};

struct IsNaN : Cheap {
  template <floating_point T>
  bool operator()(T x) const {
    return x != x;
  }
};

struct IsInf : Cheap {
  explicit IsInf(const Node& node)
      : negative(node.attr_int("detect_negative", 1) != 0),
        positive(node.attr_int("detect_positive", 1) != 0) {}
  template <floating_point T>
  bool operator()(T x) const {
    constexpr T kInf = std::numeric_limits<T>::infinity();
    return (positive && x == kInf) || (negative && x == -kInf);
  }
  bool negative;
  bool positive;
};

struct LeakyRelu : Cheap {
  explicit LeakyRelu(const Node& node) : alpha(node.attr_float("alpha", 0.01f)) {}
  template <floating_point T>
  T operator()(T x) const {
    return fastmath::select(x < 0, static_cast<T>(alpha) * x, x);
  }
  float alpha;
};

struct Elu : Expensive {
  explicit Elu(const Node& node) : alpha(node.attr_float("alpha", 1.0f)) {}
  template <floating_point T>
  T operator()(T x) const {
    return x < 0 ? static_cast<T>(alpha) * std::expm1(x) : x;
  }
  float alpha;
};

struct Selu : Expensive {
  explicit Selu(const Node& node)
      : alpha(node.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(node.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <floating_point T>
  T operator()(T x) const {
    const T g = static_cast<T>(gamma);
    return x > 0 ? g * x : g * static_cast<T>(alpha) * std::expm1(x);
  }
  float alpha;
  float gamma;
};

struct Celu : Expensive {
  explicit Celu(const Node& node) : alpha(node.attr_float("alpha", 1.0f)) {}
  template <floating_point T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha);
    return x > 0 ? x : a * std::expm1(x / a);
  }
  float alpha;
};

struct HardSigmoid : Cheap {
  explicit HardSigmoid(const Node& node)
      : alpha(node.attr_float("alpha", 0.2f)), beta(node.attr_float("beta", 0.5f)) {}
  template <floating_point T>
  T operator()(T x) const {
    const T y = static_cast<T>(alpha) * x + static_cast<T>(beta);
    return fastmath::select(y > 0, fastmath::select(y < 1, y, T{1}), T{0});
  }
  float alpha;
  float beta;
};

struct HardSwish : Cheap {
  template <floating_point T>
  T operator()(T x) const {
    const T y = x / 6 + T{0.5};
    return x * fastmath::select(y > 0, fastmath::select(y < 1, y, T{1}), T{0});
  }
};

struct Gelu : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    return T{0.5} * x * (1 + Erf{}(x * static_cast<T>(std::numbers::sqrt2 / 2)));
  }
};

// Gelu with approximate="tanh": 0.5 x (1 + tanh(u)) is x sigmoid(2u), one exponential and no
// cancellation where tanh(u) nears -1 (through tanh, 2.5x the erf Gelu's time).
struct GeluTanh : Expensive {
  template <floating_point T>
  T operator()(T x) const {
    const T inner = static_cast<T>(0.7978845608028654) * (x + static_cast<T>(0.044715) * x * x * x);
    if constexpr (std::same_as<T, float>) return x / (1 + fastmath::exp(-2 * inner));
    return x / (1 + std::exp(-2 * inner));
  }
};

// A unary op built once per node (attributes read at compile time), run over contiguous data.
template <typename Op>
class UnaryKernel final : public Kernel {
 public:
  explicit UnaryKernel(const Node& node) : node_(node), op_(make_op(node)) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    dispatch_kernel_dtype(node_, inputs[0].dtype(), [&]<typename T>() {
      if constexpr (std::invocable<const Op&, T>) {
        map_unary<T, std::invoke_result_t<const Op&, T>>(inputs[0], outputs[0], op_, Op::kGrain);
      } else {
        throw_unsupported_dtype(node_, inputs[0].dtype());
      }
    });
  }

 private:
  static Op make_op(const Node& node) {
    if constexpr (std::constructible_from<Op, const Node&>) {
      return Op(node);
    } else {
      return Op{};
    }
  }

  const Node& node_;
  const Op op_;
};

template <typename Op>
std::unique_ptr<Kernel> make_unary(const KernelSpec& spec) {
  return std::make_unique<UnaryKernel<Op>>(spec.node);
}

template <typename Op>
void add_unary(KernelRegistry& registry, std::string op_type) {
  registry.add(std::move(op_type), &make_unary<Op>, Elements::kNumeric, Op::kGrain);
}

// The bound in input `index`, or `fallback` when the input is omitted.
template <typename T>
T clip_bound(const Node& node, std::span<const Tensor> inputs, size_t index, T fallback) {
  if (index >= inputs.size() || !inputs[index].defined()) return fallback;
  if (inputs[index].numel() != 1) {
    throw InputError(node.label() + ": " + (index == 1 ? "min" : "max") +
                     " must hold one value, not " + shape_str(inputs[index].shape()));
  }
  return inputs[index].data<T>()[0];
}

void clip_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  dispatch_kernel_dtype(node, inputs[0].dtype(), [&]<typename T>() {
    if constexpr (std::same_as<T, bool>) {
      throw_unsupported_dtype(node, inputs[0].dtype());
    } else {
      const T low = clip_bound(node, inputs, 1, std::numeric_limits<T>::lowest());
      const T high = clip_bound(node, inputs, 2, std::numeric_limits<T>::max());
      map_unary<T, T>(inputs[0], outputs[0],
                      [low, high](T x) { return x < low ? low : (x > high ? high : x); });
    }
  });
}

}  // namespace

void register_elementwise_unary_kernels(KernelRegistry& registry) {
  add_unary<Relu>(registry, "Relu");
  add_unary<Sigmoid>(registry, "Sigmoid");
  add_unary<Tanh>(registry, "Tanh");
  add_unary<Exp>(registry, "Exp");
  add_unary<Log>(registry, "Log");
  add_unary<Sqrt>(registry, "Sqrt");
  add_unary<Erf>(registry, "Erf");
  add_unary<Neg>(registry, "Neg");
  add_unary<Abs>(registry, "Abs");
  add_unary<Reciprocal>(registry, "Reciprocal");
  add_unary<Floor>(registry, "Floor");
  add_unary<Ceil>(registry, "Ceil");
  add_unary<Round>(registry, "Round");
  add_unary<Sign>(registry, "Sign");
  add_unary<Not>(registry, "Not");
  add_unary<Sin>(registry, "Sin");
  add_unary<Cos>(registry, "Cos");
  add_unary<Softplus>(registry, "Softplus");
  add_unary<Softsign>(registry, "Softsign");
  add_unary<IsNaN>(registry, "IsNaN");
  add_unary<IsInf>(registry, "IsInf");
  add_unary<LeakyRelu>(registry, "LeakyRelu");
  add_unary<Elu>(registry, "Elu");
  add_unary<Selu>(registry, "Selu");
  add_unary<Celu>(registry, "Celu");
  add_unary<HardSigmoid>(registry, "HardSigmoid");
  add_unary<HardSwish>(registry, "HardSwish");
  static_assert(Gelu::kGrain == GeluTanh::kGrain);
  registry.add(
      "Gelu",
      [](const KernelSpec& spec) {
        return spec.node.attr_string("approximate", "none") == "tanh" ? make_unary<GeluTanh>(spec)
                                                                      : make_unary<Gelu>(spec);
      },
      Elements::kNumeric, Gelu::kGrain);
  registry.add("Clip", &clip_kernel, Elements::kNumeric, kCheapGrain);
}

}  // namespace tandem::cpu
