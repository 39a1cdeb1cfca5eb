#pragma once
// Device-side helpers the CUDA kernels' .cu files share: element-type dispatch, the 16-bit float
// conversions, wrapping integer arithmetic and grid-stride launches. Only CUDA and standard
// headers, so that nvcc never sees Tandem's C++20 headers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

using Half = __half;
using BFloat = __nv_bfloat16;

// ---- Element types ----

template <typename T>
struct Tag {
  using type = T;
};

// Calls fn(Tag<T>{}) with T the storage type of `elem`.
template <typename Fn>
void dispatch(Elem elem, Fn&& fn) {
  switch (elem) {
    case Elem::kF32: return fn(Tag<float>{});
    case Elem::kF16: return fn(Tag<Half>{});
    case Elem::kBF16: return fn(Tag<BFloat>{});
    case Elem::kF64: return fn(Tag<double>{});
    case Elem::kI64: return fn(Tag<int64_t>{});
    case Elem::kI32: return fn(Tag<int32_t>{});
    case Elem::kI8: return fn(Tag<int8_t>{});
    case Elem::kU8: return fn(Tag<uint8_t>{});
    case Elem::kBool: return fn(Tag<bool>{});
  }
  throw std::invalid_argument("unknown CUDA element type");
}

// Calls fn(T{}) with T the CUDA type of `elem` (uint8_t for bool).
template <typename Fn>
void by_elem(Elem elem, Fn&& fn) {
  switch (elem) {
    case Elem::kF32: fn(float{}); break;
    case Elem::kF16: fn(Half{}); break;
    case Elem::kBF16: fn(BFloat{}); break;
    case Elem::kF64: fn(double{}); break;
    case Elem::kI64: fn(int64_t{}); break;
    case Elem::kI32: fn(int32_t{}); break;
    case Elem::kI8: fn(int8_t{}); break;
    default: fn(uint8_t{}); break;
  }
}

// Calls fn(T{}) with T the unsigned integer of `elem_bytes` bytes (kernels that only move
// elements).
template <typename Fn>
void by_size(int elem_bytes, Fn&& fn) {
  switch (elem_bytes) {
    case 1: fn(uint8_t{}); break;
    case 2: fn(uint16_t{}); break;
    case 4: fn(uint32_t{}); break;
    default: fn(uint64_t{}); break;
  }
}

template <typename T>
inline constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                 std::is_same_v<T, Half> || std::is_same_v<T, BFloat>;
template <typename T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !kIsBool<T>;

// The type an element computes in: float for the 16-bit floats, else itself.
template <typename T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<Half> {
  using type = float;
};
template <>
struct ComputeOf<BFloat> {
  using type = float;
};
template <typename T>
using Compute = typename ComputeOf<T>::type;

template <typename T>
__device__ Compute<T> widen(T x) {
  if constexpr (std::is_same_v<T, Half>) {
    return __half2float(x);
  } else if constexpr (std::is_same_v<T, BFloat>) {
    return __bfloat162float(x);
  } else {
    return x;
  }
}

// A computed value stored as T (16-bit floats round to nearest even).
template <typename T, typename V>
__device__ T narrow(V x) {
  if constexpr (std::is_same_v<T, Half>) {
    return __float2half_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<T, BFloat>) {
    return __float2bfloat16_rn(static_cast<float>(x));
  } else {
    return static_cast<T>(x);
  }
}

// Element i of `data`, of any element type, as Acc (a uniform branch per element).
template <typename Acc, typename Index>
__device__ Acc load_as(const void* data, Elem elem, Index i) {
  switch (elem) {
    case Elem::kF32: return static_cast<Acc>(static_cast<const float*>(data)[i]);
    case Elem::kF16: return static_cast<Acc>(__half2float(static_cast<const Half*>(data)[i]));
    case Elem::kBF16:
      return static_cast<Acc>(__bfloat162float(static_cast<const BFloat*>(data)[i]));
    case Elem::kF64: return static_cast<Acc>(static_cast<const double*>(data)[i]);
    case Elem::kI64: return static_cast<Acc>(static_cast<const int64_t*>(data)[i]);
    case Elem::kI32: return static_cast<Acc>(static_cast<const int32_t*>(data)[i]);
    case Elem::kI8: return static_cast<Acc>(static_cast<const int8_t*>(data)[i]);
    case Elem::kU8: return static_cast<Acc>(static_cast<const uint8_t*>(data)[i]);
    case Elem::kBool: return static_cast<Acc>(static_cast<const bool*>(data)[i]);
  }
  return Acc{0};
}

// ---- Wrapping integer arithmetic ----

// Integer arithmetic wraps around, as on the CPU backend (signed overflow is undefined); the
// unsigned operands of a product are at least 32 bits wide so that they do not promote to int.
template <typename C>
__device__ C wrap_add(C a, C b) {
  if constexpr (kIsInteger<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename C>
__device__ C wrap_sub(C a, C b) {
  if constexpr (kIsInteger<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename C>
__device__ C wrap_mul(C a, C b) {
  if constexpr (kIsInteger<C>) {
    using U = std::conditional_t<sizeof(C) <= 4, uint32_t, uint64_t>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// ---- Grid-stride launches ----

inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// Blocks of kThreads for a grid-stride loop over `count` elements.
inline unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::min((count + kThreads - 1) / kThreads, kMaxBlocks));
}

// This thread's first index and the step of a grid-stride loop, in the kernel's index type.
template <typename Index = int64_t>
__device__ Index first_index() {
  return static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
}
template <typename Index = int64_t>
__device__ Index grid_stride() {
  return static_cast<Index>(gridDim.x) * blockDim.x;
}

inline int64_t element_count(const Dims& dims) {
  int64_t count = 1;
  for (int d = 0; d < dims.rank; ++d) count *= dims.size[d];
  return count;
}

}  // namespace tandem::cuda
