// The StableHLO lowering, op by op, against the CPU backend on the xla-cpu-pjrt plugin.
#include "backends/pjrt/lower.h"

#include <set>

#include "pjrt_op_util.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

TEST(Lowering, AddBroadcasts) {
  expect_matches_cpu(
      {"Add", {random(DType::kFloat32, {2, 3, 4}, 1), random(DType::kFloat32, {3, 1}, 2)}});
}

TEST(Lowering, MatMulBatched) {
  expect_matches_cpu({"MatMul",
                      {random(DType::kFloat32, {2, 3, 5}, 1), random(DType::kFloat32, {5, 4}, 2)},
                      {},
                      {},
                      1,
                      1e-5,
                      1e-5});
}

TEST(Lowering, ReshapeWithConstantShape) {
  expect_matches_cpu({"Reshape",
                      {random(DType::kFloat32, {2, 6}, 1),
                       Tensor::from_vector<int64_t>(DType::kInt64, {2}, {3, -1})},
                      {},
                      {false, true}});
}

TEST(Lowering, MatMulWithFusedGelu) {
  expect_matches_cpu({"MatMul",
                      {random(DType::kFloat32, {3, 5}, 1), random(DType::kFloat32, {5, 4}, 2)},
                      {{"activation", std::string("Gelu")}},
                      {},
                      1,
                      1e-5,
                      1e-5});
}

TEST(Lowering, UnknownOpIsRefusedByName) {
  EXPECT_EQ(refusal({"NonZero", {random(DType::kFloat32, {4}, 1)}}),
            "no StableHLO lowering for NonZero");
}

}  // namespace
}  // namespace tandem::pjrt::testing
