#pragma once
#include <vector>

#include "devices/profile.h"

namespace tandem {

// How fast an op's bytes move, by how many there are: a working set that fits in a cache moves
// at that cache's rate, a larger one at main memory's. From a calibration's `bandwidth_curve`
// (fp32 Adds from in-L1 to past the last-level cache), each point's bytes over its time less
// one launch overhead (the cost model adds that back), interpolated linearly in log rate vs
// log bytes; beyond the ends, the end point's rate. A point whose time is below the time of a
// smaller one is slowed to it, so time never decreases with bytes. Empty without a curve.
class BandwidthCurve {
 public:
  BandwidthCurve() = default;
  BandwidthCurve(const std::vector<CalibrationProfile::BandwidthPoint>& curve,
                 double launch_overhead);

  bool measured() const { return !points_.empty(); }
  // Bytes per second for an op that reads and writes `bytes` in all; 0 without a curve.
  double rate(double bytes) const;
  // The rate past the caches (the largest point's): main memory's; 0 without a curve.
  double main_memory_rate() const { return points_.empty() ? 0 : points_.back().rate; }

 private:
  struct Point {
    double bytes, rate;
  };
  std::vector<Point> points_;  // ascending bytes
};

}  // namespace tandem
