#pragma once
#include <string>
#include <vector>

#include "devices/cluster.h"
#include "plan/piece_order.h"
#include "plan/problem.h"

namespace tandem {

// A run of nodes on one device that a backend compiles and runs as a unit: maximal and
// connected, in topological order.
struct Segment {
  int device = 0;
  std::vector<int> nodes;
};

struct Transfer {
  int value = -1;  // value id in the graph (-1 in synthetic problems)
  int from_node = -1, to_node = -1;
  int from_device = 0, to_device = 0;
  double bytes = 0;
  std::vector<Cluster::Hop> path;
  double seconds = 0;
};

// A pipeline stage: contiguous nodes of the topological order on one device.
struct Stage {
  int device = 0;
  int first_node = 0, last_node = 0;  // inclusive range of the topological order
  double seconds = 0;                 // per micro-batch
};

// The predicted figures of a plan (from the planner's schedule evaluator; later the simulator).
struct Prediction {
  double latency_seconds = 0;                // one batch, end to end
  double throughput_samples_per_second = 0;  // steady state
  double cost_per_million_samples = 0;       // USD; 0 when a device has no price
  std::vector<double> busy_seconds;          // per device, per batch
  std::vector<double> memory_bytes;          // per device: weights + peak live activations
  std::vector<double> link_bytes;            // per cluster link, per batch
};

struct Plan {
  // 2: records the model, cluster, dims, shapes and fusion it was made from, what auto chose,
  // and every figure with its unit in its key (docs/PLAN_FORMAT.md).
  static constexpr int kFormatVersion = 2;
  std::string strategy;  // "single:gpu0", "greedy", "heft", "pipeline", "data-parallel", "auto"
  // The strategy that made the placement and why it won ("heft", "lowest predicted latency of
  // ..."): auto's pick among its candidates; for the others, the strategy itself and "".
  std::string chosen;
  std::string reason;
  Objective objective = Objective::kLatency;
  std::vector<int> device_of_node;  // per top-level node
  std::vector<int> order;           // the schedule's order of nodes (a topological order)
  std::vector<Segment> segments;
  std::vector<Transfer> transfers;
  std::vector<Stage> stages;  // pipeline plans only
  int microbatches = 1;
  // A training step's pipeline: how each device orders its forward and backward work over the
  // micro-batches (the forward and backward nodes: PlanOptions::node_phase).
  PieceOrder piece_order = PieceOrder::kPieceByPiece;
  std::vector<double> batch_share;  // data-parallel plans only: fraction of the batch per device
  Prediction predicted;
  double lower_bound = 0;  // the objective's (PlanningProblem::bound): no plan can beat it
  double efficiency = 0;   // bound / predicted (latency), predicted / bound (throughput)
  double speedup_over_best_single = 0;
  std::vector<std::string> figure_sources;  // where the cost figures came from, per device
};

}  // namespace tandem
