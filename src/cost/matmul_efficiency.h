#pragma once
#include <vector>

#include "devices/profile.h"

namespace tandem {

// How long a matrix product of a given size takes at a given peak: small products do not
// reach peak. Without measurements, a saturating curve (docs/COST_MODEL.md); with a
// calibration's GEMM curve, the measured times interpolated by size.
class MatmulEfficiency {
 public:
  // Best fraction of peak a large GEMM reaches on published hardware, and the fixed time a
  // GEMM spends filling the machine (pipeline prologue, a partly filled last wave).
  static constexpr double kPeakFraction = 0.8;
  static constexpr double kRampSeconds = 2e-6;

  // The saturating curve: seconds = flops / (kPeakFraction * peak) + kRampSeconds.
  MatmulEfficiency() = default;
  // Measured GEMM times, each including one `launch_overhead` (removed here: the cost model adds
  // it back), at a device whose peak for that precision is `measured_peak` ops/s.
  MatmulEfficiency(const std::vector<CalibrationProfile::GemmPoint>& curve, double launch_overhead,
                   double measured_peak);

  bool measured() const { return !points_.empty(); }
  // Seconds of compute for `flops` of GEMM work at `peak` ops/s; non-decreasing in flops.
  double seconds(double flops, double peak) const;

 private:
  struct Point {
    double flops, seconds;
  };
  std::vector<Point> points_;  // ascending flops, non-decreasing seconds
  double measured_peak_ = 0;
};

}  // namespace tandem
