#pragma once
#include <cstdint>
#include <string>

#include "ir/error.h"
#include "ir/tensor.h"

namespace tandem::cpu {

// Calls `fn.template operator()<T>()` with T the C++ type of `dtype`, for the types CPU
// kernels compute in. float16/bfloat16 are stored as uint16_t and reach kernels only via Cast.
template <typename Fn>
decltype(auto) dispatch_numeric(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn.template operator()<float>();
    case DType::kFloat64: return fn.template operator()<double>();
    case DType::kInt64: return fn.template operator()<int64_t>();
    case DType::kInt32: return fn.template operator()<int32_t>();
    case DType::kInt8: return fn.template operator()<int8_t>();
    case DType::kUInt8: return fn.template operator()<uint8_t>();
    case DType::kBool: return fn.template operator()<bool>();
    default: throw InputError("no CPU kernel for dtype " + std::string(dtype_name(dtype)));
  }
}

// As dispatch_numeric, for kernels that only move bytes: T has the element's size.
template <typename Fn>
decltype(auto) dispatch_by_size(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1: return fn.template operator()<uint8_t>();
    case 2: return fn.template operator()<uint16_t>();
    case 4: return fn.template operator()<uint32_t>();
    case 8: return fn.template operator()<uint64_t>();
    default: throw InputError("no CPU kernel for dtype " + std::string(dtype_name(dtype)));
  }
}

}  // namespace tandem::cpu
