#include "util/npy.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "ir/error.h"

namespace tandem {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr char kSpace[] = " \t\n\r\f\v";

// The header dict's value of 'key': at the first 'key' followed by ':' and `open` (spaces
// allowed between them), the text after `open` up to the next `close`, or "" when `close` is 0.
// A scan, not std::regex: libstdc++'s regex recurses once per character and overflows the
// stack on a long header.
std::optional<std::string> header_value(const std::string& header, const std::string& key,
                                        std::string_view open, char close) {
  const std::string quoted = "'" + key + "'";
  for (size_t at = header.find(quoted); at != std::string::npos; at = header.find(quoted, at + 1)) {
    size_t value = header.find_first_not_of(kSpace, at + quoted.size());
    if (value == std::string::npos || header[value] != ':') continue;
    value = header.find_first_not_of(kSpace, value + 1);
    if (value == std::string::npos || header.compare(value, open.size(), open) != 0) continue;
    if (close == 0) return "";
    const size_t end = header.find(close, value + open.size());
    if (end != std::string::npos)
      return header.substr(value + open.size(), end - value - open.size());
  }
  return std::nullopt;
}

DType dtype_from_descr(const std::string& descr) {
  static const std::pair<const char*, DType> kTypes[] = {
      {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
      {"<i8", DType::kInt64},   {"<i4", DType::kInt32},   {"<i2", DType::kInt16},
      {"|i1", DType::kInt8},    {"|u1", DType::kUInt8},   {"|b1", DType::kBool}};
  for (const auto& [name, dtype] : kTypes) {
    if (descr == name) return dtype;
  }
  throw InputError("unsupported .npy dtype '" + descr + "'");
}

std::string descr_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kFloat16: return "<f2";
    case DType::kBFloat16: return "<u2";  // numpy has no bfloat16: the raw bit patterns
    case DType::kInt64: return "<i8";
    case DType::kInt32: return "<i4";
    case DType::kInt16: return "<i2";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kBool: return "|b1";
    case DType::kUndefined: break;
  }
  throw std::invalid_argument("write_npy: undefined dtype");
}

Tensor parse_npy(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw InputError("is a directory, not a .npy file");
  if (!std::filesystem::is_regular_file(path, error)) throw InputError("no such file");
  const uintmax_t file_size = std::filesystem::file_size(path, error);
  std::ifstream file(path, std::ios::binary);
  char preamble[10];
  if (error || !file.read(preamble, 10) || std::memcmp(preamble, kMagic, 6) != 0) {
    throw InputError("not a .npy file");
  }
  const int major = static_cast<unsigned char>(preamble[6]);
  size_t header_length =
      static_cast<unsigned char>(preamble[8]) | static_cast<unsigned char>(preamble[9]) << 8;
  size_t offset = 10;
  if (major >= 2) {
    char extra[2];
    if (!file.read(extra, 2)) throw InputError("truncated .npy header");
    header_length |= static_cast<size_t>(static_cast<unsigned char>(extra[0])) << 16 |
                     static_cast<size_t>(static_cast<unsigned char>(extra[1])) << 24;
    offset = 12;
  }
  if (header_length > 65536 || offset + header_length > file_size)
    throw InputError("truncated .npy header");
  std::string header(header_length, '\0');
  file.read(header.data(), static_cast<std::streamsize>(header_length));
  offset += header_length;

  const std::optional<std::string> descr = header_value(header, "descr", "'", '\'');
  if (!descr) throw InputError("bad .npy header: no descr");
  const DType dtype = dtype_from_descr(*descr);
  if (header_value(header, "fortran_order", "True", 0)) {
    throw InputError("Fortran-ordered .npy files are not supported");
  }
  const std::optional<std::string> dims = header_value(header, "shape", "(", ')');
  if (!dims) throw InputError("bad .npy header: no shape");
  Shape shape;
  for (size_t start = dims->find_first_of("0123456789"); start != std::string::npos;) {
    const size_t end = std::min(dims->find_first_not_of("0123456789", start), dims->size());
    const std::string digits = dims->substr(start, end - start);
    if (digits.size() > 15) throw InputError("absurd .npy dimension " + digits);
    shape.push_back(std::stoll(digits));
    start = dims->find_first_of("0123456789", end);
  }
  const double expected =
      static_cast<double>(numel(shape)) * static_cast<double>(dtype_size(dtype));
  if (static_cast<double>(file_size - offset) < expected) {
    throw InputError("truncated .npy data: " + shape_str(shape) + " " +
                     std::string(dtype_name(dtype)) + " needs " +
                     std::to_string(static_cast<uint64_t>(expected)) + " bytes");
  }
  Tensor tensor = Tensor::allocate(dtype, shape);
  if (!file.read(static_cast<char*>(tensor.raw()), static_cast<std::streamsize>(tensor.nbytes()))) {
    throw InputError("truncated .npy data");
  }
  return tensor;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  try {
    return parse_npy(path);
  } catch (InputError& e) {
    if (e.subject().empty()) e.set_subject(path);
    throw;
  }
}

void write_npy(const std::string& path, const Tensor& tensor) {
  std::string shape = "(";
  for (int64_t i = 0; i < tensor.rank(); ++i)
    shape += (i ? ", " : "") + std::to_string(tensor.dim(i));
  shape += tensor.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr_of(tensor.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending the header with a newline.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::ofstream file(path, std::ios::binary);
  if (!file) throw InputError(path, "cannot write");
  file.write(kMagic, 6);
  const char version_and_length[4] = {1, 0, static_cast<char>(header.size() & 0xff),
                                      static_cast<char>(header.size() >> 8)};
  file.write(version_and_length, 4);
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  const Tensor host = tensor.to_host();
  file.write(static_cast<const char*>(host.raw()), static_cast<std::streamsize>(host.nbytes()));
  if (!file) throw InputError(path, "cannot write");
}

}  // namespace tandem
