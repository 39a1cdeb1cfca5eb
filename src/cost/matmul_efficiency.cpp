#include "cost/matmul_efficiency.h"

namespace tandem {

MatmulEfficiency::MatmulEfficiency(const std::vector<CalibrationProfile::GemmPoint>& curve,
                                   double fixed_seconds, double measured_peak,
                                   const BandwidthCurve& weights)
    : measured_peak_(measured_peak) {
  std::vector<WorkCurve::Point> points;
  for (const auto& point : curve) {
    const double flops = 2.0 * static_cast<double>(point.m) * static_cast<double>(point.n) *
                         static_cast<double>(point.k);
    const double compute = point.seconds - fixed_seconds;
    const double b_bytes = 4.0 * static_cast<double>(point.k) * static_cast<double>(point.n);
    const bool reading_bound =
        weights.measured() && b_bytes / weights.rate(b_bytes) >= 0.5 * compute;
    if (!reading_bound) points.push_back({flops, compute});
  }
  curve_ = WorkCurve(std::move(points));
  if (measured_peak_ <= 0) measured_peak_ = curve_.best_rate();
}

double MatmulEfficiency::seconds(double flops, double peak) const {
  if (flops <= 0 || peak <= 0) return 0;
  if (!curve_.measured()) return flops / (kPeakFraction * peak) + kRampSeconds;
  // Measured at measured_peak_; another precision of the same device scales with its peak.
  return curve_.seconds(flops) * measured_peak_ / peak;
}

}  // namespace tandem
