// CUDA kernels of the elementwise ops: broadcasting binary ops, Pow, Where, unary math and
// activations, Clip and Cast. Scalar semantics follow the CPU backend
// (ir/ops/elementwise_scalar.h, backends/cpu/elementwise*.cpp); float16 and bfloat16 compute in
// float32.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/elementwise_launch.h"

namespace tandem::cuda {
namespace {

[[noreturn]] void unsupported(const char* what) {
  throw std::invalid_argument(std::string("no CUDA elementwise kernel for ") + what);
}

template <typename T>
inline constexpr bool kIsNumber = kIsFloat<T> || kIsInteger<T>;
template <typename T>
inline constexpr bool kIsSigned = kIsFloat<T> || (kIsInteger<T> && std::is_signed_v<T>);

// ---- Scalar math, by compute type ----

__device__ float exp_of(float x) { return expf(x); }
__device__ double exp_of(double x) { return exp(x); }
__device__ float expm1_of(float x) { return expm1f(x); }
__device__ double expm1_of(double x) { return expm1(x); }
__device__ float log_of(float x) { return logf(x); }
__device__ double log_of(double x) { return log(x); }
__device__ float log1p_of(float x) { return log1pf(x); }
__device__ double log1p_of(double x) { return log1p(x); }
__device__ float sqrt_of(float x) { return sqrtf(x); }
__device__ double sqrt_of(double x) { return sqrt(x); }
__device__ float sin_of(float x) { return sinf(x); }
__device__ double sin_of(double x) { return sin(x); }
__device__ float cos_of(float x) { return cosf(x); }
__device__ double cos_of(double x) { return cos(x); }
__device__ float tanh_of(float x) { return tanhf(x); }
__device__ double tanh_of(double x) { return tanh(x); }
__device__ float erf_of(float x) { return erff(x); }
__device__ double erf_of(double x) { return erf(x); }
__device__ float floor_of(float x) { return floorf(x); }
__device__ double floor_of(double x) { return floor(x); }
__device__ float ceil_of(float x) { return ceilf(x); }
__device__ double ceil_of(double x) { return ceil(x); }
__device__ float rint_of(float x) { return rintf(x); }
__device__ double rint_of(double x) { return rint(x); }
__device__ float abs_of(float x) { return fabsf(x); }
__device__ double abs_of(double x) { return fabs(x); }
__device__ float fmod_of(float a, float b) { return fmodf(a, b); }
__device__ double fmod_of(double a, double b) { return fmod(a, b); }

// -x, wrapping for integers.
template <typename C>
__device__ C negate(C x) {
  if constexpr (kIsInteger<C>) {
    return wrap_sub(C{0}, x);
  } else {
    return -x;  // 0 - x would lose the sign of zero
  }
}

// Float to integer: truncation toward zero, saturating at int64's range (NaN gives 0), then
// wrapping to narrower types, as ew::float_to_integer.
template <typename To, typename From>
__device__ To float_to_integer(From value) {
  constexpr From kLimit = static_cast<From>(9223372036854775808.0);  // 2^63
  int64_t wide;
  if (value != value) {
    wide = 0;
  } else if (value >= kLimit) {
    wide = INT64_MAX;
  } else if (value < -kLimit) {
    wide = INT64_MIN;
  } else {
    wide = static_cast<int64_t>(value);
  }
  return static_cast<To>(wide);
}

// The value of `From` as `To`, by ONNX Cast rules (as ew::convert).
template <typename To, typename From>
__device__ To convert(From value) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat>) {
    return convert<To>(widen(value));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat>) {
    return narrow<To>(static_cast<float>(value));
  } else if constexpr (kIsBool<To>) {
    return value != From{0};
  } else if constexpr (kIsInteger<To> && kIsFloat<From>) {
    return float_to_integer<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

// ---- Broadcast views ----

// Operand views over a dense output, collapsed to as few dims as the operands allow.
template <int N>
struct Plan {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[N][kMaxRank] = {};
  int64_t count = 1;
  bool fits_32_bits = true;  // every index and offset below 2^31
};

// `views` share their sizes (the output's). Size-1 dims drop out; neighbouring dims merge when
// every operand walks them as one.
template <int N>
Plan<N> make_plan(const Dims* const (&views)[N]) {
  const Dims& shape = *views[0];
  Plan<N> plan;
  for (int d = 0; d < shape.rank; ++d) {
    plan.count *= shape.size[d];
    if (shape.size[d] == 1) continue;
    bool merge = plan.rank > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = plan.stride[k][plan.rank - 1] == views[k]->stride[d] * shape.size[d];
    }
    if (!merge) plan.size[plan.rank++] = 1;
    plan.size[plan.rank - 1] *= shape.size[d];
    for (int k = 0; k < N; ++k) plan.stride[k][plan.rank - 1] = views[k]->stride[d];
  }
  if (plan.rank == 0) plan.rank = plan.size[0] = 1;  // one element
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  plan.fits_32_bits = plan.count <= kLimit;
  for (int k = 0; k < N; ++k) {
    int64_t last = 0;
    for (int d = 0; d < plan.rank; ++d) last += (plan.size[d] - 1) * plan.stride[k][d];
    plan.fits_32_bits = plan.fits_32_bits && last <= kLimit;
  }
  return plan;
}

// A Plan in the index type the kernel computes offsets in.
template <typename Index, int N>
struct View {
  int rank;
  Index size[kMaxRank];
  Index stride[N][kMaxRank];
};

template <typename Index, int N>
View<Index, N> view_of(const Plan<N>& plan) {
  View<Index, N> view{};
  view.rank = plan.rank;
  for (int d = 0; d < plan.rank; ++d) {
    view.size[d] = static_cast<Index>(plan.size[d]);
    for (int k = 0; k < N; ++k) view.stride[k][d] = static_cast<Index>(plan.stride[k][d]);
  }
  return view;
}

// The element offset of each operand for dense output index i.
template <typename Index, int N>
__device__ void locate(const View<Index, N>& view, Index i, Index (&offset)[N]) {
  for (int k = 0; k < N; ++k) offset[k] = 0;
  for (int d = view.rank - 1; d > 0; --d) {
    const Index coord = i % view.size[d];
    i /= view.size[d];
    for (int k = 0; k < N; ++k) offset[k] += coord * view.stride[k][d];
  }
  for (int k = 0; k < N; ++k) offset[k] += i * view.stride[k][0];
}

// Calls launch(view, count) in 32-bit indices where they suffice (cheaper division).
template <int N, typename Launch>
void with_view(const Plan<N>& plan, Launch&& launch) {
  if (plan.fits_32_bits) {
    launch(view_of<uint32_t>(plan), static_cast<uint32_t>(plan.count));
  } else {
    launch(view_of<int64_t>(plan), plan.count);
  }
}

// ---- Op traits ----

// Which element types an op's kernel is built for, and whether it writes bool (comparisons,
// logic, tests) rather than its operands' type.
enum class Takes { kAny, kNumbers, kSigned, kIntegers, kFloats, kBool };

template <Takes kTakes, bool kLogicalResult = false>
struct OpTraits {
  static constexpr bool kLogical = kLogicalResult;
  template <typename T>
  static constexpr bool accepts() {
    switch (kTakes) {
      case Takes::kAny: return true;
      case Takes::kNumbers: return kIsNumber<T>;
      case Takes::kSigned: return kIsSigned<T>;
      case Takes::kIntegers: return kIsInteger<T>;
      case Takes::kFloats: return kIsFloat<T>;
      case Takes::kBool: return kIsBool<T>;
    }
    return false;
  }
};

// ---- Binary ops ----

struct AddOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    return wrap_add(a, b);
  }
};
struct SubOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    return wrap_sub(a, b);
  }
};
struct MulOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    return wrap_mul(a, b);
  }
};

