#pragma once
// Lowers a static-shape graph (a plan segment, or one node) to one StableHLO function.
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::pjrt {

// A graph as one StableHLO function, @main.
struct LoweredGraph {
  std::string module;  // MLIR text
  // The parameters of @main are the graph's inputs, in order, then `constants`: weights too
  // large to write into the text, which the device uploads once and keeps.
  size_t input_count = 0;
  std::vector<Tensor> constants;
};

// Constants with more elements than this become parameters instead of module text.
inline constexpr int64_t kMaxInlinedElements = 64;

// Throws InputError naming the first node that cannot be lowered and why.
LoweredGraph lower_graph(const Graph& graph);

// Why `node` of `graph` cannot be lowered ("no StableHLO lowering for NonZero", "dynamic shape
// of x"); empty when it can.
std::string lowering_refusal(const Node& node, const Graph& graph);

// Why a PJRT device cannot run `node` inside a compiled program: control flow, a shape that
// depends on data, no lowering, a refused attribute; a TPU (`tpu`) also has no float64.
// Prefixed "TPU: " or "PJRT: "; empty when it can.
std::string compiled_refusal(const Node& node, const Graph& graph, bool tpu);

// A matrix product the lowering makes of an op that is not one: [m, k] by [k, n], and the bytes
// of the operand it builds for it. EmbeddingBag's: its [bags, indices] membership matrix times
// the looked-up rows. nullopt for every other node.
struct LoweredMatrixProduct {
  int64_t m = 1, n = 1, k = 1;
  double built_bytes = 0;
};
std::optional<LoweredMatrixProduct> lowered_product(const Node& node, const Graph& graph);

// Every op type with a lowering rule, sorted.
std::vector<std::string> lowered_op_types();

}  // namespace tandem::pjrt
