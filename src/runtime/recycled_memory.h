#pragma once
#include <cstddef>
#include <memory>

#include "ir/tensor.h"

namespace tandem {

// Host memory for the tensors a run hands to its caller (a graph's outputs). A buffer the caller
// lets go of comes back here, and a later run of the same size writes it again instead of fresh
// memory: fresh memory past the allocator's mmap threshold page-faults at every first write of
// a page (a model of one 256x256x256 MatMul took 58 faults and 1.6-2.5x its kernel time a run).
// The tensors handed out own their storage alone (Tensor::owns_storage_alone), may outlive
// this object, and may be released from any thread.
class RecycledHostMemory {
 public:
  // At most `idle_buffers` released buffers are kept for reuse; more are freed.
  explicit RecycledHostMemory(size_t idle_buffers);
  RecycledHostMemory(const RecycledHostMemory&) = delete;
  RecycledHostMemory& operator=(const RecycledHostMemory&) = delete;

  // Uninitialised, 64-byte aligned, like Tensor::allocate.
  Tensor allocate(DType dtype, Shape shape);
  // How many released buffers wait for reuse (for tests).
  size_t idle() const;

 private:
  struct Shelf;  // shared with the buffers handed out: they return to it when released
  std::shared_ptr<Shelf> shelf_;
};

}  // namespace tandem
