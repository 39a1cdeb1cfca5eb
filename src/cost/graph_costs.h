#pragma once
#include <string>
#include <vector>

#include "cost/cost_model.h"

namespace tandem {

// Devices whose predicted time is the same for every op of a graph (eight H100s of one preset)
// share a column.
struct DeviceColumn {
  std::string label;                 // "gpu0", or "tpu0 (x4)" for a group
  std::vector<int> devices;          // device indices
  std::vector<std::string> ids;      // their ids
  std::vector<std::string> sources;  // distinct sources of its figures, in first-use order
};

struct OpTypeTimes {
  std::string op_type;
  int count = 0;
  std::vector<double> seconds;  // per column: all ops of this type, one after another
  int fastest = -1;             // column, -1 when no device runs them all
};

// What `tandem inspect MODEL --cluster FILE` adds: every op type's predicted time on each
// device, and the whole graph run on each device alone.
struct GraphDeviceCosts {
  std::vector<DeviceColumn> columns;
  std::vector<OpTypeTimes> rows;  // by descending time on the row's fastest column
  // Per column: every op plus one step overhead (a compiled device runs the graph as one
  // program); +infinity where some op cannot run.
  std::vector<double> total_seconds;
  int fastest = -1;  // column with the least total, -1 when none runs the graph
};

GraphDeviceCosts graph_device_costs(const Graph& graph, const CostModel& model);

}  // namespace tandem
