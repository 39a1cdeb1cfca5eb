#pragma once
// Channels-last between convolutions. oneDNN's convolutions compute in NHWC (or a blocked
// layout); with NCHW tensors between ops, every one of them reorders its input in and its
// output out (ResNet-18 at 224: 46 activation reorders a run). Where a convolution's output is
// read only by convolutions, this CPU keeps that tensor NHWC: the graph it compiles says so in
// attributes of its own on the nodes, and nowhere else does the layout change (a tensor another
// op, another device or the caller reads stays NCHW). Every 2-D Conv takes part: given an NHWC
// side the kernel runs it on oneDNN, depthwise ones too, whose own NCHW loop is faster only
// while it saves the reorders (chains through oneDNN's depthwise kernel against chains broken
// at the loop: mobilenet_v3_small at 224 in 0.64x the time, ssdlite320 in 0.82x; medians of
// alternating runs on an AMD EPYC). Poolings oneDNN runs (MaxPool, AveragePool) take part as
// well, so that ResNet's stem MaxPool does not end the chain with two reorders.
#include <optional>

#include "backends/device.h"
#include "ir/graph.h"

namespace tandem::cpu {

inline constexpr const char* kSrcLayoutAttribute = "cpu_src_layout";
inline constexpr const char* kDstLayoutAttribute = "cpu_dst_layout";
inline constexpr const char* kResidualLayoutAttribute = "cpu_residual_layout";
inline constexpr const char* kChannelsLast = "nhwc";

// `graph` with every tensor between layout-aware nodes (Conv, and the poolings oneDNN runs)
// marked channels-last on both sides, or nullopt when there is none. Node order, values and outputs
// are unchanged.
std::optional<Graph> with_channels_last_conv_chains(const Graph& graph);

// The same rule, per node of `graph` in order: whether its source and its output are kept
// channels-last, and whether a convolution's kernel reorders an NCHW side into the layout
// oneDNN computes in (the planner's cost model asks, through the backend registry).
std::vector<ActivationLayout> activation_layouts(const Graph& graph);

// Whether a convolution between NCHW tensors runs faster on plain NCHW than with the reorders to
// and from oneDNN's blocked layout. Measured with oneDNN 2.6 on 2 threads, N=2 (AVX-512 and AVX2
// code paths): blocked wins by 1.3-4x for spatial kernels (3x3 at 16->32 and 64->64 channels) and
// by 4-10x for depthwise; for 1x1 kernels the blocked kernel is faster but the two reorders cost as
// much, and plain (a GEMM) wins once channels and the image are large (64->64 at 32x32:
// 132 us plain, 155 us blocked; 256->64 at 56x56: 1030 vs 1350 us).
inline bool prefer_plain_layout(int64_t in_channels, int64_t group, int64_t kernel_taps,
                                int64_t output_pixels) {
  return group == 1 && kernel_taps == 1 && in_channels >= 64 && output_pixels >= 28 * 28;
}

}  // namespace tandem::cpu