// Integer division truncates toward zero. A zero divisor gives 0: the CPU backend reports it as
// an error before computing, which a kernel cannot do without a round trip to the host.
struct DivOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if constexpr (kIsInteger<C>) {
      if (b == 0) return C{0};
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return negate(a);  // INT_MIN / -1 would trap
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// As C's fmod and %; an integer zero divisor gives 0 (see DivOp).
struct TruncModOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if constexpr (kIsInteger<C>) {
      if (b == 0) return C{0};
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C{0};
      }
      return static_cast<C>(a % b);
    } else {
      return fmod_of(a, b);
    }
  }
};

// The remainder takes the divisor's sign; an integer zero divisor gives 0 (see DivOp).
struct FloorModOp : OpTraits<Takes::kIntegers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if (b == 0) return C{0};
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return C{0};
      const C r = static_cast<C>(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<C>(r + b) : r;
    } else {
      return static_cast<C>(a % b);
    }
  }
};

struct MaxOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    return (b > a || b != b) ? b : a;
  }
};
struct MinOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    return (b < a || b != b) ? b : a;
  }
};

struct PReluOp : OpTraits<Takes::kSigned> {
  template <typename C>
  __device__ C operator()(C x, C slope) const {
    return x < 0 ? wrap_mul(slope, x) : x;
  }
};

