#pragma once
#include <set>
#include <string>
#include <string_view>

#include "devices/cluster.h"
#include "ir/graph.h"

namespace tandem {

// Why `device` cannot run `node` of `graph`, in a few words for errors and `inspect`
// ("TPU: NonZero's output shape depends on data"); empty when it can. Devices say what they
// can run; the planner decides what they should run.
//   CPU, GPU on eager backends: every op with a schema (dynamic shapes too).
//   TPUs, and any device on the pjrt backend (compiled by XLA): ops the StableHLO lowering
//   covers, static shapes only, no control flow; TPUs also no fp64.
std::string cannot_run_reason(const DeviceSpec& device, const Node& node, const Graph& graph);

inline bool can_run(const DeviceSpec& device, const Node& node, const Graph& graph) {
  return cannot_run_reason(device, node, graph).empty();
}

// The PJRT backend's own check of one node (its lowering rules look at attributes and inputs),
// installed by programs that link the backend; without it the op list below is used.
using LoweringCheck = std::string (*)(const Node& node, const Graph& graph);
void set_lowering_check(LoweringCheck check);

// Whether the TPU lowering covers an op type at all (before shapes and dtypes are looked at).
bool tpu_lowers(std::string_view op_type);
// Every op type it covers.
const std::set<std::string, std::less<>>& tpu_op_types();

}  // namespace tandem
