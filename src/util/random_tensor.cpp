#include "util/random_tensor.h"

#include "ir/error.h"

namespace tandem {

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  Tensor tensor = Tensor::allocate(dtype, shape);
  const int64_t count = tensor.numel();
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::kFloat32: tensor.data<float>()[i] = real(rng); break;
      case DType::kFloat64: tensor.data<double>()[i] = real(rng); break;
      case DType::kFloat16: tensor.data<uint16_t>()[i] = float_to_half(real(rng)); break;
      case DType::kBFloat16: tensor.data<uint16_t>()[i] = float_to_bfloat16(real(rng)); break;
      case DType::kInt64: tensor.data<int64_t>()[i] = small(rng); break;
      case DType::kInt32: tensor.data<int32_t>()[i] = small(rng); break;
      case DType::kInt16: tensor.data<int16_t>()[i] = static_cast<int16_t>(small(rng)); break;
      case DType::kInt8: tensor.data<int8_t>()[i] = static_cast<int8_t>(small(rng)); break;
      case DType::kUInt8: tensor.data<uint8_t>()[i] = static_cast<uint8_t>(small(rng)); break;
      case DType::kBool: tensor.data<uint8_t>()[i] = small(rng) & 1; break;
      case DType::kUndefined: throw InputError("cannot make random data of undefined type");
    }
  }
  return tensor;
}

}  // namespace tandem
