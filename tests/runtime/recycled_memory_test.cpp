#include "runtime/recycled_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

namespace tandem {
namespace {

TEST(RecycledHostMemory, ABufferLetGoOfIsHandedOutAgainForTheSameSize) {
  RecycledHostMemory memory(2);
  Tensor first = memory.allocate(DType::kFloat32, {256, 256});
  EXPECT_TRUE(first.owns_storage_alone());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.raw()) % 64, 0u);
  void* address = first.raw();
  Tensor held = memory.allocate(DType::kFloat32, {256, 256});
  EXPECT_NE(held.raw(), address);  // the first is still held
  first = Tensor();
  EXPECT_EQ(memory.idle(), 1u);
  // Another dtype and shape of the same bytes takes it; another size does not.
  EXPECT_EQ(memory.allocate(DType::kInt32, {65536}).raw(), address);
  Tensor other = memory.allocate(DType::kFloat32, {128, 256});
  EXPECT_NE(other.raw(), address);
  EXPECT_NE(other.raw(), held.raw());
}

TEST(RecycledHostMemory, KeepsNoMoreIdleBuffersThanItWasToldAndOutlivesNothing) {
  Tensor survivor;
  {
    RecycledHostMemory memory(1);
    Tensor a = memory.allocate(DType::kFloat32, {1024});
    Tensor b = memory.allocate(DType::kFloat32, {1024});
    survivor = memory.allocate(DType::kFloat32, {1024});
    a = Tensor();
    b = Tensor();  // one idle buffer is kept, the other freed
    EXPECT_EQ(memory.idle(), 1u);
    survivor.data<float>()[1023] = 2.5f;
  }
  // Released after the memory it came from is gone, from another thread (ASan checks the free).
  EXPECT_EQ(survivor.data<float>()[1023], 2.5f);
  std::thread([released = std::move(survivor)]() mutable { released = Tensor(); }).join();
}

}  // namespace
}  // namespace tandem
