#include "backends/pjrt/stablehlo.h"

#include <cstring>
#include <stdexcept>

namespace tandem::pjrt {
namespace {

std::string join_types(std::span<const HloValue> values) {
  std::string text;
  for (const HloValue& value : values) {
    if (!text.empty()) text += ", ";
    text += tensor_type(value.dtype, value.shape);
  }
  return text;
}

std::string join_names(std::span<const HloValue> values) {
  std::string text;
  for (const HloValue& value : values) {
    if (!text.empty()) text += ", ";
    text += value.name;
  }
  return text;
}

// One element of `dtype` holding `value`, as raw little-endian bytes.
std::string element_bytes(DType dtype, double value) {
  std::string bytes(dtype_size(dtype), '\0');
  auto put = [&](auto element) { std::memcpy(bytes.data(), &element, sizeof element); };
  switch (dtype) {
    case DType::kFloat32: put(static_cast<float>(value)); break;
    case DType::kFloat64: put(value); break;
    case DType::kFloat16: put(float_to_half(static_cast<float>(value))); break;
    case DType::kBFloat16: put(float_to_bfloat16(static_cast<float>(value))); break;
    case DType::kInt8: put(static_cast<int8_t>(value)); break;
    case DType::kUInt8: put(static_cast<uint8_t>(value)); break;
    case DType::kInt16: put(static_cast<int16_t>(value)); break;
    case DType::kInt32: put(static_cast<int32_t>(value)); break;
    case DType::kInt64: put(static_cast<int64_t>(value)); break;
    case DType::kBool: put(static_cast<uint8_t>(value != 0)); break;
    case DType::kUndefined: throw std::logic_error("element of undefined dtype");
  }
  return bytes;
}

std::string hex(const void* data, size_t size) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string text = "0x";
  text.reserve(2 + 2 * size);
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 15];
  }
  return text;
}

}  // namespace

std::string_view element_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f32";
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat64: return "f64";
    case DType::kInt8: return "i8";
    case DType::kUInt8: return "ui8";
    case DType::kInt16: return "i16";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kBool: return "i1";
    case DType::kUndefined: break;
  }
  throw std::logic_error("no StableHLO element type for an undefined dtype");
}

std::string tensor_type(DType dtype, const Shape& shape) {
  std::string text = "tensor<";
  for (int64_t dim : shape) text += std::to_string(dim) + "x";
  return text + std::string(element_type(dtype)) + ">";
}

std::string i64_array(std::span<const int64_t> values) {
  std::string text = "array<i64";
  for (size_t i = 0; i < values.size(); ++i) {
    text += (i == 0 ? ": " : ", ") + std::to_string(values[i]);
  }
  return text + ">";
}

std::string HloBuilder::fresh() { return "%" + std::to_string(next_++); }

HloValue HloBuilder::parameter(DType dtype, Shape shape) {
  HloValue value{"%arg" + std::to_string(parameters_.size()), dtype, std::move(shape)};
  parameters_.push_back(value);
  return value;
}

HloValue HloBuilder::op(std::string_view name, std::span<const HloValue> operands, DType dtype,
                        Shape shape, std::string_view attributes, std::string_view region) {
  const TensorType result{dtype, std::move(shape)};
  return op_results(name, operands, std::span(&result, 1), attributes, region)[0];
}

std::vector<HloValue> HloBuilder::op_results(std::string_view name,
                                             std::span<const HloValue> operands,
                                             std::span<const TensorType> results,
                                             std::string_view attributes, std::string_view region) {
  const std::string id = fresh();
  std::vector<HloValue> values;
  std::string result_types;
  for (size_t i = 0; i < results.size(); ++i) {
    values.push_back({results.size() == 1 ? id : id + "#" + std::to_string(i), results[i].dtype,
                      results[i].shape});
    if (i > 0) result_types += ", ";
    result_types += tensor_type(results[i].dtype, results[i].shape);
  }
  body_ += "    " + id + (results.size() > 1 ? ":" + std::to_string(results.size()) : "") +
           " = \"" + (name.find('.') == std::string_view::npos ? "stablehlo." : "") +
           std::string(name) + "\"(" + join_names(operands) + ")";
  if (!region.empty()) body_ += " " + std::string(region);
  if (!attributes.empty()) body_ += " {" + std::string(attributes) + "}";
  body_ += " : (" + join_types(operands) + ") -> " +
           (results.size() == 1 ? result_types : "(" + result_types + ")") + "\n";
  return values;
}

HloValue HloBuilder::constant(const Tensor& tensor) {
  if (tensor.dtype() == DType::kBool && tensor.rank() != 1) {
    // A bool literal is a list; nested lists for other ranks are avoided by a reshape.
    return reshape(constant(tensor.reshaped({tensor.numel()})), tensor.shape());
  }
  std::string literal;
  if (tensor.dtype() == DType::kBool) {
    const auto* data = tensor.data<uint8_t>();
    literal = "[";
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      literal += std::string(i ? ", " : "") + (data[i] ? "true" : "false");
    }
    literal += "]";
  } else {
    literal = "\"" + hex(tensor.raw(), tensor.nbytes()) + "\"";
  }
  const std::string type = tensor_type(tensor.dtype(), tensor.shape());
  return op("constant", {}, tensor.dtype(), tensor.shape(),
            "value = dense<" + literal + "> : " + type);
}

