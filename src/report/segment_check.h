#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/problem.h"
#include "report/timeline.h"

namespace tandem {

// A segment whose measured time differs from its prediction by more than this fraction of the
// prediction is flagged (the run report's error: (measured - predicted) / predicted): the
// prediction the planner chose this plan by was wrong there.
inline constexpr double kSegmentOffFraction = 0.25;

// One segment of a plan that ran: its measured time per run beside the planner's.
struct SegmentCheck {
  int segment = 0;     // as the runtime names it ("segment 3"): plan.segments' index, or a
                       // data-parallel plan's replica
  std::string device;  // its device's id
  size_t nodes = 0;
  std::string first, last;       // its first and last node's names
  double measured_seconds = 0;   // median over the timed runs, its micro-batches summed
  double predicted_seconds = 0;  // the cost model's time for its nodes at the same shares
  bool off() const;              // |measured - predicted| > kSegmentOffFraction x predicted
};

// Every segment of `plan` that ran in `measured` (spans "segment N", category "compute", on
// "<device> compute" tracks), in the plan's order of segments.
std::vector<SegmentCheck> check_segments(const Plan& plan, const PlanningProblem& problem,
                                         const Timeline& measured);

}  // namespace tandem
