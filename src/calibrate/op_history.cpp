#include "calibrate/op_history.h"

#include "calibrate/microbench.h"
#include "devices/profile.h"
#include "runtime/executor.h"
#include "util/statistics.h"

namespace tandem::calibrate {

void OpHistory::record(const Graph& graph, Device& device, std::span<const Tensor> inputs,
                       int runs) {
  // Signatures are computed once: the observer runs inside the timed loop.
  std::map<const Node*, std::vector<double>*> slots;
  for (const Node& node : graph.nodes) slots[&node] = &samples_[op_signature(node, graph)];
  GraphExecutor executor(graph, device);
  executor.run(inputs);
  executor.set_observer([&](const Node& node, std::chrono::nanoseconds elapsed) {
    slots.at(&node)->push_back(std::chrono::duration<double>(elapsed).count());
  });
  for (int i = 0; i < runs; ++i) executor.run(inputs);
}

std::map<std::string, double> OpHistory::median_seconds() const {
  std::map<std::string, double> result;
  for (const auto& [signature, samples] : samples_) {
    if (!samples.empty()) result[signature] = median(samples);
  }
  return result;
}

void fold_into_profile(const std::string& path, const std::map<std::string, double>& measured) {
  CalibrationProfile profile = read_profile(path);
  for (const auto& [signature, seconds] : measured) profile.op_seconds[signature] = seconds;
  write_profile(path, profile);
}

}  // namespace tandem::calibrate
