#include "backends/cuda/cuda_device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "ir/error.h"

namespace tandem::cuda {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw CudaError(std::string(call) + ": " + cudaGetErrorString(status));
  }
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string(call) + ": " + cublasLtGetStatusString(status));
  }
}

void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw CudaError(std::string(call) + ": " + cudnnGetErrorString(status));
  }
}

namespace {

// Host memory the copies between the host and a GPU go through: pinned, so copies run at the
// link's speed and asynchronously; big tensors go in pieces of this size.
constexpr size_t kStagingBytes = size_t{64} << 20;

// TANDEM_CUDA_SYNC=1 waits after every kernel, so that a failure is reported at the node that
// caused it rather than at the next synchronisation (as CUDA_LAUNCH_BLOCKING does).
bool sync_every_kernel() {
  const char* value = std::getenv("TANDEM_CUDA_SYNC");
  return value && std::strcmp(value, "1") == 0;
}

std::string driver_problem(cudaError_t status) {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  if (status == cudaErrorInsufficientDriver) {
    return driver == 0
               ? "no NVIDIA driver (no CUDA device: " + std::string(cudaGetErrorString(status)) +
                     ")"
               : "the NVIDIA driver supports CUDA " + version(driver) +
                     ", older than this build's CUDA runtime " + version(runtime);
  }
  return "no CUDA device: " + std::string(cudaGetErrorString(status));
}

class CudaEvent final : public Event {
 public:
  CudaEvent(int ordinal, cudaStream_t stream) : ordinal_(ordinal) {
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(event_, stream), "cudaEventRecord");
  }
  ~CudaEvent() override { cudaEventDestroy(event_); }
  void synchronize() const override { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
  cudaEvent_t event() const { return event_; }
  int ordinal() const { return ordinal_; }

 private:
  int ordinal_;
  cudaEvent_t event_{};
};

// A kernel that says which node failed: launch errors right after run(), asynchronous ones
// when TANDEM_CUDA_SYNC=1.
class CheckedKernel final : public Kernel {
 public:
  CheckedKernel(const Node& node, std::unique_ptr<Kernel> inner, CudaDevice& device)
      : node_(node), inner_(std::move(inner)), device_(device), sync_(sync_every_kernel()) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    try {
      inner_->run(inputs, outputs);
      check(cudaGetLastError(), "kernel launch");
      if (sync_) check(cudaStreamSynchronize(device_.stream()), "cudaStreamSynchronize");
    } catch (const CudaError& error) {
      throw CudaError(device_.name() + ": " + node_.label() + ": " + error.what());
    }
  }

 private:
  const Node& node_;
  std::unique_ptr<Kernel> inner_;
  CudaDevice& device_;
  bool sync_;
};

}  // namespace

// What the device's tensors need after the device object is gone: the stream their memory is
// freed on, and the account.
struct CudaDevice::State {
  int ordinal = 0;
  cudaStream_t compute{}, copy{};
  cudaMemPool_t pool{};
  cublasLtHandle_t blas_lt{};
  cudnnHandle_t dnn{};
  MemoryAccount account;
  std::mutex staging_mutex;
  void* staging = nullptr;  // pinned, kStagingBytes
  Tensor workspace;
  explicit State(std::string name) : account(std::move(name)) {}
  ~State() {
    cudaSetDevice(ordinal);
    if (compute) cudaStreamSynchronize(compute);
    if (copy) cudaStreamSynchronize(copy);
    workspace = Tensor();
    if (dnn) cudnnDestroy(dnn);
    if (blas_lt) cublasLtDestroy(blas_lt);
    if (staging) cudaFreeHost(staging);
    if (copy) cudaStreamDestroy(copy);
    if (compute) cudaStreamDestroy(compute);
  }
};

std::string CudaMemory::name() const { return device_.name() + " memory"; }

void CudaMemory::copy_to_host(const Tensor& tensor, void* host) const {
  device_.download(tensor.raw(), host, tensor.nbytes());
}

std::string gpu_absence() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return driver_problem(status);
  return count == 0 ? "no CUDA device: the driver reports none" : "";
}

