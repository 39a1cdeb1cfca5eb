#include "util/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace tandem {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tandem_npy_test_" + name)).string();
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  const std::vector<std::pair<DType, Shape>> cases{
      {DType::kFloat32, {2, 3}}, {DType::kInt64, {5}}, {DType::kBool, {2, 2, 2}},
      {DType::kFloat16, {3}},    {DType::kInt32, {}},  {DType::kFloat64, {0, 4}}};
  for (const auto& [dtype, shape] : cases) {
    Tensor tensor = Tensor::allocate(dtype, shape);
    auto* bytes = static_cast<uint8_t*>(tensor.raw());
    for (size_t i = 0; i < tensor.nbytes(); ++i)
      bytes[i] = static_cast<uint8_t>(dtype == DType::kBool ? i % 2 : i * 7);
    const std::string path = temp_path("roundtrip.npy");
    write_npy(path, tensor);
    const Tensor back = read_npy(path);
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_EQ(back.shape(), shape);
    ASSERT_EQ(back.nbytes(), tensor.nbytes());
    EXPECT_EQ(0, std::memcmp(back.raw(), tensor.raw(), tensor.nbytes()));
  }
}

TEST(Npy, RejectsBadFilesWithTheirName) {
  const std::string path = temp_path("bad.npy");
  std::ofstream(path) << "hello";
  try {
    read_npy(path);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), path);
    EXPECT_NE(std::string(e.what()).find("not a .npy"), std::string::npos);
  }
}

TEST(Npy, RejectsAHeaderThatClaimsMoreThanTheFileHolds) {
  const std::string path = temp_path("claims.npy");
  write_npy(path, Tensor::zeros(DType::kFloat32, {4}));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find("(4,)");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 4, "(9,)");
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_THROW(read_npy(path), InputError);
}

// A version 1.0 file whose header is `header`, padded to `length` bytes, then `data`.
std::string npy_bytes(std::string header, size_t length, const std::string& data = "") {
  header.resize(length, ' ');
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(length & 0xff);
  bytes += static_cast<char>(length >> 8);
  return bytes + header + data;
}

// std::regex recursed once per header character and overflowed the stack at these lengths.
TEST(Npy, ReadsLongHeadersWithoutOverflowingTheStack) {
  const std::string path = temp_path("long.npy");
  std::string ones;
  for (int i = 0; i < 20000; ++i) ones += "1, ";
  std::ofstream(path, std::ios::binary)
      << npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (" + ones + "), }", 65535,
                   std::string(4, '\0'));
  EXPECT_EQ(read_npy(path).rank(), 20000);

  std::ofstream(path, std::ios::binary)
      << npy_bytes("{'descr': '" + std::string(65000, 'a'), 65535);
  try {
    read_npy(path);
    FAIL() << "read a header with no descr";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no descr"), std::string::npos) << e.what();
  }
}

TEST(Npy, ReadsTheHeaderKeysWhereverTheyAreAndRefusesFortranOrder) {
  const std::string path = temp_path("keys.npy");
  std::ofstream(path, std::ios::binary) << npy_bytes(
      "{'shape' :( 2 ,3 ), 'fortran_order':False,'descr'\t: '<i2', }", 64, std::string(12, '\1'));
  const Tensor tensor = read_npy(path);
  EXPECT_EQ(tensor.dtype(), DType::kInt16);
  EXPECT_EQ(tensor.shape(), (Shape{2, 3}));

  std::ofstream(path, std::ios::binary) << npy_bytes(
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 64, std::string(8, '\0'));
  EXPECT_THROW(read_npy(path), InputError);
}

}  // namespace
}  // namespace tandem
