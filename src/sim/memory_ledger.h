#pragma once
#include <vector>

#include "report/timeline.h"

namespace tandem {

// Bytes in use on every simulated device over time, their peaks, and the capacity check.
class MemoryLedger {
 public:
  MemoryLedger() = default;
  // `timeline`: where to record memory samples (null: peaks only).
  MemoryLedger(std::vector<double> capacity, Timeline* timeline);

  // False when the allocation takes the device over its capacity (the bytes stay counted).
  bool allocate(int device, double bytes, double time);
  void release(int device, double bytes, double time);

  double in_use(int device) const { return in_use_[device]; }
  double peak(int device) const { return peak_[device]; }
  double capacity(int device) const { return capacity_[device]; }

 private:
  void sample(int device, double time);

  std::vector<double> capacity_, in_use_, peak_;
  Timeline* timeline_ = nullptr;
};

}  // namespace tandem
