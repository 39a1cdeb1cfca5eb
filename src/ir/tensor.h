#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace tandem {

class Tensor;

// A device's memory, which host code cannot read directly: a tensor there is read through it.
// Host memory has none (a null MemorySpace).
class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  virtual std::string name() const = 0;  // "gpu0 memory"
  // Copies the bytes of `tensor` (in this memory) into `host` (nbytes of it), after the work
  // that writes them.
  virtual void copy_to_host(const Tensor& tensor, void* host) const = 0;
};

// A dense row-major tensor, in host memory or in one device's memory (`memory()`). Copies
// share storage (like a shared_ptr); views made with `reshaped`, `view` or `wrap` alias the
// storage of their owner. Host code reads the elements of host tensors only.
class Tensor {
 public:
  Tensor() = default;

  // Fresh 64-byte aligned storage; contents uninitialised.
  static Tensor allocate(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  // A view of memory kept alive by `owner` (may be null for memory that outlives the tensor),
  // in host memory or in the device memory `memory`.
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner,
                     const MemorySpace* memory = nullptr);
  template <typename T>
  static Tensor from_vector(DType dtype, Shape shape, const std::vector<T>& values);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  // The device memory the elements are in; null for host memory.
  const MemorySpace* memory() const { return memory_; }
  bool on_host() const { return memory_ == nullptr; }

  void* raw() const { return data_; }
  // Whether this tensor owns its storage and no other tensor shares it (no view, no copy, no
  // constant of a model): then it may be handed to a caller to keep and write, without a copy.
  bool owns_storage_alone() const { return owner_ && owner_.use_count() == 1; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }

  // Same storage, another shape of the same element count.
  Tensor reshaped(Shape shape) const;
  // `dtype` elements of `shape` at `byte_offset` into this tensor's storage (arena slots).
  Tensor view(size_t byte_offset, DType dtype, Shape shape) const;
  // Deep copy into fresh host storage (a device tensor is copied out of its memory).
  Tensor clone() const;
  // This tensor in host memory: itself when it is there, else a copy.
  Tensor to_host() const;
  // Contents of an integer tensor (int32/int64/bool/uint8) as int64; for shape arguments.
  std::vector<int64_t> to_int64s() const;
  // Contents of a float or integer tensor as double; for tests and comparisons.
  std::vector<double> to_doubles() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
  const MemorySpace* memory_ = nullptr;
};

template <typename T>
Tensor Tensor::from_vector(DType dtype, Shape shape, const std::vector<T>& values) {
  Tensor tensor = allocate(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != tensor.numel() || sizeof(T) != dtype_size(dtype)) {
    throw std::invalid_argument("Tensor::from_vector: size or element type mismatch");
  }
  std::copy(values.begin(), values.end(), tensor.data<T>());
  return tensor;
}

}  // namespace tandem
