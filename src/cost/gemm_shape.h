#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace tandem {

// The matrix product an op performs: `batch` independent (m x k) by (k x n) products.
struct GemmShape {
  double batch = 1;
  int64_t m = 1, n = 1, k = 1;
  double flops() const {
    return 2.0 * batch * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// MatMul and Gemm as they are; Conv and ConvTranspose as implicit GEMMs, one per group.
// nullopt for every other op and for depthwise convolutions (one input channel per group),
// which cuDNN, oneDNN and XLA run as vector multiply-adds rather than on matrix units.
// Dynamic dims count as 1, as in the IR's FLOP counts.
std::optional<GemmShape> gemm_shape(const Node& node, const Graph& graph);

// A Conv with one input channel per group and more than one group.
bool is_depthwise_conv(const Node& node, const Graph& graph);

// Every dim of m, n and k rounded up to a multiple of `granule` (work on padded tiles).
GemmShape padded(const GemmShape& shape, int64_t granule);

}  // namespace tandem
