#include "cost/matmul_efficiency.h"

#include <algorithm>
#include <cmath>

namespace tandem {

MatmulEfficiency::MatmulEfficiency(const std::vector<CalibrationProfile::GemmPoint>& curve,
                                   double launch_overhead, double measured_peak)
    : measured_peak_(measured_peak) {
  for (const auto& point : curve) {
    const double flops = 2.0 * static_cast<double>(point.m) * static_cast<double>(point.n) *
                         static_cast<double>(point.k);
    const double compute = point.seconds - launch_overhead;
    if (flops > 0 && compute > 0) points_.push_back({flops, compute});
  }
  std::sort(points_.begin(), points_.end(),
            [](const Point& a, const Point& b) { return a.flops < b.flops; });
  // Noise, or a skinny shape beside a square one, can make more work look faster. More work
  // never takes less time: pool adjacent violators (the least-squares monotone fit of log time).
  struct Pool {
    double log_sum;
    size_t count;
    double mean() const { return log_sum / static_cast<double>(count); }
  };
  std::vector<Pool> pools;
  for (const Point& p : points_) {
    pools.push_back({std::log(p.seconds), 1});
    while (pools.size() > 1 && pools[pools.size() - 2].mean() > pools.back().mean()) {
      pools[pools.size() - 2].log_sum += pools.back().log_sum;
      pools[pools.size() - 2].count += pools.back().count;
      pools.pop_back();
    }
  }
  size_t i = 0;
  for (const Pool& pool : pools) {
    for (size_t j = 0; j < pool.count; ++j) points_[i++].seconds = std::exp(pool.mean());
  }
  if (measured_peak_ <= 0) {
    for (const Point& p : points_) measured_peak_ = std::max(measured_peak_, p.flops / p.seconds);
  }
}

double MatmulEfficiency::seconds(double flops, double peak) const {
  if (flops <= 0 || peak <= 0) return 0;
  if (points_.empty()) return flops / (kPeakFraction * peak) + kRampSeconds;
  // Measured at measured_peak_; another precision of the same device scales with its peak.
  const double scale = measured_peak_ / peak;
  // Outside the measured range: the rate of the nearest end point.
  if (flops <= points_.front().flops) {
    return points_.front().seconds * flops / points_.front().flops * scale;
  }
  if (flops >= points_.back().flops) {
    return points_.back().seconds * flops / points_.back().flops * scale;
  }
  const auto above = std::lower_bound(points_.begin(), points_.end(), flops,
                                      [](const Point& p, double f) { return p.flops < f; });
  const auto below = above - 1;
  // Linear in log-log: time follows a power of the work between two measurements.
  const double t = std::log(flops / below->flops) / std::log(above->flops / below->flops);
  return below->seconds * std::pow(above->seconds / below->seconds, t) * scale;
}

}  // namespace tandem
