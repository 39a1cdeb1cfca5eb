#include "cost/work_curve.h"

#include <algorithm>
#include <cmath>

namespace tandem {

WorkCurve::WorkCurve(std::vector<Point> points) {
  for (const Point& p : points) {
    if (p.work > 0 && p.seconds > 0) points_.push_back(p);
  }
  std::sort(points_.begin(), points_.end(),
            [](const Point& a, const Point& b) { return a.work < b.work; });
  struct Pool {
    double log_sum;
    size_t count;
    double mean() const { return log_sum / static_cast<double>(count); }
  };
  std::vector<Pool> pools;
  for (size_t i = 0; i < points_.size(); ++i) {
    // Points of the same work are measurements of one point: they share a pool from the start.
    if (i > 0 && points_[i].work == points_[i - 1].work) {
      pools.back().log_sum += std::log(points_[i].seconds);
      ++pools.back().count;
    } else {
      pools.push_back({std::log(points_[i].seconds), 1});
    }
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
  points_.erase(std::unique(points_.begin(), points_.end(),
                            [](const Point& a, const Point& b) { return a.work == b.work; }),
                points_.end());
}

double WorkCurve::seconds(double work) const {
  if (points_.empty() || work <= 0) return 0;
  if (work <= points_.front().work) return points_.front().seconds * work / points_.front().work;
  if (work >= points_.back().work) return points_.back().seconds * work / points_.back().work;
  const auto above = std::lower_bound(points_.begin(), points_.end(), work,
                                      [](const Point& p, double w) { return p.work < w; });
  const auto below = above - 1;
  const double t = std::log(work / below->work) / std::log(above->work / below->work);
  return below->seconds * std::pow(above->seconds / below->seconds, t);
}

double WorkCurve::best_rate() const {
  double best = 0;
  for (const Point& p : points_) best = std::max(best, p.work / p.seconds);
  return best;
}

}  // namespace tandem
