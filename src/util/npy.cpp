#include "util/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "ir/error.h"

namespace tandem {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

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

  std::smatch match;
  if (!std::regex_search(header, match, std::regex(R"('descr'\s*:\s*'([^']*)')"))) {
    throw InputError("bad .npy header: no descr");
  }
  const DType dtype = dtype_from_descr(match[1]);
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) {
    throw InputError("Fortran-ordered .npy files are not supported");
  }
  if (!std::regex_search(header, match, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    throw InputError("bad .npy header: no shape");
  }
  Shape shape;
  const std::string dims = match[1];
  const std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it) {
    const std::string digits = it->str();
    if (digits.size() > 15) throw InputError("absurd .npy dimension " + digits);
    shape.push_back(std::stoll(digits));
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
  file.write(static_cast<const char*>(tensor.raw()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!file) throw InputError(path, "cannot write");
}

}  // namespace tandem
