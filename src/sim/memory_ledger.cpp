#include "sim/memory_ledger.h"

#include <algorithm>

namespace tandem {

MemoryLedger::MemoryLedger(std::vector<double> capacity, Timeline* timeline)
    : capacity_(std::move(capacity)),
      in_use_(capacity_.size(), 0),
      peak_(capacity_.size(), 0),
      timeline_(timeline) {}

bool MemoryLedger::allocate(int device, double bytes, double time) {
  in_use_[device] += bytes;
  peak_[device] = std::max(peak_[device], in_use_[device]);
  sample(device, time);
  return in_use_[device] <= capacity_[device];
}

void MemoryLedger::release(int device, double bytes, double time) {
  // Rounding of micro-batch fractions must not leave a negative residue.
  in_use_[device] = std::max(in_use_[device] - bytes, 0.0);
  sample(device, time);
}

void MemoryLedger::sample(int device, double time) {
  if (!timeline_) return;
  std::vector<MemorySample>& memory = timeline_->memory;
  // Several changes at one instant make one step.
  if (!memory.empty() && memory.back().device == device && memory.back().time_seconds == time) {
    memory.back().bytes = in_use_[device];
    return;
  }
  memory.push_back({device, time, in_use_[device]});
}

}  // namespace tandem
