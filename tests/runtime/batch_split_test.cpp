// Cutting a batch into pieces and joining them again: pieces of one aligned block are views of
// the tensor (no copy before a split run starts), others copies; joins undo cuts on any axis.
#include "runtime/batch_split.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tandem {
namespace {

Tensor counting(Shape shape) {
  Tensor tensor = Tensor::allocate(DType::kFloat32, std::move(shape));
  std::iota(tensor.data<float>(), tensor.data<float>() + tensor.numel(), 0.0f);
  return tensor;
}

TEST(BatchPieces, PiecesOfAlignedBlocksAreViewsAndTheRestCopies) {
  // 16 floats a sample: each piece along axis 0 starts on a 64-byte boundary.
  const Tensor whole = counting({3, 4, 4});
  const std::vector<int64_t> sizes = {2, 1};
  const std::vector<Tensor> rows = split_batch(whole, sizes, 0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].raw(), whole.raw());
  EXPECT_EQ(rows[1].raw(), static_cast<const std::byte*>(whole.raw()) + 2 * 64);
  EXPECT_EQ(rows[1].shape(), (Shape{1, 4, 4}));
  EXPECT_EQ(rows[1].data<float>()[0], 32.0f);

  // 3 floats a sample: the second piece would start 24 bytes in, so it is copied.
  const Tensor narrow = counting({3, 3});
  const std::vector<Tensor> unaligned = split_batch(narrow, sizes, 0);
  EXPECT_EQ(unaligned[0].raw(), narrow.raw());
  EXPECT_NE(unaligned[1].raw(), static_cast<const std::byte*>(narrow.raw()) + 24);
  EXPECT_EQ(unaligned[1].data<float>()[2], 8.0f);

  // Along axis 1 each piece is rows apart in the whole: copies, element by element right.
  const std::vector<Tensor> columns = split_batch(whole, {{1, 3}}, 1);
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[1].shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(columns[1].data<float>()[0], 4.0f);
  EXPECT_EQ(columns[1].data<float>()[12], 20.0f);  // sample 1, its row 1 of the whole
}

TEST(BatchPieces, JoiningPiecesUndoesTheCutOnAnyAxis) {
  const Tensor whole = counting({2, 5, 3});
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const std::vector<int64_t> sizes =
        axis == 1 ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{1, whole.dim(axis) - 1};
    const std::vector<Tensor> pieces = split_batch(whole, sizes, axis);
    const Tensor joined = concat_batch(pieces, axis);
    ASSERT_EQ(joined.shape(), whole.shape());
    EXPECT_EQ(joined.to_doubles(), whole.to_doubles());
    // And copied piece by piece into a whole of its own, as a split run's workers do.
    Tensor copied = Tensor::zeros(DType::kFloat32, whole.shape());
    int64_t offset = 0;
    for (const Tensor& piece : pieces) {
      copy_into_batch(piece, copied, axis, offset);
      offset += piece.dim(axis);
    }
    EXPECT_EQ(copied.to_doubles(), whole.to_doubles());
  }
}

}  // namespace
}  // namespace tandem
