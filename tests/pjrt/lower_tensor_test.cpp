// The StableHLO lowering of data movement and constant-making ops, against the CPU backend on
// the xla-cpu-pjrt plugin.
#include <cstring>
#include <limits>
#include <random>

#include "backends/cpu/cpu_device.h"
#include "pjrt_op_util.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Distinct int64 values, some beyond 2^53, so a misplaced or rounded element shows.
Tensor counting(Shape shape) {
  std::vector<int64_t> values(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<int64_t>(i) * ((int64_t{1} << 40) + 1) - 7;
  }
  return Tensor::from_vector(DType::kInt64, std::move(shape), values);
}

Tensor ints(Shape shape, std::vector<int64_t> values) {
  return Tensor::from_vector(DType::kInt64, std::move(shape), values);
}

Tensor int32s(Shape shape, std::vector<int32_t> values) {
  return Tensor::from_vector(DType::kInt32, std::move(shape), values);
}

// Shape inference folds Shape, Size, Constant and small ConstantOfShape nodes away, so they
// reach a device only as a kernel of a graph that could not fold them (the outputs are not
// constant there). Compiles the node that way on the plugin and on the CPU, with the types
// inference gave the outputs, and expects the same bytes.
void expect_unfolded_matches_cpu(const OpCase& op) {
  const Graph typed = one_node_graph(op);
  Node node;
  node.name = "test_" + op.op_type;
  node.op_type = op.op_type;
  node.attributes = op.attributes;
  std::vector<TensorType> input_types, output_types;
  std::vector<const Tensor*> constants;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Tensor& input = op.inputs[i];
    node.inputs.push_back(input.defined() ? static_cast<int>(i) : -1);
    input_types.push_back({input.dtype(), input.shape()});
    constants.push_back(i < op.constant.size() && op.constant[i] ? &input : nullptr);
    inputs.push_back(input);
  }
  for (int id : typed.outputs) {
    node.outputs.push_back(static_cast<int>(output_types.size()));
    output_types.push_back(typed.values[static_cast<size_t>(id)].type);
  }
  const KernelSpec spec{node, typed.opset, input_types, output_types, constants};
  cpu::CpuDevice cpu;
  std::vector<Tensor> expected, actual;
  for (const TensorType& type : output_types) {
    expected.push_back(Tensor::allocate(type.dtype, type.shape));
    actual.push_back(Tensor::allocate(type.dtype, type.shape));
  }
  cpu.compile(spec)->run(inputs, expected);
  cpu_plugin_device().compile(spec)->run(inputs, actual);
  for (size_t o = 0; o < expected.size(); ++o) {
    EXPECT_EQ(std::memcmp(actual[o].raw(), expected[o].raw(), expected[o].nbytes()), 0)
        << op.op_type << " output " << o << " differs";
  }
}

TEST(LowerTensor, ReshapeInt64) {
  expect_identical_to_cpu({"Reshape", {counting({2, 6}), ints({2}, {3, -1})}, {}, {false, true}});
}

TEST(LowerTensor, FlattenAtAxis) {
  expect_identical_to_cpu(
      {"Flatten", {random(DType::kFloat32, {2, 3, 4, 5}, 1)}, {{"axis", int64_t{2}}}});
}

TEST(LowerTensor, SqueezeAndUnsqueeze) {
  expect_identical_to_cpu(
      {"Squeeze", {random(DType::kFloat32, {2, 1, 3}, 1), ints({1}, {1})}, {}, {false, true}});
  expect_identical_to_cpu({"Unsqueeze", {counting({2, 3}), ints({2}, {0, -1})}, {}, {false, true}});
}

TEST(LowerTensor, TransposeDefaultReversesDims) {
  expect_identical_to_cpu({"Transpose", {random(DType::kFloat32, {2, 3, 4}, 1)}});
}

TEST(LowerTensor, TransposeWithPerm) {
  expect_identical_to_cpu(
      {"Transpose", {counting({2, 3, 4, 5})}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}});
  expect_identical_to_cpu(
      {"Transpose", {random(DType::kBool, {3, 4}, 2)}, {{"perm", std::vector<int64_t>{1, 0}}}});
}

