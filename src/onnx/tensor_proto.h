#pragma once
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>

#include "ir/tensor.h"

namespace tandem {

// Reads external weight files, allowing only files inside the model's folder.
class ExternalWeights {
 public:
  explicit ExternalWeights(std::filesystem::path model_dir);
  // Reads `bytes` bytes at `offset` of `location`; throws InputError for a path that leaves
  // the model's folder (.., absolute, symlink), a missing file, or a range past its end. With
  // a null `destination` it only checks (before a caller allocates `bytes`).
  void read(const std::string& location, uint64_t offset, uint64_t bytes, void* destination,
            const std::string& tensor_name) const;

 private:
  std::filesystem::path model_dir_;
};

DType dtype_from_onnx(int32_t elem_type, const std::string& what);
// Bytes a tensor proto's dims claim (0 when they are invalid; tensor_from_proto rejects those).
size_t declared_bytes(const onnx::TensorProto& proto);
// Converts a tensor proto, checking that its data matches its declared dims before allocating.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const ExternalWeights& weights);

}  // namespace tandem
