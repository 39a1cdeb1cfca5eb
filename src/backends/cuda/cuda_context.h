#pragma once
// What a CUDA kernel runs with: its device's compute stream, library handles and memory.
// Kernels launch on stream() and never synchronise, except to size data-dependent outputs
// (read_back). Inputs and outputs of Kernel::run are tensors in this device's memory.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <stdexcept>
#include <string>

#include "ir/tensor.h"

namespace tandem::cuda {

// A CUDA, cuBLAS or cuDNN call that failed, in words: "cudaMemcpyAsync: an illegal memory
// access was encountered".
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
void check(cudaError_t status, const char* call);
void check(cublasStatus_t status, const char* call);
void check(cudnnStatus_t status, const char* call);

class CudaContext {
 public:
  virtual ~CudaContext() = default;
  virtual const std::string& device_name() const = 0;  // the cluster's device id, "gpu0"
  virtual int ordinal() const = 0;                     // CUDA device number
  virtual const cudaDeviceProp& properties() const = 0;
  virtual cudaStream_t stream() const = 0;  // every kernel of this device launches here
  virtual cublasLtHandle_t blas_lt() const = 0;
  virtual cudnnHandle_t dnn() const = 0;  // bound to stream()
  // Scratch memory for cuBLASLt and cuDNN workspaces, valid until the next call on this
  // stream's work; grows on demand.
  virtual void* workspace(size_t bytes) = 0;
  // A tensor in this device's memory, ordered on stream(); freed back to the device's pool
  // when the last copy of the Tensor goes.
  virtual Tensor allocate(DType dtype, Shape shape) = 0;
  // A host tensor's contents in this device's memory (weights at compile time); ordered on
  // stream().
  virtual Tensor upload(const Tensor& host) = 0;
  // `bytes` from device memory into host memory, waiting for stream() to get there (the
  // sizes of data-dependent outputs).
  virtual void read_back(void* host, const void* device, size_t bytes) = 0;
};

}  // namespace tandem::cuda
