#pragma once
// Branch-free float32 approximations of exp, tanh, sigmoid and erf that the compiler can
// vectorise (std::exp and friends stay scalar without -ffast-math). Relative error < 1e-6.
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tandem::cpu::fastmath {

// `condition ? if_true : if_false` as bit operations. Under the default -ftrapping-math GCC
// will not evaluate both arms of a float ?: unconditionally, so loops with one stay scalar.
template <std::floating_point T>
T select(bool condition, T if_true, T if_false) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const Bits mask = Bits{0} - static_cast<Bits>(condition);
  return std::bit_cast<T>((std::bit_cast<Bits>(if_true) & mask) |
                          (std::bit_cast<Bits>(if_false) & ~mask));
}

inline float clamp(float x, float low, float high) {
  return select(x < high, select(x > low, x, low), high);  // NaN becomes `low`
}

// Cephes expf: x = n*ln2 + r with |r| <= ln2/2, a degree-6 polynomial for e^r, and 2^n built in
// two halves so that results down into the subnormal range stay exact.
inline float exp(float x) {
  constexpr float kMax = 88.7228394f;            // log(FLT_MAX)
  constexpr float kMin = -104.0f;                // below the smallest subnormal
  constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float clamped = clamp(x, kMin, kMax);    // NaN is restored at the end
  const float n = (clamped * 1.44269504088896341f + kRoundingShift) - kRoundingShift;
  const float r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t exponent = static_cast<int32_t>(n);
  const int32_t half = exponent >> 1;
  const float scale_a = std::bit_cast<float>((half + 127) << 23);
  const float scale_b = std::bit_cast<float>((exponent - half + 127) << 23);
  const float result = p * scale_a * scale_b;
  const float bounded = select(x > kMax, std::numeric_limits<float>::infinity(), result);
  return select(x != x, x, bounded);
}

inline float sigmoid(float x) { return 1.0f / (1.0f + fastmath::exp(-x)); }

// Cephes tanhf: an odd polynomial near zero (where 1 - 2/(e^2x + 1) would cancel), the
// exponential form elsewhere.
inline float tanh(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float magnitude = 1.0f - 2.0f / (fastmath::exp(2.0f * std::abs(x)) + 1.0f);
  const float large = std::copysign(magnitude, x);
  return select(std::abs(x) < 0.625f, small, large);
}

// The rational approximation of Eigen and XLA on [-4, 4], where erf reaches 1 in float.
inline float erf(float x) {
  const float clamped = clamp(x, -4.0f, 4.0f);
  const float z = clamped * clamped;
  float p = -2.72614225801306e-10f;
  p = p * z + 2.77068142495902e-08f;
  p = p * z - 2.10102402082508e-06f;
  p = p * z - 5.69250639462346e-05f;
  p = p * z - 7.34990630326855e-04f;
  p = p * z - 2.95459980854025e-03f;
  p = p * z - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * z - 2.13374055278905e-04f;
  q = q * z - 1.68282697438203e-03f;
  q = q * z - 7.37332916720468e-03f;
  q = q * z - 1.42647390514189e-02f;
  return select(x != x, x, clamped * p / q);
}

}  // namespace tandem::cpu::fastmath
