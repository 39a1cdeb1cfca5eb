// The GPU allocator's bookkeeping, without a GPU: bytes in use and their peak, and an
// out-of-memory error that names the device, the bytes asked and what was free.
#include "backends/cuda/memory_account.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tandem::cuda {
namespace {

TEST(MemoryAccount, TracksBytesInUseAndTheirPeak) {
  MemoryAccount account("gpu0");
  account.allocated(1000);
  account.allocated(24);
  EXPECT_EQ(account.in_use(), 1024u);
  account.freed(1000);
  account.allocated(500);
  EXPECT_EQ(account.in_use(), 524u);
  EXPECT_EQ(account.peak(), 1024u);
  EXPECT_EQ(account.allocations(), 3u);
}

TEST(MemoryAccount, CountsFromManyThreadsAtOnce) {
  MemoryAccount account("gpu0");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        account.allocated(64);
        account.freed(64);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(account.in_use(), 0u);
  EXPECT_EQ(account.allocations(), 40000u);
  EXPECT_GE(account.peak(), 64u);
  EXPECT_LE(account.peak(), 4u * 64);
}

TEST(MemoryAccount, OutOfMemoryNamesTheDeviceTheAskAndWhatWasFree) {
  MemoryAccount account("gpu1");
  account.allocated(size_t{3} << 30);
  const InputError error =
      account.out_of_memory(size_t{3} << 29, size_t{200} << 20, size_t{80} << 30);
  EXPECT_EQ(error.subject(), "gpu1");
  EXPECT_STREQ(error.what(),
               "out of device memory: asked 1.5 GiB; 200 MiB free of 80 GiB, 3 GiB of it held by "
               "this run (peak 3 GiB)");
}

TEST(MemoryAccount, SizesReadAsPeopleWriteThem) {
  EXPECT_EQ(byte_size(512), "512 B");
  EXPECT_EQ(byte_size(1536), "1.5 KiB");
  EXPECT_EQ(byte_size(64.0 * (1 << 20)), "64 MiB");
}

}  // namespace
}  // namespace tandem::cuda
