#pragma once
#include "backends/device.h"

namespace tandem::cpu {

// The host CPU as an eager device: runs every op in the CPU kernel registry.
class CpuDevice final : public Device {
 public:
  explicit CpuDevice(std::string name = "cpu:0") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  bool supports(const Node& node) const override;
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override;

 private:
  std::string name_;
};

// Threads used by CPU kernels and oneDNN (OpenMP); 0 keeps the default.
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace tandem::cpu
