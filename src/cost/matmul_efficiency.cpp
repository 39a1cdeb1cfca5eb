#include "cost/matmul_efficiency.h"

#include <cmath>

namespace tandem {

MatmulEfficiency::MatmulEfficiency(const std::vector<CalibrationProfile::GemmPoint>& curve,
                                   double fixed_seconds, double measured_peak,
                                   const BandwidthCurve& weights)
    : measured_peak_(measured_peak) {
  std::vector<WorkCurve::Point> points, squares;
  std::vector<CalibrationProfile::GemmPoint> kept;
  for (const auto& point : curve) {
    const double flops = 2.0 * static_cast<double>(point.batch) * static_cast<double>(point.m) *
                         static_cast<double>(point.n) * static_cast<double>(point.k);
    const double compute = point.seconds - fixed_seconds;
    const double b_bytes = 4.0 * static_cast<double>(point.batch) * static_cast<double>(point.k) *
                           static_cast<double>(point.n);
    const bool reading_bound =
        weights.measured() && b_bytes / weights.rate(b_bytes) >= 0.5 * compute;
    if (reading_bound || flops <= 0 || compute <= 0) continue;
    points.push_back({flops, compute});
    if (point.batch == 1 && point.m == point.n && point.n == point.k)
      squares.push_back(points.back());
    kept.push_back(point);
  }
  // By FLOPs, the squares' times: a skinnier shape's own departure from them is its shape's
  // (pooled with the squares, 128x768x3072 at 395 GFLOP/s bent the curve between 512^3 and 768^3,
  // both at 450-460).
  curve_ = WorkCurve(squares.size() >= 2 ? squares : points);
  if (measured_peak_ <= 0) measured_peak_ = curve_.best_rate();
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& point = kept[i];
    residuals_.push_back(
        {std::log2(static_cast<double>(point.batch)), std::log2(static_cast<double>(point.m)),
         std::log2(static_cast<double>(point.n)), std::log2(static_cast<double>(point.k)),
         points[i].seconds, std::log(points[i].seconds / curve_.seconds(points[i].work))});
  }
}

double MatmulEfficiency::seconds(double flops, double peak) const {
  if (flops <= 0 || peak <= 0) return 0;
  if (!curve_.measured()) return flops / (kPeakFraction * peak) + kRampSeconds;
  // Measured at measured_peak_; another precision of the same device scales with its peak.
  return curve_.seconds(flops) * measured_peak_ / peak;
}

double MatmulEfficiency::seconds(const GemmShape& shape, double peak) const {
  const double on_curve = seconds(shape.flops(), peak);
  if (residuals_.empty() || on_curve <= 0) return on_curve;
  const double batch = std::log2(std::max(1.0, shape.batch)),
               m = std::log2(static_cast<double>(shape.m)),
               n = std::log2(static_cast<double>(shape.n)),
               k = std::log2(static_cast<double>(shape.k));
  // Inverse squared distance in doublings; a measured shape is its own figure. A batch runs as
  // one call, its products split among the threads: priced as all its FLOPs, off the curve as
  // far as measured batches near it ran (8 products of 32^3 took what one of 64^3 did, on one
  // thread or two).
  double weighted = 0, weights = 0;
  for (const ShapeResidual& near : residuals_) {
    const double db = batch - near.log2_batch, dm = m - near.log2_m, dn = n - near.log2_n,
                 dk = k - near.log2_k;
    if (std::abs(db) > 1 || std::abs(dm) > 1 || std::abs(dn) > 1 || std::abs(dk) > 1) continue;
    const double squared = db * db + dm * dm + dn * dn + dk * dk;
    if (squared == 0) return near.seconds * measured_peak_ / peak;
    weighted += near.log_ratio / squared;
    weights += 1 / squared;
  }
  return weights > 0 ? on_curve * std::exp(weighted / weights) : on_curve;
}

}  // namespace tandem
