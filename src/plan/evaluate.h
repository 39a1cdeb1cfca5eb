#pragma once
#include <string>

#include "plan/plan.h"
#include "plan/problem.h"

namespace tandem {

// Fills a plan's segments, transfers, prediction, bound, efficiency from its placement
// (device_of_node) and order: list scheduling in plan.order, each device running one node at
// a time, a node starting when its inputs have arrived (transfers over the cost model's paths,
// a link carrying one transfer at a time), stages and micro-batches for pipeline plans, batch
// shares for data-parallel plans. Fast: linear in nodes + edges.
void evaluate_plan(const PlanningProblem& problem, Plan& plan);
// The same figures without what a search does not read: no figure_sources, and a data-parallel
// plan gets no segments (one per device with a share, each the whole order). evaluate_plan on
// the plan a search keeps fills them.
void evaluate_for_search(const PlanningProblem& problem, Plan& plan);

// The devices of `device`'s memory group (PlanningProblem::memory_group) the plan keeps
// computing at once in its steady state, itself included: those with a data-parallel share, or
// with a stage of a pipeline of several micro-batches; else itself (a list-scheduled plan's
// overlap is found node by node as the evaluator and the simulator schedule it).
PlanningProblem::Sharing steady_sharing(const PlanningProblem& problem, const Plan& plan,
                                        int device);

// Per node, whether it is the first of its segment in the order (`position`: each node's index
// in plan.order): where a segment's run, and a compiled device's program step, begins. The
// evaluator and the simulator charge PlanningProblem::segment_overhead there.
std::vector<char> segment_starts(const Plan& plan, const std::vector<int>& position);

// The plan's figure on the problem's objective, lower is better (the latency; 1 / throughput;
// the cost per million samples, +infinity past the latency limit, the latency where no device
// has a price); +infinity for a plan the objective refuses.
double objective_score(const PlanningProblem& problem, const Plan& plan);
// The objective's figure as a reason quotes it: "425 us", "812 samples/s", "$0.41 per M".
std::string objective_text(const PlanningProblem& problem, const Plan& plan);
// The margin a split must win by as a reason quotes it (PlanningProblem::split_margin): "10% a
// split must win by", saying why where calibrations' drift raised it above the options'.
std::string margin_text(const PlanOptions& options, double margin);

// Whether the plan fits every device's memory; when not, names the first device that is
// short and by how many bytes.
struct MemoryCheck {
  bool fits = true;
  int device = -1;
  double short_bytes = 0;
};
MemoryCheck check_memory(const PlanningProblem& problem, const Plan& plan);
// Bytes the plan needs on each device (what Prediction::memory_bytes holds once evaluated).
std::vector<double> memory_per_device(const PlanningProblem& problem, const Plan& plan);

// The lower bound for the problem's objective: for latency, the larger of the critical path
// with every node on its fastest device (transfers free) and the total work over the aggregate
// speed; for throughput, the divisible-load bound (every device busy all the time).
double lower_bound(const PlanningProblem& problem);
// The bound of every objective, whatever the problem's.
LowerBounds lower_bounds(const PlanningProblem& problem);

}  // namespace tandem