struct EqualOp : OpTraits<Takes::kAny, true> {
  template <typename C>
  __device__ bool operator()(C a, C b) const {
    return a == b;
  }
};
struct LessOp : OpTraits<Takes::kNumbers, true> {
  template <typename C>
  __device__ bool operator()(C a, C b) const {
    return a < b;
  }
};
struct LessOrEqualOp : OpTraits<Takes::kNumbers, true> {
  template <typename C>
  __device__ bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct GreaterOp : OpTraits<Takes::kNumbers, true> {
  template <typename C>
  __device__ bool operator()(C a, C b) const {
    return a > b;
  }
};
struct GreaterOrEqualOp : OpTraits<Takes::kNumbers, true> {
  template <typename C>
  __device__ bool operator()(C a, C b) const {
    return a >= b;
  }
};
struct AndOp : OpTraits<Takes::kBool, true> {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp : OpTraits<Takes::kBool, true> {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp : OpTraits<Takes::kBool, true> {
  __device__ bool operator()(bool a, bool b) const { return a != b; }
};

// What an op writes for operands of type T: bool for comparisons and logic, else T.
template <typename Op, typename T>
using OutOf = std::conditional_t<Op::kLogical, bool, T>;

template <typename Op, typename T, typename Index>
__global__ void binary_kernel(Op op, const T* a, const T* b, OutOf<Op, T>* out, View<Index, 2> view,
                              Index count) {
  for (Index i = first_index<Index>(); i < count; i += grid_stride<Index>()) {
    Index at[2];
    locate(view, i, at);
    out[i] = narrow<OutOf<Op, T>>(op(widen(a[at[0]]), widen(b[at[1]])));
  }
}

template <typename Op>
void run_binary(Op op, Elem elem, const void* a, const Dims& a_view, const void* b,
                const Dims& b_view, void* out, cudaStream_t stream) {
  const Plan<2> plan = make_plan<2>({&a_view, &b_view});
  if (plan.count == 0) return;
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::template accepts<T>()) {
      with_view(plan, [&](auto view, auto count) {
        binary_kernel<<<blocks_for(plan.count), kThreads, 0, stream>>>(
            op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<OutOf<Op, T>*>(out),
            view, count);
      });
    } else {
      unsupported("this binary op and element type");
    }
  });
}

// ---- Pow ----

template <typename T, typename Index>
__global__ void pow_kernel(const T* base, const void* exponent, Elem exponent_elem, T* out,
                           View<Index, 2> view, Index count) {
  for (Index i = first_index<Index>(); i < count; i += grid_stride<Index>()) {
    Index at[2];
    locate(view, i, at);
    // The exponent as double, whatever its type.
    const double e = load_as<double>(exponent, exponent_elem, at[1]);
    if constexpr (std::is_same_v<T, float>) {
      out[i] = exponent_elem == Elem::kF32
                   ? powf(base[at[0]], static_cast<float>(e))
                   : static_cast<float>(pow(static_cast<double>(base[at[0]]), e));
    } else if constexpr (kIsInteger<T>) {
      out[i] = float_to_integer<T>(pow(static_cast<double>(base[at[0]]), e));
    } else {
      out[i] = narrow<T>(pow(static_cast<double>(widen(base[at[0]])), e));
    }
  }
}

// ---- Where ----

template <typename T, typename Index>
__global__ void where_kernel(const bool* condition, const T* x, const T* y, T* out,
                             View<Index, 3> view, Index count) {
  for (Index i = first_index<Index>(); i < count; i += grid_stride<Index>()) {
    Index at[3];
    locate(view, i, at);
    out[i] = condition[at[0]] ? x[at[1]] : y[at[2]];
  }
}

// ---- Unary ops ----

using FloatUnary = OpTraits<Takes::kFloats>;