TEST(LowerTensor, ConcatThreeInputsNegativeAxis) {
  expect_identical_to_cpu(
      {"Concat",
       {random(DType::kFloat32, {2, 3, 4}, 1), random(DType::kFloat32, {2, 5, 4}, 2),
        random(DType::kFloat32, {2, 1, 4}, 3)},
       {{"axis", int64_t{-2}}}});
}

TEST(LowerTensor, ConcatInt64AndBool) {
  expect_identical_to_cpu({"Concat", {counting({2, 3}), counting({1, 3})}, {{"axis", int64_t{0}}}});
  expect_identical_to_cpu({"Concat",
                           {random(DType::kBool, {2, 3}, 1), random(DType::kBool, {2, 2}, 2)},
                           {{"axis", int64_t{1}}}});
}

TEST(LowerTensor, SplitWithConstantSizes) {
  expect_identical_to_cpu({"Split",
                           {random(DType::kFloat32, {2, 10}, 1), ints({3}, {3, 3, 4})},
                           {{"axis", int64_t{1}}},
                           {false, true},
                           3});
}

TEST(LowerTensor, SplitNumOutputsUnevenLastChunk) {
  expect_identical_to_cpu({"Split", {counting({7, 3})}, {{"num_outputs", int64_t{3}}}, {}, 3});
}

TEST(LowerTensor, SplitEvenlyAlongNegativeAxis) {
  expect_identical_to_cpu(
      {"Split", {random(DType::kFloat32, {4, 6}, 1)}, {{"axis", int64_t{-1}}}, {}, 2});
}

TEST(LowerTensor, SliceLastDimWithStep2) {
  expect_identical_to_cpu({"Slice",
                           {random(DType::kFloat32, {2, 3, 10}, 1), ints({1}, {1}),
                            ints({1}, {kInt64Max}), ints({1}, {-1}), ints({1}, {2})},
                           {},
                           {false, true, true, true, true}});
}

TEST(LowerTensor, SliceNegativeSteps) {
  expect_identical_to_cpu({"Slice",
                           {counting({5, 6}), ints({2}, {4, -2}), ints({2}, {-100, 1}),
                            ints({2}, {0, 1}), ints({2}, {-2, -1})},
                           {},
                           {false, true, true, true, true}});
  // Reversing a whole axis: start INT64_MAX, end INT64_MIN.
  expect_identical_to_cpu({"Slice",
                           {random(DType::kFloat32, {3, 4}, 1), ints({1}, {kInt64Max}),
                            ints({1}, {kInt64Min}), ints({1}, {1}), ints({1}, {-1})},
                           {},
                           {false, true, true, true, true}});
}

TEST(LowerTensor, SliceHugeNegativeStepTakesOneElement) {
  expect_identical_to_cpu({"Slice",
                           {counting({4, 3}), ints({1}, {-1}), ints({1}, {kInt64Min}),
                            ints({1}, {0}), ints({1}, {kInt64Min})},
                           {},
                           {false, true, true, true, true}});
}

TEST(LowerTensor, SliceClampsOutOfRangeBoundsWithDefaultAxes) {
  expect_identical_to_cpu(
      {"Slice",
       {random(DType::kFloat32, {4, 5, 2}, 1), int32s({2}, {-100, 2}), int32s({2}, {100, 1000})},
       {},
       {false, true, true}});
}

TEST(LowerTensor, SliceToNothing) {
  expect_identical_to_cpu({"Slice",
                           {counting({4, 3}), ints({1}, {3}), ints({1}, {1}), ints({1}, {0})},
                           {},
                           {false, true, true, true}});
}

TEST(LowerTensor, GatherEmbeddingRows) {
  expect_identical_to_cpu({"Gather",
                           {random(DType::kFloat32, {100, 16}, 1),
                            ints({2, 5}, {0, 99, 5, -1, -100, 42, 7, 7, 63, 1})}});
}

TEST(LowerTensor, GatherMiddleAxisWithInt32Indices) {
  expect_identical_to_cpu(
      {"Gather", {counting({3, 5, 4}), int32s({2, 2}, {4, -5, 0, -2})}, {{"axis", int64_t{1}}}});
}

TEST(LowerTensor, GatherScalarIndexOnLastAxis) {
  expect_identical_to_cpu(
      {"Gather", {random(DType::kFloat32, {4, 6}, 1), ints({}, {-2})}, {{"axis", int64_t{-1}}}});
}

