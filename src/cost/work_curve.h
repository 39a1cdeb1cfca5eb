#pragma once
#include <vector>

namespace tandem {

// Measured times by amount of work (FLOPs of one kind of kernel): noise, or a skinny shape beside
// a square one, can make more work look faster, so the times are pooled into a monotone curve
// (adjacent violators, least squares on log time); between points, time is linear in log-log;
// outside them, the rate of the nearest end point. Several points of the same work (shapes of
// equal FLOPs) are one point at their mean log time. Empty without points.
class WorkCurve {
 public:
  struct Point {
    double work, seconds;
  };
  WorkCurve() = default;
  // Points with no work or no time are left out.
  explicit WorkCurve(std::vector<Point> points);

  bool measured() const { return !points_.empty(); }
  // Seconds for `work`; non-decreasing in work; 0 without points or work.
  double seconds(double work) const;
  // The best rate (work per second) of any point.
  double best_rate() const;

 private:
  std::vector<Point> points_;  // ascending work, non-decreasing seconds
};

}  // namespace tandem
