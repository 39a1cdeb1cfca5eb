#pragma once
// A PJRT client and the objects it makes, each owned by a move-only handle that destroys it
// through the plugin's API.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/pjrt/pjrt_plugin.h"
#include "ir/dtype.h"

namespace tandem::pjrt {

void destroy_handle(const PJRT_Api* api, PJRT_Client* client);
void destroy_handle(const PJRT_Api* api, PJRT_LoadedExecutable* executable);
void destroy_handle(const PJRT_Api* api, PJRT_Buffer* buffer);

template <typename T>
class Handle {
 public:
  Handle() = default;
  Handle(const PJRT_Api* api, T* object) : api_(api), object_(object) {}
  Handle(Handle&& other) noexcept
      : api_(other.api_), object_(std::exchange(other.object_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }
  T* get() const { return object_; }

 private:
  void reset() {
    if (object_ != nullptr) destroy_handle(api_, std::exchange(object_, nullptr));
  }
  const PJRT_Api* api_ = nullptr;
  T* object_ = nullptr;
};

struct PjrtDeviceInfo {
  int id = 0;
  std::string kind;  // e.g. "cpu", "TPU v4"
  bool addressable = false;
};

// A buffer on a PJRT device.
class PjrtBuffer {
 public:
  PjrtBuffer(std::shared_ptr<PjrtPlugin> plugin, PJRT_Buffer* buffer)
      : plugin_(std::move(plugin)), buffer_(plugin_->api(), buffer) {}
  PJRT_Buffer* get() const { return buffer_.get(); }
  std::vector<int64_t> dims() const;
  // Copies the buffer into `dst` (dense, row-major) and waits for the copy.
  void to_host(void* dst, size_t bytes) const;
  // A copy on another device of the same client, made by the plugin (no host round trip).
  PjrtBuffer copy_to_device(PJRT_Device* device) const;

 private:
  std::shared_ptr<PjrtPlugin> plugin_;
  Handle<PJRT_Buffer> buffer_;
};

// The PJRT element type of a dtype.
PJRT_Buffer_Type buffer_type(DType dtype);

// A compiled program loaded on a client's devices.
class PjrtExecutable {
 public:
  PjrtExecutable(std::shared_ptr<PjrtPlugin> plugin, PJRT_LoadedExecutable* executable);
  size_t num_outputs() const { return num_outputs_; }
  // Runs on `device` (the arguments must be there) and waits for it to finish.
  std::vector<PjrtBuffer> execute(std::span<const PjrtBuffer* const> arguments,
                                  PJRT_Device* device) const;
  // The compiled program as bytes that PjrtClient::deserialize loads again (the disk cache).
  // PjrtError when the plugin cannot serialise.
  std::string serialize() const;

 private:
  std::shared_ptr<PjrtPlugin> plugin_;
  Handle<PJRT_LoadedExecutable> executable_;
  size_t num_outputs_ = 0;
  // How long its last run took, start to finish: a short program's end is watched for awake.
  std::shared_ptr<std::atomic<int64_t>> last_run_nanoseconds_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

class PjrtClient {
 public:
  explicit PjrtClient(std::shared_ptr<PjrtPlugin> plugin);
  const PjrtPlugin& plugin() const { return *plugin_; }
  std::string platform_name() const;
  std::vector<PjrtDeviceInfo> devices() const;
  // Compiles a StableHLO module given as MLIR text, for one replica and one partition, as a
  // portable executable: one compilation runs on any of the client's devices.
  PjrtExecutable compile_mlir(std::string_view module) const;
  // Loads an executable serialised by PjrtExecutable::serialize with this plugin.
  PjrtExecutable deserialize(std::string_view bytes) const;
  // The addressable device with this index, for copies between devices.
  PJRT_Device* addressable_device(size_t index) const;
  size_t addressable_device_count() const;
  // Copies a dense, row-major host array to addressable device `device` (an index into the
  // addressable devices) and waits until the host memory may be reused.
  PjrtBuffer to_device(const void* data, PJRT_Buffer_Type type, std::span<const int64_t> dims,
                       size_t device = 0) const;

 private:
  std::shared_ptr<PjrtPlugin> plugin_;
  Handle<PJRT_Client> client_;
};

}  // namespace tandem::pjrt