TEST(LowerTensor, GatherConstantIndicesFromBool) {
  expect_identical_to_cpu(
      {"Gather", {random(DType::kBool, {5, 2}, 1), ints({3}, {4, -4, 2})}, {}, {false, true}});
}

// ---- EmbeddingBag (Tandem's, from a Loop of per-bag lookups) ----

// Bags as Slice reads its bounds: one of two rows, one empty (start past end), one counted from
// the end, one reaching past the end (clamped), two overlapping; a negative index.
TEST(LowerTensor, EmbeddingBagSumsAndAveragesSlicedBags) {
  for (const char* mode : {"sum", "mean"}) {
    SCOPED_TRACE(mode);
    expect_matches_cpu({"EmbeddingBag",
                        {random(DType::kFloat32, {12, 5}, 1), ints({8}, {0, 11, 3, -1, 4, 4, 9, 2}),
                         ints({6}, {0, 3, 5, -3, 6, 1}), int32s({6}, {2, 2, 5, 8, 40, 4})},
                        {{"mode", std::string(mode)}, {"bags", int64_t{6}}},
                        {},
                        1,
                        1e-5,
                        1e-6});
  }
}

TEST(LowerTensor, EmbeddingBagRefusesBagsWithoutBoundsAndHugeMemberships) {
  EXPECT_EQ(refusal({"EmbeddingBag",
                     {random(DType::kFloat32, {4, 2}, 1), ints({3}, {0, 1, 2}), ints({2}, {0, 1}),
                      ints({2}, {1, 3})},
                     {{"mode", std::string("sum")}, {"bags", int64_t{3}}}}),
            "EmbeddingBag has fewer bounds than its 3 bags");
  const Tensor bounds = Tensor::zeros(DType::kInt64, {70000});
  EXPECT_EQ(refusal({"EmbeddingBag",
                     {random(DType::kFloat32, {4, 2}, 1), Tensor::zeros(DType::kInt64, {1000}),
                      bounds, bounds},
                     {{"mode", std::string("sum")}, {"bags", int64_t{70000}}}}),
            "EmbeddingBag of 70000 bags over 1000 indices (a membership matrix over 67108864 "
            "elements)");
}

// ---- GatherElements, ScatterElements, ScatterND ----

// Indices in [-dim, dim), negatives included, repeats likely.
Tensor indices_in(Shape shape, int64_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> values(static_cast<size_t>(numel(shape)));
  for (int64_t& v : values) v = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * dim)) - dim;
  return ints(std::move(shape), values);
}

Tensor floats(Shape shape, uint64_t seed) {
  return random(DType::kFloat32, std::move(shape), seed);
}

using Attributes = std::map<std::string, Attribute, std::less<>>;

Attributes scatter_attributes(int64_t axis, const char* reduction) {
  return {{"axis", axis}, {"reduction", std::string(reduction)}};
}

TEST(LowerTensor, GatherElementsRank1WithRepeatsAndNegatives) {
  expect_identical_to_cpu(
      {"GatherElements", {counting({7}), ints({9}, {0, 6, -1, -7, 3, 3, 3, -4, 2})}});
}

TEST(LowerTensor, GatherElementsEveryAxisOfAMatrix) {
  // More indices than the data has along the axis, and fewer than it has along the other.
  for (int64_t axis : {0, -2}) {
    SCOPED_TRACE(axis);
    expect_identical_to_cpu(
        {"GatherElements", {counting({4, 5}), indices_in({6, 5}, 4, 1)}, {{"axis", axis}}});
    expect_identical_to_cpu(
        {"GatherElements", {counting({4, 5}), indices_in({2, 3}, 4, 2)}, {{"axis", axis}}});
  }
  for (int64_t axis : {1, -1}) {
    SCOPED_TRACE(axis);
    expect_identical_to_cpu(
        {"GatherElements", {counting({4, 5}), indices_in({4, 7}, 5, 3)}, {{"axis", axis}}});
    expect_identical_to_cpu(
        {"GatherElements", {counting({4, 5}), indices_in({3, 2}, 5, 4)}, {{"axis", axis}}});
  }
}

