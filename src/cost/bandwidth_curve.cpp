#include "cost/bandwidth_curve.h"

#include <algorithm>
#include <cmath>

namespace tandem {

BandwidthCurve::BandwidthCurve(const std::vector<CalibrationProfile::BandwidthPoint>& curve,
                               double launch_overhead) {
  for (const auto& point : curve) {
    // A point no slower than the overhead says nothing about bandwidth.
    const double seconds = point.seconds - launch_overhead;
    if (point.bytes > 0 && seconds > 0) points_.push_back({point.bytes, point.bytes / seconds});
  }
  std::sort(points_.begin(), points_.end(),
            [](const Point& a, const Point& b) { return a.bytes < b.bytes; });
  // More bytes never take less time (noise, or a fixed cost in a small point's kernel): a
  // point faster than the one before it takes that one's time. Log time is then linear and
  // non-decreasing between points.
  for (size_t i = 1; i < points_.size(); ++i) {
    const double before = points_[i - 1].bytes / points_[i - 1].rate;
    if (points_[i].bytes / points_[i].rate < before) points_[i].rate = points_[i].bytes / before;
  }
}

double BandwidthCurve::rate(double bytes) const {
  if (points_.empty()) return 0;
  if (bytes <= points_.front().bytes) return points_.front().rate;
  if (bytes >= points_.back().bytes) return points_.back().rate;
  const auto above = std::lower_bound(points_.begin(), points_.end(), bytes,
                                      [](const Point& p, double b) { return p.bytes < b; });
  const auto below = above - 1;
  const double t = std::log(bytes / below->bytes) / std::log(above->bytes / below->bytes);
  return below->rate * std::pow(above->rate / below->rate, t);
}

}  // namespace tandem
