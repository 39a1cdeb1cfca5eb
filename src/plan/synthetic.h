#pragma once
#include <cstdint>
#include <memory>
#include <string_view>

#include "cost/cost_model.h"
#include "plan/problem.h"

namespace tandem {

// Synthetic planning problems for tests and benchmarks: DAGs of any size on clusters of any
// size, deterministic for a seed. Node times are not invented: every node is a copy of one of
// a few prototype ops of a transformer layer (1024 tokens, hidden 1024, bf16: the four
// projections, the FFN matmuls, attention scores, softmax, layer norm, residual add, GELU-like
// tanh, and NonZero, which a TPU cannot run), each costed once per device by the real cost
// model; its weights and output bytes are the prototype's.
enum class DagShape {
  kChain,        // node i feeds node i+1
  kLayered,      // layers of 8 nodes, each reading 1-3 nodes of the layer before
  kTransformer,  // repeated transformer blocks: parallel Q/K/V, attention, FFN, residuals
  kRandom,       // each node reads 1-3 of the 64 nodes before it
};
std::string_view dag_shape_name(DagShape shape);  // "chain", "layered", "transformer", "random"

struct SyntheticSpec {
  DagShape shape = DagShape::kLayered;
  int nodes = 1000;
  int devices = 4;
  uint64_t seed = 1;
  PlanOptions options;
};

// A cluster of `devices` devices from the published presets, in hosts of 8 joined by a
// 200 Gb/s network; each host holds, in this order, an H100, a TPU v5e, an A100, a CPU core,
// an H100, a TPU v6e, an L4 and a TPU v5e (a smaller cluster takes the first ones).
Cluster synthetic_cluster(int devices);

// The problem keeps a reference to its cost model: both live here, at fixed addresses.
struct SyntheticProblem {
  std::unique_ptr<const CostModel> cost;
  std::unique_ptr<const PlanningProblem> problem;
};
SyntheticProblem make_synthetic_problem(const SyntheticSpec& spec);

}  // namespace tandem
