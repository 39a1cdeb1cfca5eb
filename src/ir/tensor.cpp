#include "ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "ir/error.h"

namespace tandem {

Tensor Tensor::allocate(DType dtype, Shape shape) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.numel_ = tandem::numel(shape);
  tensor.shape_ = std::move(shape);
  const size_t bytes = (std::max<size_t>(tensor.nbytes(), 1) + 63) / 64 * 64;
  void* memory = std::aligned_alloc(64, bytes);
  if (!memory) throw std::bad_alloc();
  tensor.owner_ = std::shared_ptr<void>(memory, std::free);
  tensor.data_ = memory;
  return tensor;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor tensor = allocate(dtype, std::move(shape));
  std::memset(tensor.data_, 0, tensor.nbytes());
  return tensor;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner,
                    const MemorySpace* memory) {
  Tensor tensor;
  tensor.memory_ = memory;
  tensor.dtype_ = dtype;
  tensor.numel_ = tandem::numel(shape);
  tensor.shape_ = std::move(shape);
  tensor.data_ = data;
  tensor.owner_ = std::move(owner);
  return tensor;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (tandem::numel(shape) != numel_) {
    throw InputError("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  }
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::view(size_t byte_offset, DType dtype, Shape shape) const {
  Tensor slot =
      wrap(dtype, std::move(shape), static_cast<std::byte*>(data_) + byte_offset, owner_, memory_);
  if (byte_offset + slot.nbytes() > nbytes()) {
    throw std::logic_error("Tensor::view: beyond the end of its storage");
  }
  return slot;
}

Tensor Tensor::clone() const {
  Tensor copy = allocate(dtype_, shape_);
  if (!nbytes()) return copy;
  if (memory_) {
    memory_->copy_to_host(*this, copy.data_);
  } else {
    std::memcpy(copy.data_, data_, nbytes());
  }
  return copy;
}

Tensor Tensor::to_host() const { return on_host() ? *this : clone(); }

std::vector<int64_t> Tensor::to_int64s() const {
  if (!on_host()) return to_host().to_int64s();
  std::vector<int64_t> values(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) {
    switch (dtype_) {
      case DType::kInt64: values[i] = data<int64_t>()[i]; break;
      case DType::kInt32: values[i] = data<int32_t>()[i]; break;
      case DType::kInt16: values[i] = data<int16_t>()[i]; break;
      case DType::kInt8: values[i] = data<int8_t>()[i]; break;
      case DType::kUInt8:
      case DType::kBool: values[i] = data<uint8_t>()[i]; break;
      default:
        throw InputError("expected an integer tensor, got " + std::string(dtype_name(dtype_)));
    }
  }
  return values;
}

std::vector<double> Tensor::to_doubles() const {
  if (!on_host()) return to_host().to_doubles();
  if (!is_floating(dtype_)) {
    const std::vector<int64_t> integers = to_int64s();
    return std::vector<double>(integers.begin(), integers.end());
  }
  std::vector<double> values(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) {
    switch (dtype_) {
      case DType::kFloat32: values[i] = data<float>()[i]; break;
      case DType::kFloat64: values[i] = data<double>()[i]; break;
      case DType::kFloat16: values[i] = half_to_float(data<uint16_t>()[i]); break;
      case DType::kBFloat16: values[i] = bfloat16_to_float(data<uint16_t>()[i]); break;
      default: break;
    }
  }
  return values;
}

}  // namespace tandem
