#include "plan/piece_order.h"

#include <algorithm>

namespace tandem {

std::optional<PieceOrder> piece_order_named(std::string_view name) {
  if (name.empty()) return PieceOrder::kPieceByPiece;
  if (name == "gpipe") return PieceOrder::kGPipe;
  if (name == "1f1b") return PieceOrder::kOneForwardOneBackward;
  return std::nullopt;
}

std::string_view piece_order_name(PieceOrder order) {
  switch (order) {
    case PieceOrder::kGPipe: return "gpipe";
    case PieceOrder::kOneForwardOneBackward: return "1f1b";
    default: return "";
  }
}

std::vector<std::pair<int, int>> order_pieces(PieceOrder order, const std::vector<bool>& backward,
                                              int pieces, int later_stages) {
  std::vector<int> forward_units, backward_units;
  for (size_t u = 0; u < backward.size(); ++u)
    (backward[u] ? backward_units : forward_units).push_back(static_cast<int>(u));
  std::vector<std::pair<int, int>> jobs;
  const auto add = [&](const std::vector<int>& units, int piece) {
    for (int unit : units) jobs.push_back({piece, unit});
  };
  if (order == PieceOrder::kPieceByPiece) {
    for (int p = 0; p < pieces; ++p)
      for (size_t u = 0; u < backward.size(); ++u) jobs.push_back({p, static_cast<int>(u)});
    return jobs;
  }
  if (order == PieceOrder::kGPipe) {
    for (int p = 0; p < pieces; ++p) add(forward_units, p);
    for (int p = 0; p < pieces; ++p) add(backward_units, p);
    return jobs;
  }
  const int warmup = forward_units.empty() ? 0 : std::min(later_stages, pieces);
  for (int p = 0; p < warmup; ++p) add(forward_units, p);
  for (int p = 0; p < pieces; ++p) {
    if (p + warmup < pieces) add(forward_units, p + warmup);
    add(backward_units, p);
  }
  return jobs;
}

}  // namespace tandem
