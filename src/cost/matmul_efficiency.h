#pragma once
#include <vector>

#include "cost/bandwidth_curve.h"
#include "cost/gemm_shape.h"
#include "cost/work_curve.h"
#include "devices/profile.h"

namespace tandem {

// How long a matrix product of a given size takes at a given peak: small products do not
// reach peak. Without measurements, a saturating curve (docs/COST_MODEL.md); with a
// calibration's GEMM curve, the measured times interpolated by size, and a product's shape
// priced as far off that curve as the measured shapes near it ran.
class MatmulEfficiency {
 public:
  // Best fraction of peak a large GEMM reaches on published hardware, and the fixed time a
  // GEMM spends filling the machine (pipeline prologue, a partly filled last wave).
  static constexpr double kPeakFraction = 0.8;
  static constexpr double kRampSeconds = 2e-6;

  // The saturating curve: seconds = flops / (kPeakFraction * peak) + kRampSeconds.
  MatmulEfficiency() = default;
  // Measured GEMM times, each including a MatMul's fixed cost `fixed_seconds` (removed here:
  // the cost model adds it back as the op's overhead), at a device whose peak for that precision is
  // `measured_peak` ops/s. A point whose time is mostly reading its constant B (a product of one
  // row by a large matrix), as `weights` prices those bytes, measured memory, not compute: it is
  // left out, since the cost model prices the weights' reading apart and takes the larger of the
  // two.
  MatmulEfficiency(const std::vector<CalibrationProfile::GemmPoint>& curve, double fixed_seconds,
                   double measured_peak, const BandwidthCurve& weights = {});

  bool measured() const { return curve_.measured(); }
  // Seconds of compute for `flops` of GEMM work at `peak` ops/s, by the measured squares' times
  // (all points' where fewer than two squares were measured); non-decreasing in flops.
  double seconds(double flops, double peak) const;
  // Seconds of compute for the product `shape` at `peak`: a measured shape's own time; else its
  // FLOPs' time on the curve (a batch's, all its products'), times how far off it the measured
  // shapes within a factor of two of it in each of batch, m, n and k ran (the nearer, the more
  // weight; none near, none). On a 2-vCPU Xeon a transformer's 128- and 256-row products ran at
  // 400 GFLOP/s where squares of about the same FLOPs ran at 460.
  double seconds(const GemmShape& shape, double peak) const;

 private:
  struct ShapeResidual {
    double log2_batch, log2_m, log2_n, log2_k;
    double seconds;    // measured, less the fixed cost
    double log_ratio;  // log(measured / the curve)
  };
  WorkCurve curve_;  // FLOPs -> seconds of the squares at measured_peak_
  std::vector<ShapeResidual> residuals_;
  double measured_peak_ = 0;
};

}  // namespace tandem