TEST(LowerTensor, GatherElementsRank3Int32IndicesAndBools) {
  std::vector<int32_t> values;
  for (int64_t v : indices_in({2, 4, 3}, 5, 3).to_int64s())
    values.push_back(static_cast<int32_t>(v));
  expect_identical_to_cpu({"GatherElements",
                           {floats({2, 5, 3}, 1), int32s({2, 4, 3}, values)},
                           {{"axis", int64_t{1}}}});
  expect_identical_to_cpu({"GatherElements",
                           {random(DType::kBool, {3, 2, 4}, 2), indices_in({3, 2, 6}, 4, 4)},
                           {{"axis", int64_t{2}}}});
}

TEST(LowerTensor, ScatterElementsWithoutReductionLaterUpdatesWin) {
  // Index 2 is written three times (the last update, 5, must win), -1 is 5.
  expect_identical_to_cpu(
      {"ScatterElements", {counting({6}), ints({6}, {2, -1, 2, 0, 5, 2}), counting({6})}});
  expect_identical_to_cpu(
      {"ScatterElements", {floats({4, 5}, 1), indices_in({6, 3}, 4, 2), floats({6, 3}, 3)}});
  expect_identical_to_cpu({"ScatterElements",
                           {floats({4, 5}, 1), indices_in({3, 7}, 5, 4), floats({3, 7}, 5)},
                           {{"axis", int64_t{1}}}});
  expect_identical_to_cpu({"ScatterElements",
                           {random(DType::kBool, {2, 3, 4}, 1), indices_in({2, 3, 5}, 4, 3),
                            random(DType::kBool, {2, 3, 5}, 2)},
                           {{"axis", int64_t{-1}}}});
}

TEST(LowerTensor, ScatterElementsAddRank1AsMaxPoolsGradient) {
  // The flat form the MaxPool gradient uses: zeros, indices into them with many repeats.
  expect_matches_cpu(
      {"ScatterElements",
       {Tensor::zeros(DType::kFloat32, {20}), indices_in({64}, 20, 5), floats({64}, 6)},
       scatter_attributes(0, "add")});
  expect_identical_to_cpu({"ScatterElements",
                           {counting({20}), indices_in({64}, 20, 7), counting({64})},
                           scatter_attributes(0, "add")});
}

TEST(LowerTensor, ScatterElementsAddEveryAxis) {
  for (int64_t axis : {0, 1, 2}) {
    SCOPED_TRACE(axis);
    const int64_t dim = Shape{3, 4, 5}[static_cast<size_t>(axis)];
    expect_matches_cpu(
        {"ScatterElements",
         {floats({3, 4, 5}, 1), indices_in({3, 4, 5}, dim, 8 + axis), floats({3, 4, 5}, 2)},
         scatter_attributes(axis, "add")});
    expect_identical_to_cpu(
        {"ScatterElements",
         {counting({3, 4, 5}), indices_in({2, 3, 4}, dim, 11 + axis), counting({2, 3, 4})},
         scatter_attributes(axis - 3, "add")});
  }
}

TEST(LowerTensor, ScatterElementsOtherReductions) {
  for (const char* reduction : {"mul", "max", "min"}) {
    SCOPED_TRACE(reduction);
    expect_identical_to_cpu({"ScatterElements",
                             {random(DType::kInt32, {4, 5}, 1), indices_in({4, 8}, 5, 2),
                              random(DType::kInt32, {4, 8}, 3)},
                             scatter_attributes(1, reduction)});
    expect_matches_cpu({"ScatterElements",
                        {floats({6, 3}, 1), indices_in({9, 3}, 6, 4), floats({9, 3}, 5)},
                        scatter_attributes(0, reduction)});
  }
  // Bools: add is or, mul and.
  for (const char* reduction : {"add", "mul"}) {
    SCOPED_TRACE(reduction);
    expect_identical_to_cpu(
        {"ScatterElements",
         {random(DType::kBool, {8}, 1), indices_in({12}, 8, 2), random(DType::kBool, {12}, 3)},
         scatter_attributes(0, reduction)});
  }
}

TEST(LowerTensor, ScatterElementsRefusesIndicesWiderThanTheData) {
  EXPECT_EQ(refusal({"ScatterElements",
                     {floats({4, 3}, 1), indices_in({2, 5}, 4, 2), floats({2, 5}, 3)}}),
            "ScatterElements indices larger than the data on axis 1");
}