struct NegOp : OpTraits<Takes::kSigned> {
  template <typename C>
  __device__ C operator()(C x) const {
    return negate(x);
  }
};
struct AbsOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (kIsFloat<C>) {
      return abs_of(x);
    } else if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < 0 ? negate(x) : x;
    }
  }
};
// Keeps 0 and NaN.
struct SignOp : OpTraits<Takes::kNumbers> {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x > 0 ? C{1} : C{0};
    } else {
      return x > 0 ? C{1} : (x < 0 ? C(-1) : x);
    }
  }
};
struct ReluOp : OpTraits<Takes::kSigned> {
  template <typename C>
  __device__ C operator()(C x) const {
    return x < 0 ? C{0} : x;  // keeps NaN
  }
};
struct NotOp : OpTraits<Takes::kBool, true> {
  __device__ bool operator()(bool x) const { return !x; }
};
struct IsInfOp : OpTraits<Takes::kFloats, true> {
  bool negative;
  bool positive;
  template <typename C>
  __device__ bool operator()(C x) const {
    const C inf = static_cast<C>(INFINITY);
    return (positive && x == inf) || (negative && x == -inf);
  }
};
struct IsNaNOp : OpTraits<Takes::kFloats, true> {
  template <typename C>
  __device__ bool operator()(C x) const {
    return x != x;
  }
};

struct ReciprocalOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return C{1} / x;
  }
};
struct SqrtOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return sqrt_of(x);
  }
};
struct ExpOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return exp_of(x);
  }
};
struct LogOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return log_of(x);
  }
};
struct SinOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return sin_of(x);
  }
};
struct CosOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return cos_of(x);
  }
};
struct ErfOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return erf_of(x);
  }
};
struct FloorOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return floor_of(x);
  }
};
struct CeilOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return ceil_of(x);
  }
};
struct RoundOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return rint_of(x);  // the default rounding mode: halves to even
  }
};
struct SigmoidOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return C{1} / (C{1} + exp_of(-x));
  }
};
struct TanhOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return tanh_of(x);
  }
};
// log(1 + e^x) without overflow for large x.
struct SoftplusOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return x > 0 ? x + log1p_of(exp_of(-x)) : log1p_of(exp_of(x));
  }
};
struct SoftsignOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return x / (C{1} + abs_of(x));
  }
};
struct LeakyReluOp : FloatUnary {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const {
    return x < 0 ? static_cast<C>(alpha) * x : x;
  }
};
struct EluOp : FloatUnary {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const {
    return x < 0 ? static_cast<C>(alpha) * expm1_of(x) : x;
  }
};
struct CeluOp : FloatUnary {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return x > 0 ? x : a * expm1_of(x / a);
  }
};
struct SeluOp : FloatUnary {
  float alpha;
  float gamma;
  template <typename C>
  __device__ C operator()(C x) const {
    const C g = static_cast<C>(gamma);
    return x > 0 ? g * x : g * static_cast<C>(alpha) * expm1_of(x);
  }
};
// min(max(y, 0), 1) with NaN giving 0, as the CPU backend's select chain.
template <typename C>
__device__ C unit_clamp(C y) {
  return y > 0 ? (y < 1 ? y : C{1}) : C{0};
}
struct HardSigmoidOp : FloatUnary {
  float alpha;
  float beta;
  template <typename C>
  __device__ C operator()(C x) const {
    return unit_clamp(static_cast<C>(alpha) * x + static_cast<C>(beta));
  }
};
struct HardSwishOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return x * unit_clamp(x / C{6} + C{0.5});
  }
};
struct GeluOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    constexpr C kInvSqrt2 = static_cast<C>(0.70710678118654752440);
    return C{0.5} * x * (C{1} + erf_of(x * kInvSqrt2));
  }
};
struct GeluTanhOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    constexpr C kSqrt2OverPi = static_cast<C>(0.7978845608028654);
    constexpr C kCubic = static_cast<C>(0.044715);
    return C{0.5} * x * (C{1} + tanh_of(kSqrt2OverPi * (x + kCubic * x * x * x)));
  }
};
struct SquareOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return x * x;
  }
};
struct CubeOp : FloatUnary {
  template <typename C>
  __device__ C operator()(C x) const {
    return x * x * x;
  }
};
struct DivideOp : FloatUnary {
  float divisor;
  template <typename C>
  __device__ C operator()(C x) const {
    return x / static_cast<C>(divisor);
  }
};

