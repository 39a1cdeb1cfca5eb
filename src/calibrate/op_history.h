#pragma once
#include <map>
#include <span>
#include <string>
#include <vector>

#include "backends/device.h"
#include "ir/graph.h"

namespace tandem::calibrate {

// Measured time of every op of real models, keyed by op_signature: what the cost model uses
// instead of the roofline for exactly those ops (history-based, as StarPU does).
class OpHistory {
 public:
  // Runs `graph` on `device` once to warm up, then `runs` times, timing each top-level node
  // with the executor's observer.
  void record(const Graph& graph, Device& device, std::span<const Tensor> inputs, int runs);
  // One measured call of an op with this signature, timed elsewhere (a cluster run's
  // timeline, for `tandem run --calibrate-from-run`).
  void add(const std::string& signature, double seconds) { samples_[signature].push_back(seconds); }
  // Median seconds per call of each signature seen, over every call in every model.
  std::map<std::string, double> median_seconds() const;
  size_t signatures() const { return samples_.size(); }

 private:
  std::map<std::string, std::vector<double>> samples_;
};

// Writes `measured` (op_signature -> seconds per call) into the profile at `path`, replacing
// the times it held for those signatures and keeping the rest; throws InputError naming the
// file when it cannot be read or written.
void fold_into_profile(const std::string& path, const std::map<std::string, double>& measured);

}  // namespace tandem::calibrate
