// Auto: every baseline strategy that applies, plus the chain placement, judged by the
// evaluator on the objective; the best is refined by local search (moving single nodes across
// segment boundaries, merging whole segments into a neighbour's device, and on small graphs
// every node to every device; or shifting stage boundaries of a pipeline, or samples of a
// data-parallel split, on large clusters also one from every device of a class at once), each
// move kept only when the evaluator says it is better and memory
// still fits. Since every single device is a candidate
// and moves only improve, the result is never worse than the best single device that holds
// the model.
#include <algorithm>
#include <cmath>
#include <set>

#include "plan/chain_placement.h"
#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

// Local search budget, in evaluations of a plan: enough to sweep small graphs many times, a
// few hundred node+edge visits' worth (about 3e7) on large ones.
constexpr double kSearchWork = 3e7;
constexpr int kMostEvaluations = 4000, kLeastEvaluations = 16;

class LocalSearch {
 public:
  LocalSearch(const PlanningProblem& problem, Plan plan)
      : problem_(problem), best_(std::move(plan)), best_score_(objective_score(problem, best_)) {
    // What the search never reads, and every candidate would copy (a data-parallel plan's
    // segments are the whole order once per device): run() evaluates the plan kept in full.
    best_.figure_sources.clear();
    if (!best_.batch_share.empty()) best_.segments.clear();
    double edges = 0;
    for (int n = 0; n < problem.node_count(); ++n) edges += problem.successors(n).size();
    budget_ = std::clamp(static_cast<int>(kSearchWork / (problem.node_count() + edges + 1)),
                         kLeastEvaluations, kMostEvaluations);
  }

  Plan run() {
    bool improved = true;
    while (improved && budget_ > 0) {
      if (!best_.batch_share.empty()) {
        const bool large = problem_.device_count() > kEverySingleDeviceUpTo;
        improved = (large && move_class_samples()) | move_samples();
      } else if (!best_.stages.empty()) {
        improved = shift_stage_boundaries();
      } else {
        improved = move_nodes() | merge_segments() | move_every_node();
      }
    }
    // Candidates were evaluated for the search only (no figure sources, no data-parallel
    // segments): the plan kept gets every field.
    evaluate_plan(problem_, best_);
    return std::move(best_);
  }

 private:
  // Evaluates a variant; keeps it when it fits and scores better.
  bool try_plan(Plan candidate) {
    if (budget_ <= 0) return false;
    --budget_;
    evaluate_for_search(problem_, candidate);
    const double candidate_score = objective_score(problem_, candidate);
    if (candidate_score >= best_score_ * (1 - 1e-9)) return false;
    if (!check_memory(problem_, candidate).fits) return false;
    best_ = std::move(candidate);
    best_score_ = candidate_score;
    return true;
  }

  bool try_device(const std::vector<int>& nodes, int device) {
    for (int n : nodes) {
      if (!problem_.runnable(n, device)) return false;
    }
    Plan candidate = best_;
    for (int n : nodes) candidate.device_of_node[n] = device;
    return try_plan(std::move(candidate));
  }

  // Where consecutive nodes of the order sit on different devices, each may join the other's.
  bool move_nodes() {
    bool improved = false;
    for (size_t i = 0; i + 1 < best_.order.size() && budget_ > 0; ++i) {
      const int a = best_.order[i], b = best_.order[i + 1];
      const int device_a = best_.device_of_node[a], device_b = best_.device_of_node[b];
      if (device_a == device_b) continue;
      if (try_device({a}, device_b) || try_device({b}, device_a)) improved = true;
    }
    return improved;
  }

  // Small graphs: every node to every other device that can run it, while one sweep fits the
  // budget.
  bool move_every_node() {
    const int nodes = problem_.node_count(), devices = problem_.device_count();
    if (static_cast<double>(nodes) * (devices - 1) > budget_) return false;
    bool improved = false;
    for (int n = 0; n < nodes; ++n) {
      for (int d = 0; d < devices; ++d) {
        if (d != best_.device_of_node[n] && try_device({n}, d)) improved = true;
      }
    }
    return improved;
  }

