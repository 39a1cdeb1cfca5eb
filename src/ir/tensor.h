#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace tandem {

// A dense row-major tensor in host memory. Copies share storage (like a shared_ptr); views made
// with `reshaped` or `wrap` alias the storage of their owner.
class Tensor {
 public:
  Tensor() = default;

  // Fresh 64-byte aligned storage; contents uninitialised.
  static Tensor allocate(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  // A view of memory kept alive by `owner` (may be null for memory that outlives the tensor).
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  template <typename T>
  static Tensor from_vector(DType dtype, Shape shape, const std::vector<T>& values);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }

  // Same storage, another shape of the same element count.
  Tensor reshaped(Shape shape) const;
  // Deep copy into fresh storage.
  Tensor clone() const;
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