CudaDevice::CudaDevice(std::string name, int ordinal)
    : name_(std::move(name)), ordinal_(ordinal), state_(std::make_shared<State>(name_)) {
  if (const std::string absent = gpu_absence(); !absent.empty()) throw InputError(name_, absent);
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (ordinal >= count) {
    throw InputError(name_, "CUDA device " + std::to_string(ordinal) +
                                " does not exist: this "
                                "machine has " +
                                std::to_string(count));
  }
  State& state = *state_;
  state.ordinal = ordinal;
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  check(cudaGetDeviceProperties(&properties_, ordinal), "cudaGetDeviceProperties");
  check(cudaStreamCreateWithFlags(&state.compute, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&state.copy, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaDeviceGetDefaultMemPool(&state.pool, ordinal), "cudaDeviceGetDefaultMemPool");
  // Keep freed memory in the pool (the caching): without this it is returned to the driver
  // at every synchronisation.
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  check(cudaMemPoolSetAttribute(state.pool, cudaMemPoolAttrReleaseThreshold, &keep),
        "cudaMemPoolSetAttribute");
  check(cudaMallocHost(&state.staging, kStagingBytes), "cudaMallocHost");
  check(cublasLtCreate(&state.blas_lt), "cublasLtCreate");
  check(cudnnCreate(&state.dnn), "cudnnCreate");
  check(cudnnSetStream(state.dnn, state.compute), "cudnnSetStream");
}

CudaDevice::~CudaDevice() = default;

void CudaDevice::bind_current_thread() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

cudaStream_t CudaDevice::stream() const { return state_->compute; }
cublasLtHandle_t CudaDevice::blas_lt() const { return state_->blas_lt; }
cudnnHandle_t CudaDevice::dnn() const { return state_->dnn; }
const MemoryAccount& CudaDevice::account() const { return state_->account; }

std::unique_ptr<Kernel> CudaDevice::compile(const KernelSpec& spec) {
  bind_current_thread();
  const CudaOp* op = spec.node.domain.empty() ? find_op(spec.node.op_type) : nullptr;
  if (!op) throw InputError(spec.node.label() + ": no CUDA kernel for this op");
  try {
    return std::make_unique<CheckedKernel>(spec.node, op->make(spec, *this), *this);
  } catch (const CudaError& error) {
    throw CudaError(name_ + ": " + spec.node.label() + ": " + error.what());
  }
}

Tensor CudaDevice::allocate_on(DType dtype, Shape shape, cudaStream_t stream) {
  bind_current_thread();
  const size_t bytes = std::max<size_t>(static_cast<size_t>(numel(shape)) * dtype_size(dtype), 1);
  void* data = nullptr;
  cudaError_t status = cudaMallocAsync(&data, bytes, stream);
  if (status == cudaErrorMemoryAllocation) {
    // Memory freed on the streams but not yet reached is in the pool only once they get there.
    cudaGetLastError();
    check(cudaStreamSynchronize(state_->compute), "cudaStreamSynchronize");
    check(cudaStreamSynchronize(state_->copy), "cudaStreamSynchronize");
    status = cudaMallocAsync(&data, bytes, stream);
  }
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    throw state_->account.out_of_memory(bytes, free, total);
  }
  check(status, "cudaMallocAsync");
  state_->account.allocated(bytes);
  std::shared_ptr<State> state = state_;
  std::shared_ptr<void> owner(data, [state, bytes](void* p) {
    cudaSetDevice(state->ordinal);
    cudaFreeAsync(p, state->compute);
    state->account.freed(bytes);
  });
  return Tensor::wrap(dtype, std::move(shape), data, std::move(owner), &memory_);
}

Tensor CudaDevice::allocate(DType dtype, Shape shape) {
  return allocate_on(dtype, std::move(shape), state_->compute);
}

