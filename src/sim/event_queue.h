#pragma once
#include <cstdint>
#include <queue>
#include <vector>

namespace tandem {

enum class EventKind : uint8_t {
  kComputeDone,  // a: simulated device, b: instance, c: node
  kHopReady,     // a: transfer (the latency of its path's next stretch has passed)
  kLinkDue,      // a: link channel, b: the channel's version when scheduled
};

struct Event {
  double time = 0;
  EventKind kind = EventKind::kComputeDone;
  uint32_t a = 0, b = 0, c = 0;
  uint64_t sequence = 0;  // ties broken by insertion order: runs are deterministic
};

// The pending events, earliest first. Holds only what is in flight, never the run's history.
class EventQueue {
 public:
  void push(Event event) {
    event.sequence = next_sequence_++;
    heap_.push(event);
    if (heap_.size() > peak_) peak_ = heap_.size();
  }
  Event pop() {
    Event event = heap_.top();
    heap_.pop();
    return event;
  }
  bool empty() const { return heap_.empty(); }
  size_t peak_size() const { return peak_; }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time != y.time ? x.time > y.time : x.sequence > y.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_sequence_ = 0;
  size_t peak_ = 0;
};

}  // namespace tandem