HloValue HloBuilder::splat(DType dtype, const Shape& shape, double value) {
  const std::string type = tensor_type(dtype, shape);
  const std::string literal =
      dtype == DType::kBool
          ? (value != 0 ? "true" : "false")
          : "\"" + hex(element_bytes(dtype, value).data(), dtype_size(dtype)) + "\"";
  return op("constant", {}, dtype, shape, "value = dense<" + literal + "> : " + type);
}

HloValue HloBuilder::broadcast_in_dim(const HloValue& value, const Shape& shape,
                                      std::span<const int64_t> dims) {
  return op("broadcast_in_dim", {value}, value.dtype, shape,
            "broadcast_dimensions = " + i64_array(dims));
}

HloValue HloBuilder::broadcast_to(const HloValue& value, const Shape& shape) {
  if (value.shape == shape) return value;
  const size_t offset = shape.size() - value.shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < value.shape.size(); ++i) dims.push_back(static_cast<int64_t>(offset + i));
  return broadcast_in_dim(value, shape, dims);
}

HloValue HloBuilder::convert(const HloValue& value, DType dtype) {
  if (value.dtype == dtype) return value;
  return op("convert", {value}, dtype, value.shape);
}

HloValue HloBuilder::reshape(const HloValue& value, Shape shape) {
  if (value.shape == shape) return value;
  return op("reshape", {value}, value.dtype, std::move(shape));
}

HloValue HloBuilder::transpose(const HloValue& value, std::span<const int64_t> permutation) {
  Shape shape;
  for (int64_t axis : permutation) shape.push_back(value.shape[static_cast<size_t>(axis)]);
  return op("transpose", {value}, value.dtype, shape, "permutation = " + i64_array(permutation));
}

HloValue HloBuilder::binary(std::string_view name, const HloValue& a, const HloValue& b) {
  return op(name, {a, b}, a.dtype, a.shape);
}

HloValue HloBuilder::unary(std::string_view name, const HloValue& a) {
  return op(name, {a}, a.dtype, a.shape);
}

HloValue HloBuilder::compare(std::string_view direction, const HloValue& a, const HloValue& b) {
  const bool floating = is_floating(a.dtype);
  const bool unsigned_int = a.dtype == DType::kUInt8 || a.dtype == DType::kBool;
  const std::string type = floating ? "FLOAT" : unsigned_int ? "UNSIGNED" : "SIGNED";
  return op("compare", {a, b}, DType::kBool, a.shape,
            "comparison_direction = #stablehlo<comparison_direction " + std::string(direction) +
                ">, compare_type = #stablehlo<comparison_type " + type + ">");
}

HloValue HloBuilder::select(const HloValue& predicate, const HloValue& on_true,
                            const HloValue& on_false) {
  return op("select", {predicate, on_true, on_false}, on_true.dtype, on_true.shape);
}

std::string HloBuilder::binary_region(std::string_view body_op, DType dtype) {
  const std::string scalar = tensor_type(dtype, {});
  const std::string a = fresh(), b = fresh(), r = fresh();
  return "({\n    ^bb0(" + a + ": " + scalar + ", " + b + ": " + scalar + "):\n      " + r +
         " = \"stablehlo." + std::string(body_op) + "\"(" + a + ", " + b + ") : (" + scalar + ", " +
         scalar + ") -> " + scalar + "\n      \"stablehlo.return\"(" + r + ") : (" + scalar +
         ") -> ()\n    })";
}

HloValue HloBuilder::reduce(const HloValue& value, std::span<const int64_t> axes,
                            std::string_view body_op, double init) {
  Shape shape;
  for (size_t i = 0; i < value.shape.size(); ++i) {
    bool reduced = false;
    for (int64_t axis : axes) reduced |= axis == static_cast<int64_t>(i);
    if (!reduced) shape.push_back(value.shape[i]);
  }
  const HloValue start = scalar(value.dtype, init);
  const std::string region = binary_region(body_op, value.dtype);
  const HloValue operands[] = {value, start};
  return op("reduce", operands, value.dtype, shape, "dimensions = " + i64_array(axes), region);
}

std::string HloBuilder::module(std::span<const HloValue> results) const {
  std::string text = "module @tandem_segment {\n  func.func public @main(";
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (i > 0) text += ", ";
    text += parameters_[i].name + ": " + tensor_type(parameters_[i].dtype, parameters_[i].shape);
  }
  text += ") -> (" + join_types(results) + ") {\n" + body_;
  text += "    \"func.return\"(" + join_names(results) + ") : (" + join_types(results) +
          ") -> ()\n  }\n}\n";
  return text;
}

}  // namespace tandem::pjrt
