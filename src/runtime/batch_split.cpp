#include "runtime/batch_split.h"

#include <cstring>
#include <stdexcept>

namespace tandem {

std::vector<Tensor> split_batch(const Tensor& tensor, std::span<const int64_t> sizes) {
  const size_t row_bytes = tensor.dim(0) ? tensor.nbytes() / static_cast<size_t>(tensor.dim(0)) : 0;
  std::vector<Tensor> pieces;
  const auto* cursor = static_cast<const std::byte*>(tensor.raw());
  for (int64_t size : sizes) {
    Shape shape = tensor.shape();
    shape[0] = size;
    Tensor piece = Tensor::allocate(tensor.dtype(), shape);
    if (piece.nbytes()) std::memcpy(piece.raw(), cursor, piece.nbytes());
    cursor += row_bytes * static_cast<size_t>(size);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

Tensor concat_batch(std::span<const Tensor> pieces) {
  if (pieces.size() == 1) return pieces[0];
  Shape shape = pieces[0].shape();
  shape[0] = 0;
  for (const Tensor& piece : pieces) shape[0] += piece.dim(0);
  Tensor whole = Tensor::allocate(pieces[0].dtype(), shape);
  auto* cursor = static_cast<std::byte*>(whole.raw());
  for (const Tensor& piece : pieces) {
    if (piece.nbytes()) std::memcpy(cursor, piece.raw(), piece.nbytes());
    cursor += piece.nbytes();
  }
  return whole;
}

}  // namespace tandem
