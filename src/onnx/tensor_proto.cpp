#include "onnx/tensor_proto.h"

#include <cstring>
#include <fstream>

#include "ir/error.h"

namespace tandem {
namespace fs = std::filesystem;

ExternalWeights::ExternalWeights(fs::path model_dir)
    : model_dir_(fs::weakly_canonical(model_dir.empty() ? fs::path(".") : model_dir)) {}

void ExternalWeights::read(const std::string& location, uint64_t offset, uint64_t bytes,
                           void* destination, const std::string& tensor_name) const {
  const std::string what = "external data of '" + tensor_name + "'";
  const fs::path relative(location);
  if (location.empty() || relative.is_absolute()) {
    throw InputError(what + ": location '" + location + "' must be a relative path");
  }
  for (const fs::path& part : relative) {
    if (part == "..")
      throw InputError(what + ": location '" + location + "' leaves the model's folder");
  }
  std::error_code error;
  const fs::path resolved = fs::weakly_canonical(model_dir_ / relative, error);
  const auto [end, unused] =
      std::mismatch(model_dir_.begin(), model_dir_.end(), resolved.begin(), resolved.end());
  if (error || end != model_dir_.end()) {
    throw InputError(what + ": location '" + location + "' leads outside the model's folder");
  }
  const uintmax_t size = fs::file_size(resolved, error);
  if (error) throw InputError(what + ": cannot open '" + location + "'");
  if (offset > size || bytes > size - offset) {
    throw InputError(what + ": offset " + std::to_string(offset) + " + length " +
                     std::to_string(bytes) + " is past the end of '" + location + "' (" +
                     std::to_string(size) + " bytes)");
  }
  if (destination == nullptr) return;  // a check of the file and range only
  std::ifstream file(resolved, std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  if (!file.read(static_cast<char*>(destination), static_cast<std::streamsize>(bytes))) {
    throw InputError(what + ": cannot read '" + location + "'");
  }
}

DType dtype_from_onnx(int32_t elem_type, const std::string& what) {
  using onnx::TensorProto;
  if (const std::optional<DType> dtype = dtype_from_onnx_code(elem_type)) return *dtype;
  const std::string name =
      TensorProto::DataType_IsValid(elem_type)
          ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type))
          : std::to_string(elem_type);
  throw InputError("'" + what + "' has unsupported element type " + name);
}

namespace {

Shape proto_shape(const onnx::TensorProto& proto) {
  Shape shape;
  for (int64_t d : proto.dims()) {
    if (d < 0) throw InputError("tensor '" + proto.name() + "' has a negative dimension");
    shape.push_back(d);
  }
  try {
    numel(shape);
  } catch (const InputError&) {
    throw InputError("tensor '" + proto.name() + "' claims an absurd shape " + shape_str(shape));
  }
  return shape;
}

// Copies a typed repeated field into a tensor of `count` elements, converting each.
template <typename Stored, typename Field, typename Convert>
void copy_field(const Field& field, int64_t count, Stored* out, const onnx::TensorProto& proto,
                Convert convert) {
  if (field.size() != count) {
    throw InputError("tensor '" + proto.name() + "' holds " + std::to_string(field.size()) +
                     " values, its shape needs " + std::to_string(count));
  }
  for (int64_t i = 0; i < count; ++i) out[i] = convert(field.Get(static_cast<int>(i)));
}

}  // namespace

size_t declared_bytes(const onnx::TensorProto& proto) {
  double count = 1;
  for (int64_t d : proto.dims()) count *= d < 0 ? 0.0 : static_cast<double>(d);
  const DType dtype = onnx::TensorProto::DataType_IsValid(proto.data_type())
                          ? [&] { try { return dtype_from_onnx(proto.data_type(), proto.name()); }
                                  catch (const InputError&) { return DType::kUndefined; } }()
                          : DType::kUndefined;
  const double bytes = count * static_cast<double>(dtype_size(dtype));
  return bytes > 1e15 ? 0 : static_cast<size_t>(bytes);
}

