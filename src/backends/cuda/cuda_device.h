#pragma once
// One NVIDIA GPU as an eager Tandem device: nodes run one by one as CUDA kernels (cuBLASLt,
// cuDNN, this backend's own) on the device's compute stream, with tensors in its memory.
//   Memory: a stream-ordered pool (cudaMallocAsync) that keeps what it frees for reuse, so no
//     op pays for cudaMalloc; MemoryAccount books it, and out-of-memory names the device, the
//     bytes asked and what was free.
//   Streams: one compute stream; one copy stream for what comes from other devices (peer
//     copies from GPUs, uploads through pinned host staging from the rest); events order a
//     consumer's copy after the producer's work.
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/memory_account.h"
#include "backends/device.h"
#include "backends/registry.h"

namespace tandem::cuda {

class CudaDevice;

// A GPU's memory as Tandem tensors see it.
class CudaMemory final : public MemorySpace {
 public:
  explicit CudaMemory(const CudaDevice& device) : device_(device) {}
  std::string name() const override;
  void copy_to_host(const Tensor& tensor, void* host) const override;
  const CudaDevice& device() const { return device_; }

 private:
  const CudaDevice& device_;
};

class CudaDevice final : public Device, public CudaContext {
 public:
  // `ordinal`: the CUDA device number. Throws InputError naming `name` when there is no such
  // GPU or the driver is too old for this build.
  CudaDevice(std::string name, int ordinal);
  ~CudaDevice() override;

  std::string name() const override { return name_; }
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override;
  const MemorySpace* memory() const override { return &memory_; }
  Tensor allocate(DType dtype, Shape shape) override;
  Tensor receive(const Tensor& tensor) override;
  std::shared_ptr<const Event> record() override;
  void wait(const Event& event) override;
  void bind_current_thread() const override;

  // CudaContext
  const std::string& device_name() const override { return name_; }
  int ordinal() const override { return ordinal_; }
  const cudaDeviceProp& properties() const override { return properties_; }
  cudaStream_t stream() const override;
  cublasLtHandle_t blas_lt() const override;
  cudnnHandle_t dnn() const override;
  void* workspace(size_t bytes) override;
  Tensor upload(const Tensor& host) override;
  void read_back(void* host, const void* device, size_t bytes) override;

  const MemoryAccount& account() const;
  // Copies `bytes` at `device` (this GPU's memory) into `host` after the compute stream's
  // work so far, through pinned staging.
  void download(const void* device, void* host, size_t bytes) const;

 private:
  struct State;
  Tensor allocate_on(DType dtype, Shape shape, cudaStream_t stream);
  void upload_on(const void* host, void* device, size_t bytes, cudaStream_t stream);

  std::string name_;
  int ordinal_;
  cudaDeviceProp properties_{};
  CudaMemory memory_{*this};
  std::shared_ptr<State> state_;  // shared with the deleters of the device's tensors
};

// One device per spec, the i-th cuda device of the cluster on GPU i; peer access enabled
// between them where the hardware allows.
std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster,
                                                  std::span<const DeviceSpec* const> specs,
                                                  bool progress);

// GPU 0, with the link timed by a pinned round trip.
CalibrationTarget calibration_target(const std::string& plugin);

// Whether this process sees a CUDA GPU, and if not, why ("no CUDA device: ...").
std::string gpu_absence();

}  // namespace tandem::cuda
