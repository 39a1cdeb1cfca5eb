#pragma once
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

// How a device orders its work over the micro-batches of a training step's pipeline, whose work
// is forward or backward: GPipe runs every micro-batch forward, then every one backward; 1F1B,
// after a warm-up of as many forwards as there are stages after the device's, one backward for
// each forward (fewer micro-batches' activations held at once). kPieceByPiece is every other
// plan's: a micro-batch's work, then the next's.
enum class PieceOrder { kPieceByPiece, kGPipe, kOneForwardOneBackward };

// "" (piece by piece), "gpipe", "1f1b"; nullopt for any other.
std::optional<PieceOrder> piece_order_named(std::string_view name);
std::string_view piece_order_name(PieceOrder order);

// One device's units of work (segments or nodes, in graph order), each forward or backward per
// `backward`, over `pieces` micro-batches: the (piece, unit) pairs in the order the device runs
// them. `later_stages`: how many devices begin their forward pass after this one's.
std::vector<std::pair<int, int>> order_pieces(PieceOrder order, const std::vector<bool>& backward,
                                              int pieces, int later_stages);

}  // namespace tandem