  // A whole segment onto the device of a segment it exchanges data with.
  bool merge_segments() {
    bool improved = false;
    const std::vector<Segment> segments = best_.segments;
    for (const Segment& segment : segments) {
      if (budget_ <= 0) break;
      std::vector<int> neighbours;
      for (int n : segment.nodes) {
        for (const auto& [other, bytes] : problem_.successors(n)) {
          const int device = best_.device_of_node[other];
          if (device != segment.device &&
              std::find(neighbours.begin(), neighbours.end(), device) == neighbours.end()) {
            neighbours.push_back(device);
          }
        }
      }
      for (int device : neighbours) {
        if (try_device(segment.nodes, device)) {
          improved = true;
          break;
        }
      }
    }
    return improved;
  }

  // Each boundary between two stages moves by 1, 2, 4... nodes either way.
  bool shift_stage_boundaries() {
    bool improved = false;
    for (size_t s = 0; s + 1 < best_.stages.size() && budget_ > 0; ++s) {
      for (int step = 1; budget_ > 0; step *= 2) {
        bool tried = false;
        for (int direction : {-1, 1}) {
          Plan candidate = best_;
          Stage& left = candidate.stages[s];
          Stage& right = candidate.stages[s + 1];
          const int boundary = left.last_node + direction * step;
          if (boundary < left.first_node || boundary >= right.last_node) continue;
          tried = true;
          left.last_node = boundary;
          right.first_node = boundary + 1;
          if (!stage_runnable(left) || !stage_runnable(right)) continue;
          if (try_plan(std::move(candidate))) improved = true;
        }
        if (!tried) break;
      }
    }
    return improved;
  }

  bool stage_runnable(const Stage& stage) const {
    for (int i = stage.first_node; i <= stage.last_node; ++i) {
      if (!problem_.runnable(best_.order[i], stage.device)) return false;
    }
    return true;
  }

  // One sample of the batch from one device to another. Not between two devices of one class
  // with the same share: the receiver would be the slower and the plan no better.
  bool move_samples() {
    const double sample = 1.0 / static_cast<double>(std::max<int64_t>(problem_.options().batch, 1));
    bool improved = false;
    const int devices = static_cast<int>(best_.batch_share.size());
    for (int from = 0; from < devices && budget_ > 0; ++from) {
      for (int to = 0; to < devices && budget_ > 0; ++to) {
        if (from == to || best_.batch_share[from] < 2 * sample - 1e-12 ||
            best_.batch_share[to] <= 0) {
          continue;
        }
        if (problem_.device_class(from) == problem_.device_class(to) &&
            best_.batch_share[from] == best_.batch_share[to])
          continue;
        Plan candidate = best_;
        candidate.batch_share[from] -= sample;
        candidate.batch_share[to] += sample;
        if (try_plan(std::move(candidate))) improved = true;
      }
    }
    return improved;
  }

  // Large clusters (more than kEverySingleDeviceUpTo devices): one sample from every device of
  // a class (PlanningProblem::device_class) at that class's largest share, to the devices of
  // another class with the fewest, one each in turn (devices without a share yet among them,
  // when they run the whole model). Among many alike devices no move of one sample shortens
  // the plan: every one of them is the slowest.
  bool move_class_samples() {
    const int devices = static_cast<int>(best_.batch_share.size());
    const double batch = static_cast<double>(std::max<int64_t>(problem_.options().batch, 1));
    std::vector<int64_t> samples(devices);
    for (int d = 0; d < devices; ++d) samples[d] = std::llround(best_.batch_share[d] * batch);
    const auto eligible = [&](int d) {
      return problem_.allowed(d) && problem_.single_device_seconds(d) < kInfinity;
    };
    std::vector<int> classes;
    for (int d = 0; d < devices; ++d) {
      if (eligible(d) && problem_.device_class(d) == d) classes.push_back(d);
    }
    bool improved = false;
    for (int from : classes) {
      for (int to : classes) {
        if (from == to || budget_ <= 0) continue;
        int64_t most = 0;
        for (int d = 0; d < devices; ++d) {
          if (problem_.device_class(d) == from) most = std::max(most, samples[d]);
        }
        if (most < 2) continue;
        std::vector<int> donors, receivers;
        for (int d = 0; d < devices; ++d) {
          if (problem_.device_class(d) == from && samples[d] == most) donors.push_back(d);
          if (problem_.device_class(d) == to) receivers.push_back(d);
        }
        std::stable_sort(receivers.begin(), receivers.end(),
                         [&](int a, int b) { return samples[a] < samples[b]; });
        std::vector<int64_t> next = samples;
        for (size_t i = 0; i < donors.size(); ++i) {
          --next[donors[i]];
          ++next[receivers[i % receivers.size()]];
        }
        Plan candidate = best_;
        int first = -1;
        for (int d = 0; d < devices; ++d) {
          candidate.batch_share[d] = static_cast<double>(next[d]) / batch;
          if (first < 0 && next[d] > 0) first = d;
        }
        candidate.device_of_node.assign(problem_.node_count(), first);
        if (try_plan(std::move(candidate))) {
          improved = true;
          samples = std::move(next);
        }
      }
    }
    return improved;
  }

