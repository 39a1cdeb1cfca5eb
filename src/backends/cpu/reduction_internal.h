#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/kernel_registry.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/shape.h"

// Helpers shared by the CPU kernels of the reduction family (src/backends/cpu/reduction*.cpp).
namespace tandem::cpu::reduction {

void register_softmax_kernels(KernelRegistry& registry);
void register_normalization_kernels(KernelRegistry& registry);
void register_cumsum_kernel(KernelRegistry& registry);

// Calls run.operator()<T>() for the float types these kernels compute in (float, double).
template <typename Fn>
void dispatch_float(const Node& node, DType dtype, Fn&& run) {
  switch (dtype) {
    case DType::kFloat32: return run.template operator()<float>();
    case DType::kFloat64: return run.template operator()<double>();
    default:
      throw InputError(node.label() + ": no CPU kernel for " + std::string(dtype_name(dtype)));
  }
}

// Work (in elements) below which a kernel stays on one thread.
inline constexpr int64_t kParallelWork = int64_t{1} << 15;

// Inner extents are processed in tiles of this many elements, so per-tile accumulators stay on
// the stack and both the outer and the inner dimensions give parallel work.
inline constexpr int64_t kInnerTile = 256;

// A tensor seen as [outer, extent, inner] around the dims [first, end).
struct AxisView {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
  int64_t tiles() const { return (inner + kInnerTile - 1) / kInnerTile; }
};

inline AxisView view_around(const Shape& shape, size_t first, size_t end) {
  AxisView view;
  for (size_t d = 0; d < shape.size(); ++d) {
    (d < first ? view.outer : d < end ? view.extent : view.inner) *= shape[d];
  }
  return view;
}

// Eight floats in one AVX register. GCC's vector extensions, because with the default
// -ftrapping-math it will not vectorise the clamps of exp written as scalar code.
using Float8 = float __attribute__((vector_size(32)));
using Int8 = int32_t __attribute__((vector_size(32)));

// x = exp(x) within 2 ulp for x in [-87.3, 88], 0 below (so -inf gives 0). Cephes' polynomial
// on x - n*ln2, scaled by 2^n through the exponent bits. In place: vectors passed by value would
// change the ABI of builds without AVX.
inline void exp8(Float8& x) {
  const Float8 low = Float8{} - 87.3f;
  const Float8 high = Float8{} + 88.0f;
  const Float8 clamped = x < low ? low : (x > high ? high : x);
  const Float8 n = (clamped * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
  const Float8 r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  Float8 p = Float8{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const Float8 poly = p * r * r + r + 1.0f;
  const Int8 scale_bits = (__builtin_convertvector(n, Int8) + 127) << 23;
  Float8 scale;
  std::memcpy(&scale, &scale_bits, sizeof(scale));
  x = x < low ? Float8{} : poly * scale;
}

// y[i] = exp(x[i] - shift) for i in [0, n) (y may be x; null to only sum); returns the sum,
// in float lanes per block and double across blocks so long rows stay accurate.
inline double exp_shifted_sum(const float* x, float shift, float* y, int64_t n) {
  constexpr int64_t kBlock = 512;
  double total = 0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    Float8 partial{};
    int64_t i = start;
    for (; i + 8 <= end; i += 8) {
      Float8 e;
      std::memcpy(&e, x + i, sizeof(e));
      e -= shift;
      exp8(e);
      if (y) std::memcpy(y + i, &e, sizeof(e));
      partial += e;
    }
    if (i < end) {
      const auto tail_bytes = static_cast<size_t>(end - i) * sizeof(float);
      Float8 e = Float8{} - __builtin_inff();  // padding lanes give exp(-inf) = 0
      std::memcpy(&e, x + i, tail_bytes);
      e -= shift;
      exp8(e);
      if (y) std::memcpy(y + i, &e, tail_bytes);
      partial += e;
    }
    for (int lane = 0; lane < 8; ++lane) total += partial[lane];
  }
  return total;
}

// Sum of term(i) over [0, n): float lanes within blocks (vectorised), blocks added in double.
template <typename Term>
double blocked_sum(int64_t n, Term&& term) {
  constexpr int64_t kBlock = 512;
  double total = 0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    float partial = 0;
#pragma omp simd reduction(+ : partial)
    for (int64_t i = start; i < end; ++i) partial += term(i);
    total += partial;
  }
  return total;
}

}  // namespace tandem::cpu::reduction
