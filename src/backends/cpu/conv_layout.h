#pragma once
// Channels-last between convolutions. oneDNN's convolutions compute in NHWC (or a blocked
// layout); with NCHW tensors between ops, every one of them reorders its input in and its
// output out (ResNet-18 at 224: 49 reorders a run). Where a convolution's output is read only
// by convolutions that compute channels-last too, this CPU keeps that tensor NHWC: the graph it
// compiles says so in attributes of its own on the nodes, and nowhere else does the layout
// change (a tensor another op, another device or the caller reads stays NCHW).
#include <optional>

#include "ir/graph.h"

namespace tandem::cpu {

inline constexpr const char* kSrcLayoutAttribute = "cpu_src_layout";
inline constexpr const char* kDstLayoutAttribute = "cpu_dst_layout";
inline constexpr const char* kResidualLayoutAttribute = "cpu_residual_layout";
inline constexpr const char* kChannelsLast = "nhwc";

// Whether this CPU's Conv kernel runs `node` (a 2-D Conv of static input `x` and weights `w`)
// with oneDNN, which computes channels-last (or blocked) given an NHWC side: not the NCHW loop
// of depthwise convolutions.
bool conv_computes_channels_last(const Node& node, const Shape& x, const Shape& w);

// `graph` with every Conv -> Conv tensor marked channels-last on both sides, or nullopt when
// there is none. Node order, values and outputs are unchanged.
std::optional<Graph> with_channels_last_conv_chains(const Graph& graph);

}  // namespace tandem::cpu