Tensor tensor_from_proto(const onnx::TensorProto& proto, const ExternalWeights& weights) {
  using onnx::TensorProto;
  const DType dtype = dtype_from_onnx(proto.data_type(), proto.name());
  const Shape shape = proto_shape(proto);
  const int64_t count = numel(shape);
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);

  if (proto.data_location() == TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = bytes;
    for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
      try {
        if (entry.key() == "location") location = entry.value();
        if (entry.key() == "offset") offset = std::stoull(entry.value());
        if (entry.key() == "length") length = std::stoull(entry.value());
      } catch (const std::exception&) {
        throw InputError("external data of '" + proto.name() + "': bad " + entry.key() + " '" +
                         entry.value() + "'");
      }
    }
    if (length != bytes) {
      throw InputError("external data of '" + proto.name() + "': length " + std::to_string(length) +
                       " does not match its shape " + shape_str(shape) + " (" +
                       std::to_string(bytes) + " bytes)");
    }
    // Validate the file and the whole range before allocating anything sized by the model.
    weights.read(location, offset, bytes, nullptr, proto.name());
    Tensor tensor = Tensor::allocate(dtype, shape);
    weights.read(location, offset, bytes, tensor.raw(), proto.name());
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes) {
      throw InputError("tensor '" + proto.name() + "': raw data has " +
                       std::to_string(proto.raw_data().size()) + " bytes, its shape " +
                       shape_str(shape) + " needs " + std::to_string(bytes));
    }
    Tensor tensor = Tensor::allocate(dtype, shape);
    if (bytes) std::memcpy(tensor.raw(), proto.raw_data().data(), bytes);
    return tensor;
  }
  // Typed fields: check the element count first, so a lying shape allocates nothing.
  const auto field_size = [&]() -> int64_t {
    switch (dtype) {
      case DType::kFloat32: return proto.float_data_size();
      case DType::kFloat64: return proto.double_data_size();
      case DType::kInt64: return proto.int64_data_size();
      default: return proto.int32_data_size();
    }
  }();
  if (field_size != count) {
    throw InputError("tensor '" + proto.name() + "' holds " + std::to_string(field_size) +
                     " values, its shape " + shape_str(shape) + " needs " + std::to_string(count));
  }
  Tensor tensor = Tensor::allocate(dtype, shape);
  const auto same = [](auto v) { return v; };
  switch (dtype) {
    case DType::kFloat32:
      copy_field(proto.float_data(), count, tensor.data<float>(), proto, same);
      break;
    case DType::kFloat64:
      copy_field(proto.double_data(), count, tensor.data<double>(), proto, same);
      break;
    case DType::kInt64:
      copy_field(proto.int64_data(), count, tensor.data<int64_t>(), proto, same);
      break;
    case DType::kInt32:
      copy_field(proto.int32_data(), count, tensor.data<int32_t>(), proto, same);
      break;
    case DType::kInt16:
      copy_field(proto.int32_data(), count, tensor.data<int16_t>(), proto,
                 [](int32_t v) { return static_cast<int16_t>(v); });
      break;
    case DType::kInt8:
      copy_field(proto.int32_data(), count, tensor.data<int8_t>(), proto,
                 [](int32_t v) { return static_cast<int8_t>(v); });
      break;
    case DType::kUInt8:
    case DType::kBool:
      copy_field(proto.int32_data(), count, tensor.data<uint8_t>(), proto,
                 [](int32_t v) { return static_cast<uint8_t>(v); });
      break;
    case DType::kFloat16:
    case DType::kBFloat16:  // stored as their 16-bit patterns in int32_data
      copy_field(proto.int32_data(), count, tensor.data<uint16_t>(), proto,
                 [](int32_t v) { return static_cast<uint16_t>(v); });
      break;
    case DType::kUndefined: break;
  }
  return tensor;
}

}  // namespace tandem
