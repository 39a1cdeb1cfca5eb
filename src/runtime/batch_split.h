#pragma once
#include <span>
#include <vector>

#include "ir/tensor.h"

namespace tandem {

// Splits a tensor along `axis` (its batch axis) into pieces of the given sizes: views of it
// where a piece is one 64-byte aligned block of a host tensor (axis 0, or only ones before it),
// else copies.
std::vector<Tensor> split_batch(const Tensor& tensor, std::span<const int64_t> sizes, int axis = 0);
// Concatenates pieces along `axis`; InputError when they differ on another axis (a model whose
// output does not follow its batch there).
Tensor concat_batch(std::span<const Tensor> pieces, int axis = 0);
// Copies `piece` into `whole` at `offset` along `axis` (the pieces' layout concat_batch makes);
// both in host memory, of one dtype and the same dims but along `axis`, the piece in range.
void copy_into_batch(const Tensor& piece, Tensor& whole, int axis, int64_t offset);
// The elementwise sum of float pieces of one shape (a split batch's gradients: the reduction an
// all-reduce would do, here on the host); InputError when they differ in type or shape.
Tensor sum_pieces(std::span<const Tensor> pieces);

}  // namespace tandem
