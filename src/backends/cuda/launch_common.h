#pragma once
// Plain types shared by the .cu launchers and the C++ kernels that call them (the launchers'
// headers stay free of Tandem's C++20 headers, so nvcc sees only these).
#include <cstdint>

namespace tandem::cuda {

inline constexpr int kMaxRank = 8;

// Element types the CUDA kernels compute in.
enum class Elem : int { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kU8, kBool };

// A strided view: element offset of index i = sum(i[d] * stride[d]).
struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

}  // namespace tandem::cuda