TEST(LowerTensor, ScatterNDAddRowsAsGathersGradient) {
  // Gather's gradient: rows of zeros [V, D], one index tuple per gathered row, many repeated.
  expect_matches_cpu({"ScatterND",
                      {Tensor::zeros(DType::kFloat32, {10, 4}), indices_in({2, 8, 1}, 10, 1),
                       floats({2, 8, 4}, 2)},
                      {{"reduction", std::string("add")}}});
  expect_identical_to_cpu({"ScatterND",
                           {counting({10, 4}), indices_in({12, 1}, 10, 3), counting({12, 4})},
                           {{"reduction", std::string("add")}}});
}

TEST(LowerTensor, ScatterNDDeeperTuples) {
  // Tuples of 2 into [4, 5, 3] update rows of 3; tuples of 3 single elements.
  std::vector<int64_t> pairs = indices_in({2, 3, 2}, 4, 4).to_int64s();
  for (size_t i = 1; i < pairs.size(); i += 2) pairs[i] = (pairs[i] + 5) % 5 - (i % 4 == 1 ? 5 : 0);
  expect_matches_cpu({"ScatterND",
                      {floats({4, 5, 3}, 1), ints({2, 3, 2}, pairs), floats({2, 3, 3}, 2)},
                      {{"reduction", std::string("add")}}});
  expect_identical_to_cpu(
      {"ScatterND",
       {counting({2, 3, 2}), ints({4, 3}, {1, 2, 0, -1, -1, -1, 0, 0, 1, 1, 2, 0}), counting({4})},
       {{"reduction", std::string("add")}}});
}

TEST(LowerTensor, ScatterNDWithoutReductionLaterUpdatesWin) {
  // Row 3 (also -7) is written three times; the last write wins.
  expect_identical_to_cpu(
      {"ScatterND", {counting({10, 2}), ints({5, 1}, {3, 0, -7, 9, 3}), counting({5, 2})}});
  expect_identical_to_cpu(
      {"ScatterND",
       {random(DType::kFloat32, {3, 4}, 1), ints({6, 2}, {0, 1, 2, 3, 0, 1, -1, -1, 1, 0, 0, -3}),
        random(DType::kFloat32, {6}, 2)}});
}

TEST(LowerTensor, ScatterNDOtherReductions) {
  for (const char* reduction : {"mul", "max", "min"}) {
    SCOPED_TRACE(reduction);
    expect_identical_to_cpu({"ScatterND",
                             {random(DType::kInt64, {5, 3}, 1), indices_in({7, 1}, 5, 2),
                              random(DType::kInt64, {7, 3}, 3)},
                             {{"reduction", std::string(reduction)}}});
  }
}

TEST(LowerTensor, ExpandBroadcastsBothWays) {
  expect_identical_to_cpu(
      {"Expand", {random(DType::kFloat32, {3, 1}, 1), ints({3}, {2, 3, 4})}, {}, {false, true}});
  // The shape may be smaller than the input, and 1 where the input is larger.
  expect_identical_to_cpu({"Expand", {counting({2, 1, 4}), ints({2}, {3, 1})}, {}, {false, true}});
}

TEST(LowerTensor, TileRepeats) {
  expect_identical_to_cpu(
      {"Tile", {random(DType::kFloat32, {2, 3}, 1), ints({2}, {2, 3})}, {}, {false, true}});
  expect_identical_to_cpu({"Tile", {counting({2, 1, 3}), ints({3}, {1, 4, 2})}, {}, {false, true}});
  expect_identical_to_cpu(
      {"Tile", {random(DType::kBool, {2, 2}, 1), ints({2}, {3, 1})}, {}, {false, true}});
}

TEST(LowerTensor, PadConstantWithValueInput) {
  expect_identical_to_cpu({"Pad",
                           {random(DType::kFloat32, {2, 3, 4}, 1), ints({6}, {0, 1, 2, 0, 2, 1}),
                            Tensor::from_vector(DType::kFloat32, {}, std::vector<float>{1.5f})},
                           {},
                           {false, true, false}});
}

TEST(LowerTensor, PadConstantDefaultsToZeroAndCropsNegativePads) {
  expect_identical_to_cpu(
      {"Pad", {counting({4, 5}), ints({4}, {-1, 2, 1, -2})}, {}, {false, true}});
}

