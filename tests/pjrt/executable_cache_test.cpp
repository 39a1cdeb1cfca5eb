// The executable cache: memory hits within a process, disk hits across caches (processes), and
// a damaged entry recompiled rather than trusted.
#include "backends/pjrt/executable_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tandem::pjrt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNegate = R"(module @negate {
  func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.negate %x : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
)";

std::vector<float> run_negate(const PjrtClient& client, const PjrtExecutable& executable) {
  const std::vector<float> x = {1, -2, 3};
  const std::vector<int64_t> dims = {3};
  PjrtBuffer buffer = client.to_device(x.data(), PJRT_Buffer_Type_F32, dims);
  const PjrtBuffer* arguments[] = {&buffer};
  std::vector<PjrtBuffer> outputs = executable.execute(arguments, client.addressable_device(0));
  std::vector<float> y(3);
  outputs[0].to_host(y.data(), y.size() * sizeof(float));
  return y;
}

class ExecutableCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ =
        fs::temp_directory_path() /
        ("tandem-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
  PjrtClient client_{PjrtPlugin::load(TANDEM_PJRT_CPU_PLUGIN)};
};

TEST_F(ExecutableCacheTest, SecondLookupIsAMemoryHit) {
  ExecutableCache cache;
  auto first = cache.get(client_, kNegate);
  auto second = cache.get(client_, kNegate);
  EXPECT_EQ(first, second);
  EXPECT_EQ(cache.stats().compiles, 1);
  EXPECT_EQ(cache.stats().memory_hits, 1);
  EXPECT_EQ(run_negate(client_, *second), (std::vector<float>{-1, 2, -3}));
}

TEST_F(ExecutableCacheTest, AnotherCacheOnTheSameDirectoryLoadsFromDisk) {
  {
    ExecutableCache writer(directory_.string());
    writer.get(client_, kNegate);
    EXPECT_EQ(writer.stats().compiles, 1);
  }
  ExecutableCache reader(directory_.string());
  auto executable = reader.get(client_, kNegate);
  EXPECT_EQ(reader.stats().compiles, 0);
  EXPECT_EQ(reader.stats().disk_hits, 1);
  EXPECT_EQ(run_negate(client_, *executable), (std::vector<float>{-1, 2, -3}));
}

TEST_F(ExecutableCacheTest, DamagedEntryIsRecompiled) {
  {
    ExecutableCache writer(directory_.string());
    writer.get(client_, kNegate);
  }
  for (const auto& entry : fs::directory_iterator(directory_)) {
    if (entry.path().extension() == ".pjrt") std::ofstream(entry.path()) << "not an executable";
  }
  ExecutableCache reader(directory_.string());
  auto executable = reader.get(client_, kNegate);
  EXPECT_EQ(reader.stats().compiles, 1);
  EXPECT_EQ(run_negate(client_, *executable), (std::vector<float>{-1, 2, -3}));
}

}  // namespace
}  // namespace tandem::pjrt