void CudaDevice::upload_on(const void* host, void* device, size_t bytes, cudaStream_t stream) {
  std::lock_guard lock(state_->staging_mutex);
  for (size_t done = 0; done < bytes; done += kStagingBytes) {
    const size_t piece = std::min(kStagingBytes, bytes - done);
    std::memcpy(state_->staging, static_cast<const std::byte*>(host) + done, piece);
    check(cudaMemcpyAsync(static_cast<std::byte*>(device) + done, state_->staging, piece,
                          cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync");
    // The staging buffer is reused by the next piece.
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
}

void CudaDevice::download(const void* device, void* host, size_t bytes) const {
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
  std::lock_guard lock(state_->staging_mutex);
  for (size_t done = 0; done < bytes; done += kStagingBytes) {
    const size_t piece = std::min(kStagingBytes, bytes - done);
    check(cudaMemcpyAsync(state_->staging, static_cast<const std::byte*>(device) + done, piece,
                          cudaMemcpyDeviceToHost, state_->compute),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(state_->compute), "cudaStreamSynchronize");
    std::memcpy(static_cast<std::byte*>(host) + done, state_->staging, piece);
  }
}

Tensor CudaDevice::upload(const Tensor& host) {
  const Tensor source = host.to_host();
  Tensor copy = allocate(source.dtype(), source.shape());
  if (source.nbytes()) upload_on(source.raw(), copy.raw(), source.nbytes(), state_->compute);
  return copy;
}

Tensor CudaDevice::receive(const Tensor& tensor) {
  bind_current_thread();
  if (tensor.memory() == &memory_) {
    // Within the device: ordered after its producer on the compute stream.
    Tensor copy = allocate(tensor.dtype(), tensor.shape());
    check(cudaMemcpyAsync(copy.raw(), tensor.raw(), tensor.nbytes(), cudaMemcpyDeviceToDevice,
                          state_->compute),
          "cudaMemcpyAsync");
    return copy;
  }
  Tensor copy = allocate_on(tensor.dtype(), tensor.shape(), state_->copy);
  if (!tensor.nbytes()) return copy;
  if (const auto* peer = dynamic_cast<const CudaMemory*>(tensor.memory())) {
    // GPU to GPU: the peer's work that wrote it was awaited (wait()); the copy stream is
    // synchronised before the tensor is handed over, so the source may be freed after.
    check(cudaMemcpyPeerAsync(copy.raw(), ordinal_, tensor.raw(), peer->device().ordinal(),
                              tensor.nbytes(), state_->copy),
          "cudaMemcpyPeerAsync");
    check(cudaStreamSynchronize(state_->copy), "cudaStreamSynchronize");
    return copy;
  }
  // From the host or another backend's device: through host memory and the pinned staging.
  const Tensor host = tensor.to_host();
  upload_on(host.raw(), copy.raw(), host.nbytes(), state_->copy);
  return copy;
}

std::shared_ptr<const Event> CudaDevice::record() {
  return std::make_shared<CudaEvent>(ordinal_, state_->compute);
}

void CudaDevice::wait(const Event& event) {
  if (const auto* cuda = dynamic_cast<const CudaEvent*>(&event)) {
    bind_current_thread();
    check(cudaStreamWaitEvent(state_->copy, cuda->event(), 0), "cudaStreamWaitEvent");
    return;
  }
  event.synchronize();
}

void* CudaDevice::workspace(size_t bytes) {
  if (static_cast<size_t>(state_->workspace.numel()) < bytes) {
    // The old buffer is freed on the compute stream, after the work that used it.
    state_->workspace = allocate(DType::kUInt8, {static_cast<int64_t>(bytes)});
  }
  return state_->workspace.raw();
}

void CudaDevice::read_back(void* host, const void* device, size_t bytes) {
  download(device, host, bytes);
}

std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster,
                                                  std::span<const DeviceSpec* const> specs, bool) {
  std::vector<std::unique_ptr<Device>> devices;
  for (size_t i = 0; i < specs.size(); ++i) {
    try {
      devices.push_back(std::make_unique<CudaDevice>(specs[i]->id, static_cast<int>(i)));
    } catch (const std::exception& error) {
      throw InputError(cluster.file,
                       "device " + specs[i]->id + " (backend cuda) cannot start: " + error.what());
    }
  }
  for (size_t a = 0; a < specs.size(); ++a) {
    for (size_t b = 0; b < specs.size(); ++b) {
      int can = 0;
      if (a == b || cudaDeviceCanAccessPeer(&can, static_cast<int>(a), static_cast<int>(b)) ||
          !can) {
        continue;
      }
      check(cudaSetDevice(static_cast<int>(a)), "cudaSetDevice");
      const cudaError_t status = cudaDeviceEnablePeerAccess(static_cast<int>(b), 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
      } else {
        check(status, "cudaDeviceEnablePeerAccess");
      }
    }
  }
  return devices;
}

CalibrationTarget calibration_target(const std::string&) {
  auto device = std::make_unique<CudaDevice>("gpu0", 0);
  CudaDevice* gpu = device.get();
  CalibrationTarget target;
  target.kind = DeviceKind::kGpu;
  target.description = "cuda: " + std::string(gpu->properties().name);
  target.memory_bytes = static_cast<double>(gpu->properties().totalGlobalMem);
  target.round_trip = [gpu](size_t bytes) {
    const Tensor host = Tensor::zeros(DType::kUInt8, {static_cast<int64_t>(bytes)});
    const auto start = std::chrono::steady_clock::now();
    const Tensor there = gpu->receive(host);
    const Tensor back = there.to_host();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  target.device = std::move(device);
  return target;
}

}  // namespace tandem::cuda
