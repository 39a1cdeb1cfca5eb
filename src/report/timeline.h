#pragma once
#include <string>
#include <vector>

namespace tandem {

// One trace format for what the simulator predicts and what the runtime measures: tracks (a
// device's compute queue, a copy engine, a link) and the spans that ran on them. Written as a
// Chrome trace-event file that Perfetto opens, and drawn by the HTML report.
struct TimelineSpan {
  int track = 0;
  std::string name;      // op or transfer, e.g. "MatMul_3", "x -> tpu0"
  std::string category;  // "compute", "transfer", "op" (inside a segment), "iteration"...
  double start_seconds = 0;
  double duration_seconds = 0;
  int microbatch = -1;  // -1 when not pipelined
  double bytes = 0;     // transfers
  int iteration = -1;   // measured: the run it belongs to (0 first); -1 for a prediction
};

struct TimelineTrack {
  std::string name;   // "gpu0 compute", "gpu0 copy", "pcie gpu0<->node0"
  std::string group;  // the device or link it belongs to (one process in the trace)
};

// Memory in use on one device over time (a step function).
struct MemorySample {
  int device = 0;
  double time_seconds = 0;
  double bytes = 0;
};

struct Timeline {
  std::string source;  // "predicted (simulator, preset figures)" or "measured on <machine>"
  std::vector<TimelineTrack> tracks;
  std::vector<TimelineSpan> spans;
  std::vector<std::string> devices;  // device ids, for memory samples
  std::vector<MemorySample> memory;

  int add_track(std::string name, std::string group);
  double end_seconds() const;
};

// Chrome trace-event JSON (the "traceEvents" array format): one process per group, one thread
// per track, complete events ("ph": "X") in microseconds, memory as counter events.
std::string chrome_trace_json(const Timeline& timeline);
void write_chrome_trace(const std::string& path, const Timeline& timeline);

}  // namespace tandem