template <typename Op, typename T>
__global__ void unary_kernel(Op op, const T* in, OutOf<Op, T>* out, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    out[i] = narrow<OutOf<Op, T>>(op(widen(in[i])));
  }
}

template <typename Op>
void run_unary(Op op, Elem elem, const void* in, void* out, int64_t count, cudaStream_t stream) {
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::template accepts<T>()) {
      unary_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
          op, static_cast<const T*>(in), static_cast<OutOf<Op, T>*>(out), count);
    } else {
      unsupported("this unary op and element type");
    }
  });
}

// ---- Clip ----

// The lowest and highest values of a storage type, as Clip's defaults.
template <typename T>
T lowest_of() {
  if constexpr (std::is_same_v<T, Half>) {
    __half_raw raw;
    raw.x = 0xFBFF;  // -65504
    return Half(raw);
  } else if constexpr (std::is_same_v<T, BFloat>) {
    __nv_bfloat16_raw raw;
    raw.x = 0xFF7F;  // -3.39e38
    return BFloat(raw);
  } else {
    return std::numeric_limits<T>::lowest();
  }
}
template <typename T>
T highest_of() {
  if constexpr (std::is_same_v<T, Half>) {
    __half_raw raw;
    raw.x = 0x7BFF;  // 65504
    return Half(raw);
  } else if constexpr (std::is_same_v<T, BFloat>) {
    __nv_bfloat16_raw raw;
    raw.x = 0x7F7F;  // 3.39e38
    return BFloat(raw);
  } else {
    return std::numeric_limits<T>::max();
  }
}

template <typename T>
__global__ void clip_kernel(const T* in, T* out, int64_t count, T low, T high) {
  const Compute<T> lo = widen(low);
  const Compute<T> hi = widen(high);
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const Compute<T> x = widen(in[i]);
    out[i] = x < lo ? low : (x > hi ? high : in[i]);
  }
}

// ---- Cast ----

template <typename From, typename To>
__global__ void cast_kernel(const From* in, To* out, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    out[i] = convert<To>(in[i]);
  }
}

}  // namespace

void launch_binary(BinaryOp op, Elem elem, const void* a, const Dims& a_view, const void* b,
                   const Dims& b_view, void* out, cudaStream_t stream) {
  const auto run = [&](auto functor) {
    run_binary(functor, elem, a, a_view, b, b_view, out, stream);
  };
  switch (op) {
    case BinaryOp::kAdd: return run(AddOp{});
    case BinaryOp::kSub: return run(SubOp{});
    case BinaryOp::kMul: return run(MulOp{});
    case BinaryOp::kDiv: return run(DivOp{});
    case BinaryOp::kTruncMod: return run(TruncModOp{});
    case BinaryOp::kFloorMod: return run(FloorModOp{});
    case BinaryOp::kMax: return run(MaxOp{});
    case BinaryOp::kMin: return run(MinOp{});
    case BinaryOp::kPRelu: return run(PReluOp{});
    case BinaryOp::kEqual: return run(EqualOp{});
    case BinaryOp::kLess: return run(LessOp{});
    case BinaryOp::kLessOrEqual: return run(LessOrEqualOp{});
    case BinaryOp::kGreater: return run(GreaterOp{});
    case BinaryOp::kGreaterOrEqual: return run(GreaterOrEqualOp{});
    case BinaryOp::kAnd: return run(AndOp{});
    case BinaryOp::kOr: return run(OrOp{});
    case BinaryOp::kXor: return run(XorOp{});
  }
  unsupported("this binary op");
}

void launch_pow(Elem base_elem, Elem exponent_elem, const void* base, const Dims& base_view,
                const void* exponent, const Dims& exponent_view, void* out, cudaStream_t stream) {
  const Plan<2> plan = make_plan<2>({&base_view, &exponent_view});
  if (plan.count == 0) return;
  dispatch(base_elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsNumber<T>) {
      with_view(plan, [&](auto view, auto count) {
        pow_kernel<<<blocks_for(plan.count), kThreads, 0, stream>>>(
            static_cast<const T*>(base), exponent, exponent_elem, static_cast<T*>(out), view,
            count);
      });
    } else {
      unsupported("a bool base of Pow");
    }
  });
}

