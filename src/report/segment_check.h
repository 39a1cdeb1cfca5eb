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

// A plan run before the timed runs against another (`tandem run --cluster` tries auto's split of
// a machine's cores against the machine as one device): its median run, the plans taking turns;
// the faster is the plan that ran (`kept`).
struct TriedPlan {
  std::string plan;  // the strategy's choice
  bool whole_machine = false;
  double measured_seconds = 0, predicted_seconds = 0;
  bool kept = false;
};

// How far a device's speed reference may move from its calibrated time before a run says the
// machine's speed moved: the planner's default margin between two plans
// (PlanOptions::split_margin).
inline constexpr double kSpeedMovedFraction = 0.1;

// A device's calibration speed reference (CalibrationProfile::speed_reference) timed again after
// a run, beside its calibrated time: how fast the machine ran then and now.
struct SpeedCheck {
  std::string device;  // its id
  double calibrated_seconds = 0, now_seconds = 0;
  bool moved() const;  // |now - calibrated| > kSpeedMovedFraction x calibrated
  // "cpu0 ran its calibration's speed reference ... in 191 us, 2.00x its 95.7 us at
  // calibration: the machine runs slower than when calibrated, ..."
  std::string describe() const;
};

// Every segment of `plan` that ran in `measured` (spans "segment N", category "compute", on
// "<device> compute" tracks), in the plan's order of segments.
std::vector<SegmentCheck> check_segments(const Plan& plan, const PlanningProblem& problem,
                                         const Timeline& measured);

}  // namespace tandem
