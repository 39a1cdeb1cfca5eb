#pragma once
// Scalar semantics of the elementwise ops, shared by shape-arithmetic folding (ir/ops) and the
// CPU kernels so that both compute exactly the same values.
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/error.h"

namespace tandem::elementwise {

// Storage of the 16-bit float types, distinct from uint16_t so conversions can tell them apart.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Calls `fn.template operator()<T>()` with T the storage type of any DType.
template <typename Fn>
decltype(auto) dispatch_any_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn.template operator()<float>();
    case DType::kFloat16: return fn.template operator()<Float16>();
    case DType::kBFloat16: return fn.template operator()<BFloat16>();
    case DType::kFloat64: return fn.template operator()<double>();
    case DType::kInt8: return fn.template operator()<int8_t>();
    case DType::kUInt8: return fn.template operator()<uint8_t>();
    case DType::kInt16: return fn.template operator()<int16_t>();
    case DType::kInt32: return fn.template operator()<int32_t>();
    case DType::kInt64: return fn.template operator()<int64_t>();
    case DType::kBool: return fn.template operator()<bool>();
    case DType::kUndefined: break;
  }
  throw InputError("no conversion for dtype " + std::string(dtype_name(dtype)));
}

template <typename T>
concept SignedInteger = std::signed_integral<T>;
template <typename T>
concept Integer = std::integral<T> && !std::same_as<T, bool>;
template <typename T>
concept Number = (std::integral<T> || std::floating_point<T>)&&!std::same_as<T, bool>;

// Float to integer: truncation toward zero, saturating at the limits of int64 (NaN gives 0),
// then wrapping to narrower types as an integer conversion does.
template <Integer To, std::floating_point From>
To float_to_integer(From value) {
  constexpr From kLimit = static_cast<From>(9223372036854775808.0);  // 2^63
  int64_t wide;
  if (value != value) {
    wide = 0;
  } else if (value >= kLimit) {
    wide = std::numeric_limits<int64_t>::max();
  } else if (value < -kLimit) {
    wide = std::numeric_limits<int64_t>::min();
  } else {
    wide = static_cast<int64_t>(value);
  }
  return static_cast<To>(wide);
}

// The value of `From` as `To`, by ONNX Cast rules.
template <typename To, typename From>
To convert(From value) {
  if constexpr (std::same_as<From, Float16>) {
    return convert<To>(half_to_float(value.bits));
  } else if constexpr (std::same_as<From, BFloat16>) {
    return convert<To>(bfloat16_to_float(value.bits));
  } else if constexpr (std::same_as<To, Float16>) {
    return Float16{float_to_half(static_cast<float>(value))};
  } else if constexpr (std::same_as<To, BFloat16>) {
    return BFloat16{float_to_bfloat16(static_cast<float>(value))};
  } else if constexpr (std::same_as<To, bool>) {
    return value != From{0};
  } else if constexpr (Integer<To> && std::floating_point<From>) {
    return float_to_integer<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

// Integer arithmetic wraps on overflow as the hardware does, instead of being undefined.
template <typename T>
using WrapType = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;

template <typename T>
T negate(T x) {
  if constexpr (Integer<T>) {
    return static_cast<T>(WrapType<T>{0} - static_cast<WrapType<T>>(x));
  } else {
    return -x;
  }
}

struct Add {
  template <Number T>
  T operator()(T a, T b) const {
    if constexpr (Integer<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct Sub {
  template <Number T>
  T operator()(T a, T b) const {
    if constexpr (Integer<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
    } else {
      return a - b;
    }
  }
};

struct Mul {
  template <Number T>
  T operator()(T a, T b) const {
    if constexpr (Integer<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

// Integer division truncates toward zero, as in C; the caller rules out a zero divisor.
struct Div {
  template <Number T>
  T operator()(T a, T b) const {
    if constexpr (SignedInteger<T>) {
      return b == -1 ? negate(a) : static_cast<T>(a / b);  // -1 avoids INT_MIN / -1 trapping
    } else {
      return static_cast<T>(a / b);
    }
  }
};

// Mod with fmod=0: the remainder takes the divisor's sign (Python's %); integers only.
struct FloorMod {
  template <Integer T>
  T operator()(T a, T b) const {
    if constexpr (SignedInteger<T>) {
      if (b == -1) return 0;
      const T r = static_cast<T>(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else {
      return static_cast<T>(a % b);
    }
  }
};

// Mod with fmod=1: the remainder takes the dividend's sign (C's fmod and %).
struct TruncMod {
  template <Number T>
  T operator()(T a, T b) const {
    if constexpr (std::floating_point<T>) {
      return std::fmod(a, b);
    } else if constexpr (SignedInteger<T>) {
      return b == -1 ? T{0} : static_cast<T>(a % b);
    } else {
      return static_cast<T>(a % b);
    }
  }
};

// Max and Min propagate NaN, as numpy and ONNX Runtime do.
struct Max {
  template <Number T>
  T operator()(T a, T b) const {
    return (b > a || b != b) ? b : a;
  }
};

struct Min {
  template <Number T>
  T operator()(T a, T b) const {
    return (b < a || b != b) ? b : a;
  }
};

struct Equal {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Less {
  template <Number T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessOrEqual {
  template <Number T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Greater {
  template <Number T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterOrEqual {
  template <Number T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

struct And {
  template <std::same_as<bool> T>
  bool operator()(T a, T b) const {
    return a && b;
  }
};
struct Or {
  template <std::same_as<bool> T>
  bool operator()(T a, T b) const {
    return a || b;
  }
};
struct Xor {
  template <std::same_as<bool> T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};

struct Neg {
  template <Number T>
  requires(!std::unsigned_integral<T>) T operator()(T x) const { return negate(x); }
};

struct Abs {
  template <Number T>
  T operator()(T x) const {
    if constexpr (std::unsigned_integral<T>) {
      return x;
    } else if constexpr (std::floating_point<T>) {
      return std::abs(x);
    } else {
      return x < 0 ? negate(x) : x;
    }
  }
};

}  // namespace tandem::elementwise
