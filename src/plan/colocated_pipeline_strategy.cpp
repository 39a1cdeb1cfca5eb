// A pipeline in which some nodes follow another node's device: a training step's backward nodes
// beside the forward node they differentiate (its activations and weights are there). The
// leaders (nodes that follow none) are split into stages as the pipeline strategy splits a
// graph, each leader costed with the nodes that follow it and each edge between leaders twice
// (the activation goes forward, its gradient comes back).
#include <numeric>

#include "plan/evaluate.h"
#include "plan/strategies.h"

namespace tandem {
namespace {

class ColocatedPipelineStrategy : public Strategy {
 public:
  explicit ColocatedPipelineStrategy(std::vector<int> follows) : follows_(std::move(follows)) {}
  std::string name() const override { return "pipeline"; }

  std::optional<Plan> plan(const PlanningProblem& problem) const override {
    const int nodes = problem.node_count(), devices = problem.device_count();
    if (static_cast<int>(follows_.size()) != nodes) return std::nullopt;
    // The leader of each node, and each leader's index among the leaders.
    std::vector<int> leader(nodes), index(nodes, -1);
    int leaders = 0;
    for (int n = 0; n < nodes; ++n) {
      int root = n;
      for (int hops = 0; follows_[root] >= 0 && hops < nodes; ++hops) root = follows_[root];
      if (follows_[root] >= 0) return std::nullopt;  // a cycle of follows
      leader[n] = root;
      if (root == n) index[n] = leaders++;
    }
    std::vector<std::vector<double>> seconds(leaders, std::vector<double>(devices, 0));
    std::vector<std::vector<std::pair<int, double>>> successors(leaders);
    std::vector<double> weights(leaders, 0), outputs(leaders, 0);
    for (int n = 0; n < nodes; ++n) {
      const int group = index[leader[n]];
      for (int d = 0; d < devices; ++d) seconds[group][d] += problem.seconds(n, d);
      weights[group] += problem.weight_bytes(n);
      outputs[group] += problem.output_bytes(n);
      if (leader[n] != n) continue;
      for (const auto& [successor, bytes] : problem.successors(n))
        if (leader[successor] == successor)
          successors[group].push_back({index[successor], 2 * bytes});
    }
    const PlanningProblem grouped(problem.cluster(), problem.cost(), std::move(seconds),
                                  std::move(successors), std::move(weights), std::move(outputs),
                                  problem.options());
    const std::optional<Plan> staged = make_pipeline_strategy()->plan(grouped);
    if (!staged) return std::nullopt;
    Plan plan;
    plan.strategy = "pipeline";
    plan.microbatches = staged->microbatches;
    plan.device_of_node.resize(nodes);
    for (int n = 0; n < nodes; ++n)
      plan.device_of_node[n] = staged->device_of_node[index[leader[n]]];
    plan.order.resize(nodes);
    std::iota(plan.order.begin(), plan.order.end(), 0);
    if (!check_memory(problem, plan).fits) return std::nullopt;
    evaluate_plan(problem, plan);
    // The schedule evaluator runs the whole batch through once; a pipeline of micro-batches is
    // timed as the grouped one: its stages cost forward and backward together.
    plan.predicted.latency_seconds = staged->predicted.latency_seconds;
    plan.predicted.throughput_samples_per_second = staged->predicted.throughput_samples_per_second;
    plan.reason = "stages of leaders costed with their followers";
    return plan;
  }

 private:
  std::vector<int> follows_;
};

}  // namespace

std::unique_ptr<Strategy> make_colocated_pipeline_strategy(std::vector<int> follows) {
  return std::make_unique<ColocatedPipelineStrategy>(std::move(follows));
}

}  // namespace tandem
