#pragma once
// Runs one op on the PJRT CPU plugin and on the CPU backend and compares the outputs.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backends/pjrt/pjrt_device.h"
#include "ir/graph.h"

namespace tandem::pjrt::testing {

// Seeded test data as `tandem run` makes it (floats in [-1, 1), integers in [0, 4)).
Tensor random(DType dtype, Shape shape, uint64_t seed);
// Floats uniform in [-scale, scale).
Tensor random_scaled(Shape shape, float scale, uint64_t seed);

// The process's device on the xla-cpu-pjrt plugin (memory-only cache).
PjrtDevice& cpu_plugin_device();

struct OpCase {
  std::string op_type;
  std::vector<Tensor> inputs;  // undefined = omitted input
  std::map<std::string, Attribute, std::less<>> attributes = {};
  std::vector<bool> constant = {};  // per input: a constant of the graph (shape arguments)
  int num_outputs = 1;
  double rtol = 1e-5, atol = 1e-6;
};

// A graph of the one node, its shapes inferred, its inputs graph inputs unless `constant`.
Graph one_node_graph(const OpCase& op);

// Lowers the node (the lowering must accept it), runs it on the plugin and on the CPU backend,
// and expects the same dtypes, shapes and values (exact for integers and bools).
void expect_matches_cpu(const OpCase& op);

// As expect_matches_cpu, but the outputs must be the same bytes (NaN payloads aside): for data
// movement and casts, where a difference must not hide in a tolerance, and for int64 values
// beyond what doubles hold.
void expect_identical_to_cpu(const OpCase& op);

// The inputs a one-node graph takes at run time: the defined ones that are not constants.
std::vector<Tensor> fed_inputs(const OpCase& op);

// Why the lowering refuses the node (empty when it takes it).
std::string refusal(const OpCase& op);

}  // namespace tandem::pjrt::testing
