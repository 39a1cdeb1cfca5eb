#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem {

// Element types the IR carries. Values follow no external numbering; the importer maps ONNX's.
enum class DType : uint8_t {
  kUndefined,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kBool,
};

size_t dtype_size(DType dtype);
// The DType of an ONNX TensorProto.DataType code (the numbering model files and attributes
// such as Cast's `to` use); nullopt for types the IR does not carry.
std::optional<DType> dtype_from_onnx_code(int64_t code);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
bool is_integer(DType dtype);

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

}  // namespace tandem