TEST(LowerTensor, PadOnlyTheGivenAxes) {
  expect_identical_to_cpu(
      {"Pad",
       {random(DType::kFloat32, {2, 3}, 1), ints({2}, {1, 2}), Tensor(), ints({1}, {-1})},
       {},
       {false, true, false, true}});
}

TEST(LowerTensor, PadReflect) {
  expect_identical_to_cpu({"Pad",
                           {random(DType::kFloat32, {3, 5}, 1), ints({4}, {2, 3, 2, 4})},
                           {{"mode", std::string("reflect")}},
                           {false, true}});
}

TEST(LowerTensor, PadEdgeWithCrop) {
  expect_identical_to_cpu({"Pad",
                           {counting({2, 3, 4}), ints({6}, {1, 0, 2, 0, 3, 1})},
                           {{"mode", std::string("edge")}},
                           {false, true}});
  expect_identical_to_cpu({"Pad",
                           {random(DType::kFloat32, {4, 5}, 1), ints({4}, {-1, 2, 1, -2})},
                           {{"mode", std::string("edge")}},
                           {false, true}});
}

TEST(LowerTensor, PadWrap) {
  expect_identical_to_cpu({"Pad",
                           {counting({3, 4}), ints({4}, {1, 2, 3, 4})},
                           {{"mode", std::string("wrap")}},
                           {false, true}});
}

TEST(LowerTensor, PadRefusesPeriodicBorders) {
  EXPECT_EQ(refusal({"Pad",
                     {random(DType::kFloat32, {2, 3}, 1), ints({4}, {0, 4, 0, 0})},
                     {{"mode", std::string("wrap")}},
                     {false, true}}),
            "wrap pads larger than the dim");
  // Cropping 3 of 6 leaves 3 elements: reflecting 3 more would repeat the border.
  EXPECT_EQ(refusal({"Pad",
                     {random(DType::kFloat32, {4, 6}, 1), ints({4}, {0, -3, 0, 3})},
                     {{"mode", std::string("reflect")}},
                     {false, true}}),
            "reflect pads as large as the (cropped) dim");
}

TEST(LowerTensor, ShapeWithStartAndEnd) {
  expect_unfolded_matches_cpu({"Shape", {random(DType::kFloat32, {2, 3, 4, 5}, 1)}});
  expect_unfolded_matches_cpu(
      {"Shape", {counting({2, 3, 4, 5})}, {{"start", int64_t{1}}, {"end", int64_t{-1}}}});
  expect_unfolded_matches_cpu(
      {"Shape", {counting({2, 3})}, {{"start", int64_t{-10}}, {"end", int64_t{1}}}});
}

TEST(LowerTensor, Size) {
  expect_unfolded_matches_cpu({"Size", {random(DType::kBool, {2, 3, 4}, 1)}});
}

TEST(LowerTensor, ConstantFromEachAttribute) {
  expect_unfolded_matches_cpu({"Constant", {}, {{"value", counting({2, 3})}}});
  expect_unfolded_matches_cpu({"Constant", {}, {{"value", random(DType::kBool, {5}, 1)}}});
  expect_unfolded_matches_cpu({"Constant", {}, {{"value_float", 2.5f}}});
  expect_unfolded_matches_cpu(
      {"Constant", {}, {{"value_floats", std::vector<float>{1, -2, 3.5f}}}});
  expect_unfolded_matches_cpu({"Constant", {}, {{"value_int", int64_t{-3}}}});
  expect_unfolded_matches_cpu(
      {"Constant", {}, {{"value_ints", std::vector<int64_t>{kInt64Max, 0, -1}}}});
}

TEST(LowerTensor, ConstantOfShape) {
  // Too large to fold: such a node stays in the graph.
  expect_identical_to_cpu({"ConstantOfShape", {ints({2}, {2, 1024})}, {}, {true}});
  expect_identical_to_cpu({"ConstantOfShape",
                           {ints({3}, {2, 1, 1024})},
                           {{"value", ints({1}, {(int64_t{1} << 40) + 3})}},
                           {true}});
  expect_unfolded_matches_cpu(
      {"ConstantOfShape",
       {ints({1}, {3})},
       {{"value", Tensor::from_vector(DType::kBool, {1}, std::vector<uint8_t>{1})}},
       {true}});
}

}  // namespace
}  // namespace tandem::pjrt::testing
