#include "runtime/batch_split.h"

#include <cstring>

#include "ir/error.h"

namespace tandem {
namespace {

// A tensor seen as [outer, dim(axis), inner]: the bytes of one step along the axis.
struct AxisView {
  size_t outer = 1, step_bytes = 0;
};

AxisView view_along(const Tensor& tensor, int axis) {
  AxisView view;
  view.step_bytes = dtype_size(tensor.dtype());
  for (int64_t i = 0; i < tensor.rank(); ++i) {
    if (i < axis) view.outer *= static_cast<size_t>(tensor.dim(i));
    if (i > axis) view.step_bytes *= static_cast<size_t>(tensor.dim(i));
  }
  return view;
}

}  // namespace

std::vector<Tensor> split_batch(const Tensor& tensor, std::span<const int64_t> sizes, int axis) {
  const AxisView view = view_along(tensor, axis);
  const size_t whole_bytes = view.step_bytes * static_cast<size_t>(tensor.dim(axis));
  const auto* source = static_cast<const std::byte*>(tensor.raw());
  std::vector<Tensor> pieces;
  size_t offset = 0;  // bytes into each outer row
  for (int64_t size : sizes) {
    Shape shape = tensor.shape();
    shape[axis] = size;
    const size_t piece_bytes = view.step_bytes * static_cast<size_t>(size);
    // A piece that is one block of the host tensor, 64-byte aligned as fresh memory is, is a
    // view of it: no copy on the caller's thread before the devices start.
    if (view.outer == 1 && tensor.on_host() && offset % 64 == 0 &&
        reinterpret_cast<uintptr_t>(source) % 64 == 0) {
      pieces.push_back(tensor.view(offset, tensor.dtype(), shape));
      offset += piece_bytes;
      continue;
    }
    Tensor piece = Tensor::allocate(tensor.dtype(), shape);
    auto* target = static_cast<std::byte*>(piece.raw());
    for (size_t row = 0; row < view.outer && piece_bytes; ++row)
      std::memcpy(target + row * piece_bytes, source + row * whole_bytes + offset, piece_bytes);
    offset += piece_bytes;
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

Tensor concat_batch(std::span<const Tensor> pieces, int axis) {
  if (pieces.size() == 1) return pieces[0];
  Shape shape = pieces[0].shape();
  if (axis >= static_cast<int>(shape.size()))
    throw InputError("a piece of shape " + shape_str(shape) + " has no axis " +
                     std::to_string(axis));
  shape[axis] = 0;
  for (const Tensor& piece : pieces) {
    Shape others = piece.shape();
    if (others.size() == shape.size()) others[axis] = 0;
    if (others != shape || piece.dtype() != pieces[0].dtype())
      throw InputError("pieces of shapes " + shape_str(pieces[0].shape()) + " and " +
                       shape_str(piece.shape()) + " cannot be joined along axis " +
                       std::to_string(axis));
  }
  for (const Tensor& piece : pieces) shape[axis] += piece.dim(axis);
  Tensor whole = Tensor::allocate(pieces[0].dtype(), shape);
  int64_t offset = 0;
  for (const Tensor& piece : pieces) {
    copy_into_batch(piece, whole, axis, offset);
    offset += piece.dim(axis);
  }
  return whole;
}

void copy_into_batch(const Tensor& piece, Tensor& whole, int axis, int64_t offset) {
  const AxisView view = view_along(whole, axis);
  const size_t whole_bytes = view.step_bytes * static_cast<size_t>(whole.dim(axis));
  const size_t piece_bytes = view.step_bytes * static_cast<size_t>(piece.dim(axis));
  auto* target =
      static_cast<std::byte*>(whole.raw()) + view.step_bytes * static_cast<size_t>(offset);
  const auto* source = static_cast<const std::byte*>(piece.raw());
  for (size_t row = 0; row < view.outer && piece_bytes; ++row)
    std::memcpy(target + row * whole_bytes, source + row * piece_bytes, piece_bytes);
}

Tensor sum_pieces(std::span<const Tensor> pieces) {
  if (pieces.empty()) throw InputError("no pieces to add up");
  const Tensor& first = pieces.front();
  if (first.dtype() != DType::kFloat32 && first.dtype() != DType::kFloat64)
    throw InputError("pieces of " + std::string(dtype_name(first.dtype())) + " cannot be added up");
  Tensor sum = first.clone();
  for (size_t p = 1; p < pieces.size(); ++p) {
    const Tensor& piece = pieces[p];
    if (piece.dtype() != first.dtype() || piece.shape() != first.shape())
      throw InputError("piece " + std::to_string(p) + " is " + shape_str(piece.shape()) +
                       ", the first " + shape_str(first.shape()));
    if (first.dtype() == DType::kFloat32) {
      float* out = sum.data<float>();
      const float* in = piece.data<float>();
      for (int64_t i = 0; i < sum.numel(); ++i) out[i] += in[i];
    } else {
      double* out = sum.data<double>();
      const double* in = piece.data<double>();
      for (int64_t i = 0; i < sum.numel(); ++i) out[i] += in[i];
    }
  }
  return sum;
}

}  // namespace tandem
