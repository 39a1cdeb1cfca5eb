#pragma once
#include <functional>
#include <string>

#include "backends/device.h"
#include "devices/profile.h"

namespace tandem::calibrate {

struct CalibrationOptions {
  bool quick = false;                                // small sizes and short repetitions (tests)
  std::string profile_path = "tandem-profile.json";  // named in every figure's source
  // Called as each benchmark finishes, for progress on the terminal.
  std::function<void(const CalibrationProfile::Measurement&)> progress;
};

// Measures `device` with micro-benchmarks run through its own kernels: a GEMM curve (peak
// matrix throughput), convolutions, elementwise bandwidth, vector throughput and dispatch
// overhead per op. Fills the profile's figures, gemm_curve and measurements. Any backend's
// device can be measured this way; copies to and from it are the caller's to measure.
void measure_kernels(Device& device, const CalibrationOptions& options,
                     CalibrationProfile& profile);

// The blocks a GEMM of m x n x k (`flops`) is timed in, at a best rate so far of `rate` FLOP/s
// (0: unknown): the fewest halvings that bring a block's run under a millisecond, of its rows
// first (keeping at least 128 a block), then, `across_weights`, of its columns, then of its
// depth (each keeping at least 512). Beside another busy process a longer run is stalled every time
// (the scheduler gives a thread that woke its core back at once, but takes it away within a few
// milliseconds).
struct GemmBlocks {
  int64_t rows = 1, columns = 1, depth = 1;
  int64_t count() const { return rows * columns * depth; }
};
GemmBlocks gemm_blocks(int64_t m, int64_t n, int64_t k, double rate, bool across_weights = true);

// Times copying `bytes` from the host to a device and back; returns seconds.
using HostRoundTrip = std::function<double(size_t bytes)>;

// A device of another backend (a PJRT device): its kernels as measure_kernels measures them,
// memory capacity as given (0 = unknown), and the host link from the round trip (both ways).
CalibrationProfile calibrate_device(Device& device, DeviceKind kind, std::string device_name,
                                    double memory_bytes, const HostRoundTrip& round_trip,
                                    const CalibrationOptions& options);

// The local CPU at the current thread count: its kernels, the host's memory capacity, and
// host memcpy bandwidth as the host link figure (a CPU has no device copy).
CalibrationProfile calibrate_cpu(const CalibrationOptions& options);

// The speed reference every calibration times at its start and end: a 256^3 fp32 product's run
// time through the executor on `device` (dispatch and, on a compiled device, the program's
// fixed cost included), the median of its runs at full speed over `budget_seconds` (at least 7
// runs): a 256^3 product on two threads of a 2-vCPU VM took 83-187 us in windows of 30 ms.
double speed_reference_seconds(Device& device, double budget_seconds);

}  // namespace tandem::calibrate