  const PlanningProblem& problem_;
  Plan best_;
  double best_score_;
  int budget_ = 0;
};

std::optional<Plan> chain_plan(const PlanningProblem& problem) {
  Plan plan;
  plan.device_of_node = chain_placement(problem);
  if (plan.device_of_node.empty()) return std::nullopt;
  plan.strategy = "chain";
  evaluate_plan(problem, plan);
  if (!check_memory(problem, plan).fits) return std::nullopt;
  return plan;
}

// How many devices the plan runs on (a data-parallel plan's by its shares).
size_t devices_used(const Plan& plan) {
  std::set<int> used(plan.device_of_node.begin(), plan.device_of_node.end());
  for (size_t d = 0; d < plan.batch_share.size(); ++d)
    if (plan.batch_share[d] > 0) used.insert(static_cast<int>(d));
  return used.size();
}

class AutoStrategy : public Strategy {
 public:
  std::string name() const override { return "auto"; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    std::vector<Plan> candidates;
    for (const auto& strategy : baseline_strategies(problem)) {
      if (std::optional<Plan> candidate = strategy->plan(problem)) candidates.push_back(*candidate);
    }
    if (std::optional<Plan> chain = chain_plan(problem)) candidates.push_back(*chain);
    // Plans the objective refuses (slower than --max-latency) are no candidates.
    std::erase_if(candidates,
                  [&](const Plan& plan) { return objective_score(problem, plan) == kInfinity; });
    if (candidates.empty()) return std::nullopt;
    // Best first; ties keep the baselines' order.
    std::stable_sort(candidates.begin(), candidates.end(), [&](const Plan& a, const Plan& b) {
      return objective_score(problem, a) < objective_score(problem, b);
    });
    const Plan& best = candidates.front();
    const double best_score = objective_score(problem, best);
    const bool by_latency = problem.options().objective == Objective::kCost &&
                            best.predicted.cost_per_million_samples <= 0;
    const std::string figure = by_latency
                                   ? std::string("latency (no prices)")
                                   : std::string(objective_name(problem.options().objective));
    std::string reason = candidates.size() == 1
                             ? "the only feasible candidate (" + best.strategy + " " +
                                   objective_text(problem, best) + ")"
                             : "best predicted " + figure + " of " +
                                   std::to_string(candidates.size()) + " feasible candidates (" +
                                   best.strategy + " " + objective_text(problem, best) + "; next " +
                                   candidates[1].strategy + " " +
                                   objective_text(problem, candidates[1]) + ")";
    std::string chosen = best.strategy;
    Plan refined = LocalSearch(problem, best).run();
    if (objective_score(problem, refined) < best_score)
      reason += "; local search improved it to " + objective_text(problem, refined);
    // A split is taken only where it beats the best one-device plan by more than the margin.
    const auto single = std::find_if(candidates.begin(), candidates.end(),
                                     [](const Plan& plan) { return devices_used(plan) == 1; });
    const double margin = single == candidates.end() ? problem.options().split_margin
                                                     : std::max(problem.split_margin(refined),
                                                                problem.split_margin(*single));
    if (devices_used(refined) > 1 && single != candidates.end() &&
        objective_score(problem, refined) * (1 + margin) >= objective_score(problem, *single)) {
      Plan kept = *single;
      kept.strategy = "auto";
      kept.chosen = single->strategy;
      kept.reason = "best predicted " + figure + " on one device (" + single->strategy + " " +
                    objective_text(problem, *single) + "): the best split (" + chosen + " " +
                    objective_text(problem, refined) + ") wins by less than the " +
                    margin_text(problem.options(), margin);
      return kept;
    }
    refined.strategy = "auto";
    refined.chosen = std::move(chosen);
    refined.reason = std::move(reason);
    return refined;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_auto_strategy() { return std::make_unique<AutoStrategy>(); }

}  // namespace tandem
