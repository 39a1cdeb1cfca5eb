#include "runtime/recycled_memory.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace tandem {

struct RecycledHostMemory::Shelf {
  struct Buffer {
    size_t bytes;
    void* memory;
  };
  explicit Shelf(size_t capacity) : capacity(capacity) {}
  ~Shelf() {
    for (const Buffer& buffer : idle) std::free(buffer.memory);
  }
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto found = std::find_if(idle.begin(), idle.end(),
                                    [&](const Buffer& buffer) { return buffer.bytes == bytes; });
    if (found == idle.end()) return nullptr;
    void* memory = found->memory;
    idle.erase(found);
    return memory;
  }
  void give_back(void* memory, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (idle.size() < capacity) {
        idle.push_back({bytes, memory});
        return;
      }
    }
    std::free(memory);
  }

  const size_t capacity;
  mutable std::mutex mutex;
  std::vector<Buffer> idle;
};

RecycledHostMemory::RecycledHostMemory(size_t idle_buffers)
    : shelf_(std::make_shared<Shelf>(idle_buffers)) {}

Tensor RecycledHostMemory::allocate(DType dtype, Shape shape) {
  const size_t bytes =
      (std::max<size_t>(static_cast<size_t>(numel(shape)) * dtype_size(dtype), 1) + 63) / 64 * 64;
  void* memory = shelf_->take(bytes);
  if (!memory) memory = std::aligned_alloc(64, bytes);
  if (!memory) throw std::bad_alloc();
  // The buffer keeps the shelf alive: it may be released after this object is gone.
  std::shared_ptr<void> owner(
      memory, [shelf = shelf_, bytes](void* released) { shelf->give_back(released, bytes); });
  return Tensor::wrap(dtype, std::move(shape), memory, std::move(owner));
}

size_t RecycledHostMemory::idle() const {
  std::lock_guard<std::mutex> lock(shelf_->mutex);
  return shelf_->idle.size();
}

}  // namespace tandem