void launch_where(int element_bytes, const void* condition, const Dims& condition_view,
                  const void* x, const Dims& x_view, const void* y, const Dims& y_view, void* out,
                  cudaStream_t stream) {
  const Plan<3> plan = make_plan<3>({&condition_view, &x_view, &y_view});
  if (plan.count == 0) return;
  const auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_view(plan, [&](auto view, auto count) {
      where_kernel<<<blocks_for(plan.count), kThreads, 0, stream>>>(
          static_cast<const bool*>(condition), static_cast<const T*>(x), static_cast<const T*>(y),
          static_cast<T*>(out), view, count);
    });
  };
  switch (element_bytes) {
    case 1: return run(Tag<uint8_t>{});
    case 2: return run(Tag<uint16_t>{});
    case 4: return run(Tag<uint32_t>{});
    case 8: return run(Tag<uint64_t>{});
    default: unsupported("Where on elements of this size");
  }
}

void launch_unary(UnaryOp op, Elem elem, const void* in, void* out, int64_t count,
                  const UnaryParams& params, cudaStream_t stream) {
  if (count == 0) return;
  const auto run = [&](auto functor) { run_unary(functor, elem, in, out, count, stream); };
  switch (op) {
    case UnaryOp::kNeg: return run(NegOp{});
    case UnaryOp::kAbs: return run(AbsOp{});
    case UnaryOp::kSign: return run(SignOp{});
    case UnaryOp::kRelu: return run(ReluOp{});
    case UnaryOp::kNot: return run(NotOp{});
    case UnaryOp::kIsInf: return run(IsInfOp{{}, params.detect_negative, params.detect_positive});
    case UnaryOp::kIsNaN: return run(IsNaNOp{});
    case UnaryOp::kReciprocal: return run(ReciprocalOp{});
    case UnaryOp::kSqrt: return run(SqrtOp{});
    case UnaryOp::kExp: return run(ExpOp{});
    case UnaryOp::kLog: return run(LogOp{});
    case UnaryOp::kSin: return run(SinOp{});
    case UnaryOp::kCos: return run(CosOp{});
    case UnaryOp::kErf: return run(ErfOp{});
    case UnaryOp::kFloor: return run(FloorOp{});
    case UnaryOp::kCeil: return run(CeilOp{});
    case UnaryOp::kRound: return run(RoundOp{});
    case UnaryOp::kSigmoid: return run(SigmoidOp{});
    case UnaryOp::kTanh: return run(TanhOp{});
    case UnaryOp::kSoftplus: return run(SoftplusOp{});
    case UnaryOp::kSoftsign: return run(SoftsignOp{});
    case UnaryOp::kLeakyRelu: return run(LeakyReluOp{{}, params.alpha});
    case UnaryOp::kElu: return run(EluOp{{}, params.alpha});
    case UnaryOp::kCelu: return run(CeluOp{{}, params.alpha});
    case UnaryOp::kSelu: return run(SeluOp{{}, params.alpha, params.gamma});
    case UnaryOp::kHardSigmoid: return run(HardSigmoidOp{{}, params.alpha, params.beta});
    case UnaryOp::kHardSwish: return run(HardSwishOp{});
    case UnaryOp::kGelu: return run(GeluOp{});
    case UnaryOp::kGeluTanh: return run(GeluTanhOp{});
    case UnaryOp::kSquare: return run(SquareOp{});
    case UnaryOp::kCube: return run(CubeOp{});
    case UnaryOp::kDivide: return run(DivideOp{{}, params.alpha});
  }
  unsupported("this unary op");
}

void launch_clip(Elem elem, const void* in, void* out, int64_t count, const void* low,
                 const void* high, cudaStream_t stream) {
  if (count == 0) return;
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsNumber<T>) {
      T low_value = lowest_of<T>();
      T high_value = highest_of<T>();
      if (low) std::memcpy(&low_value, low, sizeof(T));
      if (high) std::memcpy(&high_value, high, sizeof(T));
      clip_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
          static_cast<const T*>(in), static_cast<T*>(out), count, low_value, high_value);
    } else {
      unsupported("Clip of bool");
    }
  });
}

void launch_cast(Elem from, Elem to, const void* in, void* out, int64_t count,
                 cudaStream_t stream) {
  if (count == 0) return;
  dispatch(from, [&](auto from_tag) {
    dispatch(to, [&](auto to_tag) {
      using From = typename decltype(from_tag)::type;
      using To = typename decltype(to_tag)::type;
      cast_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const From*>(in),
                                                              static_cast<To*>(out), count);
    });
  });
}

}  // namespace tandem::cuda
