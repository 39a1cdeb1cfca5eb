// Tests of the tensor family: shape, layout, indexing and data-dependent ops — schemas (shapes,
// folding, errors) and CPU kernels.
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "backends/cpu/cpu_device.h"
#include "ir/error.h"
#include "ir/ops/tensor_layout.h"
#include "op_test_util.h"

namespace tandem::testing {
namespace {

using Attributes = std::map<std::string, Attribute, std::less<>>;

Tensor i32(Shape shape, std::vector<int32_t> values) {
  return Tensor::from_vector(DType::kInt32, std::move(shape), values);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, Attributes attributes = {},
            int opset = 21) {
  return run_op(op, inputs, std::move(attributes), 1, opset).outputs[0];
}

ValueInfo info(DType dtype, Shape shape, const Tensor* value = nullptr) {
  return ValueInfo{dtype, std::move(shape), value};
}
ValueInfo known(const Tensor& value) { return ValueInfo{value.dtype(), value.shape(), &value}; }

InferredOutput infer1(const std::string& op, const std::vector<ValueInfo>& inputs,
                      Attributes attributes = {}, int opset = 21) {
  return infer_op(op, inputs, std::move(attributes), 1, opset)[0];
}

// Runs the CPU kernel alone on pre-allocated outputs, skipping shape inference: for checks that
// only the kernel can make (index values that shape inference never saw).
void run_kernel(const std::string& op, const std::vector<Tensor>& inputs,
                std::vector<Tensor> outputs, Attributes attributes = {}) {
  Node node;
  node.name = "kernel_" + op;
  node.op_type = op;
  node.attributes = std::move(attributes);
  std::vector<TensorType> input_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(static_cast<int>(i));
    input_types.push_back({inputs[i].dtype(), inputs[i].shape()});
  }
  std::vector<TensorType> output_types;
  for (size_t i = 0; i < outputs.size(); ++i) {
    node.outputs.push_back(static_cast<int>(inputs.size() + i));
    output_types.push_back({outputs[i].dtype(), outputs[i].shape()});
  }
  std::vector<const Tensor*> constants(inputs.size(), nullptr);
  cpu::CpuDevice device;
  auto kernel = device.compile(KernelSpec{node, 21, input_types, output_types, constants});
  kernel->run(inputs, outputs);
}

Tensor iota_f32(Shape shape) {
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(shape));
  std::iota(t.data<float>(), t.data<float>() + t.numel(), 0.0f);
  return t;
}

// ---- Views ----

TEST(Tensor, ReshapeInfersMinusOne) {
  const OpResult result = run_op("Reshape", {iota_f32({2, 3}), i64({2}, {3, -1})});
  expect_equal(result.outputs[0], f32({3, 2}, {0, 1, 2, 3, 4, 5}));
  expect_equal(result.inferred[0].value, f32({3, 2}, {0, 1, 2, 3, 4, 5}));
}

TEST(Tensor, ReshapeZeroCopiesDimUnlessAllowzero) {
  const Tensor shape = i64({3}, {0, 2, -1});
  EXPECT_EQ(infer1("Reshape", {info(DType::kFloat32, {4, 6}), known(shape)}).shape,
            (Shape{4, 2, 3}));
  const Tensor zeros = i64({2}, {0, 3});
  EXPECT_EQ(
      infer1("Reshape", {info(DType::kFloat32, {0, 3}), known(zeros)}, {{"allowzero", int64_t{1}}})
          .shape,
      (Shape{0, 3}));
  const Tensor both = i64({2}, {0, -1});
  EXPECT_THROW(
      infer1("Reshape", {info(DType::kFloat32, {0, 3}), known(both)}, {{"allowzero", int64_t{1}}}),
      InputError);
}

TEST(Tensor, ReshapeUnknownShapeGivesDynamicDims) {
  EXPECT_EQ(infer1("Reshape", {info(DType::kFloat32, {2, 3}), info(DType::kInt64, {3})}).shape,
            (Shape{kDynamicDim, kDynamicDim, kDynamicDim}));
  const Tensor shape = i64({2}, {-1, 64});
  EXPECT_EQ(infer1("Reshape", {info(DType::kFloat32, {kDynamicDim, 8, 8}), known(shape)}).shape,
            (Shape{kDynamicDim, 64}));
  const Tensor copy = i64({3}, {0, 0, 4});
  EXPECT_EQ(infer1("Reshape", {info(DType::kFloat32, {kDynamicDim, 3, 4}), known(copy)}).shape,
            (Shape{kDynamicDim, 3, 4}));
}

TEST(Tensor, ReshapeRejectsBadShapes) {
  const Tensor two_inferred = i64({2}, {-1, -1});
  EXPECT_THROW(infer1("Reshape", {info(DType::kFloat32, {4}), known(two_inferred)}), InputError);
  const Tensor wrong_size = i64({2}, {3, 3});
  EXPECT_THROW(infer1("Reshape", {info(DType::kFloat32, {2, 4}), known(wrong_size)}), InputError);
  const Tensor not_divisible = i64({2}, {3, -1});
  EXPECT_THROW(infer1("Reshape", {info(DType::kFloat32, {2, 4}), known(not_divisible)}),
               InputError);
  EXPECT_THROW(infer1("Reshape", {info(DType::kFloat32, {2, 4}), info(DType::kFloat32, {2})}),
               InputError);
}

TEST(Tensor, FlattenAxes) {
  EXPECT_EQ(infer1("Flatten", {info(DType::kFloat32, {2, 3, 4})}).shape, (Shape{2, 12}));
  EXPECT_EQ(infer1("Flatten", {info(DType::kFloat32, {2, 3, 4})}, {{"axis", int64_t{0}}}).shape,
            (Shape{1, 24}));
  EXPECT_EQ(infer1("Flatten", {info(DType::kFloat32, {2, 3, 4})}, {{"axis", int64_t{-1}}}).shape,
            (Shape{6, 4}));
  EXPECT_EQ(infer1("Flatten", {info(DType::kFloat32, {kDynamicDim, 3, 4})}).shape,
            (Shape{kDynamicDim, 12}));
  EXPECT_THROW(infer1("Flatten", {info(DType::kFloat32, {2, 3})}, {{"axis", int64_t{3}}}),
               InputError);
  expect_equal(run1("Flatten", {iota_f32({2, 1, 2})}), f32({2, 2}, {0, 1, 2, 3}));
}

TEST(Tensor, SqueezeWithAndWithoutAxes) {
  expect_equal(run1("Squeeze", {iota_f32({1, 3, 1}), i64({1}, {-1})}), f32({1, 3}, {0, 1, 2}));
  EXPECT_EQ(infer1("Squeeze", {info(DType::kFloat32, {1, 3, 1, kDynamicDim})}).shape,
            (Shape{3, kDynamicDim}));
  const Tensor axes = i64({1}, {1});
  EXPECT_THROW(infer1("Squeeze", {info(DType::kFloat32, {1, 3}), known(axes)}), InputError);
  EXPECT_EQ(infer1("Squeeze", {info(DType::kFloat32, {1, 3, 1}), info(DType::kInt64, {2})}).shape,
            (Shape{kDynamicDim}));
}

TEST(Tensor, UnsqueezeNegativeAxes) {
  const Tensor axes = i64({2}, {0, -1});
  EXPECT_EQ(infer1("Unsqueeze", {info(DType::kFloat32, {3, 4}), known(axes)}).shape,
            (Shape{1, 3, 4, 1}));
  const Tensor scalar = i64({}, {7});
  const OpResult result = run_op("Unsqueeze", {scalar, i64({1}, {0})});
  expect_equal(result.inferred[0].value, i64({1}, {7}));
  const Tensor repeated = i64({2}, {1, 1});
  EXPECT_THROW(infer1("Unsqueeze", {info(DType::kFloat32, {3}), known(repeated)}), InputError);
  EXPECT_EQ(infer1("Unsqueeze", {info(DType::kFloat32, {3}), info(DType::kInt64, {2})}).shape,
            (Shape{kDynamicDim, kDynamicDim, kDynamicDim}));
}

TEST(Tensor, IdentityFoldsKnownValue) {
  const Tensor value = i64({2}, {5, 6});
  expect_equal(infer1("Identity", {known(value)}).value, value);
  EXPECT_FALSE(infer1("Identity", {info(DType::kInt64, {2})}).value.defined());
}

// ---- Shape, Size, constants, Range, EyeLike ----

TEST(Tensor, ShapeFoldsFromStaticTypeAlone) {
  const InferredOutput out = infer1("Shape", {info(DType::kFloat32, {2, 3, 5})});
  expect_equal(out.value, i64({3}, {2, 3, 5}));
  const InferredOutput sliced =
      infer1("Shape", {info(DType::kFloat32, {kDynamicDim, 3, 5})}, {{"start", int64_t{-2}}});
  expect_equal(sliced.value, i64({2}, {3, 5}));
  const InferredOutput dynamic = infer1("Shape", {info(DType::kFloat32, {kDynamicDim, 3})});
  EXPECT_EQ(dynamic.shape, (Shape{2}));
  EXPECT_FALSE(dynamic.value.defined());
  // start/end arrived in opset 15.
  EXPECT_EQ(infer1("Shape", {info(DType::kFloat32, {2, 3})}, {{"start", int64_t{1}}}, 14).shape,
            (Shape{2}));
}

TEST(Tensor, ShapeKernelWithStartEnd) {
  expect_equal(run1("Shape", {iota_f32({2, 3, 4})}, {{"start", int64_t{1}}, {"end", int64_t{-1}}}),
               i64({1}, {3}));
  expect_equal(run1("Size", {iota_f32({2, 3, 4})}), i64({}, {24}));
  expect_equal(infer1("Size", {info(DType::kFloat32, {4, 5})}).value, i64({}, {20}));
}

TEST(Tensor, ConstantOfShapeFillsValue) {
  const OpResult result = run_op("ConstantOfShape", {i64({2}, {2, 2})}, {{"value", i64({1}, {7})}});
  expect_equal(result.outputs[0], i64({2, 2}, {7, 7, 7, 7}));
  expect_equal(result.inferred[0].value, i64({2, 2}, {7, 7, 7, 7}));
  expect_equal(run1("ConstantOfShape", {i64({1}, {3})}), f32({3}, {0, 0, 0}));
  EXPECT_EQ(infer1("ConstantOfShape", {info(DType::kInt64, {3})}).shape,
            (Shape{kDynamicDim, kDynamicDim, kDynamicDim}));
  const Tensor negative = i64({1}, {-2});
  EXPECT_THROW(infer1("ConstantOfShape", {known(negative)}), InputError);
}

TEST(Tensor, ConstantAttributes) {
  expect_equal(run1("Constant", {}, {{"value_ints", std::vector<int64_t>{1, 2}}}),
               i64({2}, {1, 2}));
  expect_equal(run1("Constant", {}, {{"value_float", 2.5f}}), f32({}, {2.5f}));
  expect_equal(run1("Constant", {}, {{"value", f32({2}, {3, 4})}}), f32({2}, {3, 4}));
  EXPECT_THROW(infer_op("Constant", {}, {{"value_int", int64_t{1}}, {"value_float", 1.0f}}),
               InputError);
  EXPECT_THROW(infer_op("Constant", {}, {}), InputError);
}

TEST(Tensor, RangeIntegerAndFloat) {
  const OpResult ints = run_op("Range", {i64({}, {10}), i64({}, {4}), i64({}, {-3})});
  expect_equal(ints.outputs[0], i64({2}, {10, 7}));
  expect_equal(ints.inferred[0].value, i64({2}, {10, 7}));
  expect_close(run1("Range", {f32({}, {0.5f}), f32({}, {2}), f32({}, {0.5f})}),
               f32({3}, {0.5f, 1.0f, 1.5f}));
  EXPECT_EQ(
      infer1("Range", {info(DType::kInt64, {}), info(DType::kInt64, {}), info(DType::kInt64, {})})
          .shape,
      (Shape{kDynamicDim}));
  const Tensor zero = i64({}, {0});
  const Tensor one = i64({}, {1});
  EXPECT_THROW(infer1("Range", {known(one), known(one), known(zero)}), InputError);
  EXPECT_THROW(infer1("Range", {known(one), info(DType::kInt32, {}), known(one)}), InputError);
}

TEST(Tensor, EyeLikeOffsetAndDtype) {
  expect_equal(run1("EyeLike", {iota_f32({3, 4})}, {{"k", int64_t{1}}}),
               f32({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  expect_equal(run1("EyeLike", {iota_f32({2, 2})}, {{"dtype", int64_t{7}}, {"k", int64_t{-1}}}),
               i64({2, 2}, {0, 0, 1, 0}));
  EXPECT_THROW(infer1("EyeLike", {info(DType::kFloat32, {2})}), InputError);
}

// ---- Transpose ----

TEST(Tensor, TransposeSmall) {
  expect_equal(run1("Transpose", {iota_f32({2, 3})}), f32({3, 2}, {0, 3, 1, 4, 2, 5}));
  expect_equal(run1("Transpose", {iota_f32({2, 2, 2})}, {{"perm", std::vector<int64_t>{1, 0, 2}}}),
               f32({2, 2, 2}, {0, 1, 4, 5, 2, 3, 6, 7}));
  EXPECT_THROW(
      infer1("Transpose", {info(DType::kFloat32, {2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}}),
      InputError);
}

// Naive reference: out[i] = in[sum(index_d * in_stride[perm[d]])].
Tensor transpose_reference(const Tensor& input, const std::vector<int64_t>& perm) {
  Shape shape;
  for (int64_t axis : perm) shape.push_back(input.dim(axis));
  Tensor out = Tensor::allocate(input.dtype(), shape);
  const std::vector<int64_t> in_strides = contiguous_strides(input.shape());
  const size_t elem = dtype_size(input.dtype());
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t source = 0;
    for (size_t d = 0; d < shape.size(); ++d) source += index[d] * in_strides[perm[d]];
    std::memcpy(static_cast<char*>(out.raw()) + i * elem,
                static_cast<const char*>(input.raw()) + source * elem, elem);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST(Tensor, TransposeAttentionLayoutsMatchReference) {
  // [B,S,H,D] -> [B,H,S,D] (contiguous rows) and -> [B,H,D,S] (tiled), large enough to run the
  // parallel paths, in float32 and in 2-byte float16 bits.
  std::mt19937 random(7);
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    Tensor input = Tensor::allocate(dtype, {2, 37, 4, 40});
    auto* bytes = static_cast<uint8_t*>(input.raw());
    for (size_t i = 0; i < input.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(random());
    for (const std::vector<int64_t>& perm :
         {std::vector<int64_t>{0, 2, 1, 3}, std::vector<int64_t>{0, 2, 3, 1},
          std::vector<int64_t>{3, 1, 0, 2}}) {
      const Tensor out = run1("Transpose", {input}, {{"perm", perm}});
      const Tensor expected = transpose_reference(input, perm);
      ASSERT_EQ(out.shape(), expected.shape());
      EXPECT_EQ(std::memcmp(out.raw(), expected.raw(), out.nbytes()), 0)
          << "perm " << perm[0] << perm[1] << perm[2] << perm[3];
    }
  }
}

TEST(Tensor, TransposeFoldsInt64) {
  const Tensor value = i64({2, 2}, {1, 2, 3, 4});
  expect_equal(infer1("Transpose", {known(value)}).value, i64({2, 2}, {1, 3, 2, 4}));
}

Tensor random_tensor(DType dtype, Shape shape, uint32_t seed) {
  std::mt19937 random(seed);
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  auto* bytes = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(random());
  return t;
}

void expect_same_bytes(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.shape(), expected.shape());
  EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(), actual.nbytes()), 0);
}

TEST(Tensor, StridedKernelsMatchSerialReference) {
  // Sizes above the parallel threshold and off the 8x8 block grid, against the serial gather
  // that folding uses.
  const Tensor data = random_tensor(DType::kInt64, {3, 50, 67}, 11);
  const std::vector<SliceRange> ranges{{2, -1, 3}, {1, 3, 17}, {66, -2, 34}};
  const Tensor sliced = run1("Slice", {data, i64({3}, {-1, 1, 100}), i64({3}, {-100, 50, -100}),
                                       i64({3}, {0, 1, 2}), i64({3}, {-1, 3, -2})});
  expect_same_bytes(sliced, gather_strided(data, slice_layout(data.shape(), ranges)));
  const Tensor small = random_tensor(DType::kFloat16, {61, 1, 3}, 12);
  const Tensor expanded = run1("Expand", {small, i64({4}, {5, 61, 40, 3})});
  expect_same_bytes(expanded, gather_strided(small, expand_layout(small.shape(), {5, 61, 40, 3})));
  const Tensor tiled = run1("Tile", {small, i64({3}, {2, 30, 3})});
  const std::vector<int64_t> repeats{2, 30, 3};
  expect_same_bytes(
      tiled, gather_strided(small, tile_layout(small.shape(), repeats)).reshaped({122, 30, 9}));
  const Tensor bytes = random_tensor(DType::kUInt8, {2, 300, 301}, 13);
  const std::vector<int64_t> perm{2, 0, 1};
  expect_same_bytes(run1("Transpose", {bytes}, {{"perm", perm}}),
                    gather_strided(bytes, transpose_layout(bytes.shape(), perm)));
}

// ---- Concat, Split ----

TEST(Tensor, ConcatAxis1) {
  expect_equal(
      run1("Concat", {iota_f32({2, 1}), f32({2, 2}, {10, 11, 12, 13})}, {{"axis", int64_t{1}}}),
      f32({2, 3}, {0, 10, 11, 1, 12, 13}));
}

TEST(Tensor, ConcatFoldsShapePieces) {
  const Tensor a = i64({1}, {-1});
  const Tensor b = i64({2}, {12, 64});
  const InferredOutput out = infer1("Concat", {known(a), known(b)}, {{"axis", int64_t{0}}});
  expect_equal(out.value, i64({3}, {-1, 12, 64}));
  EXPECT_FALSE(infer1("Concat", {known(a), info(DType::kInt64, {2})}, {{"axis", int64_t{0}}})
                   .value.defined());
}

TEST(Tensor, ConcatShapesAndErrors) {
  EXPECT_EQ(
      infer1("Concat", {info(DType::kFloat32, {kDynamicDim, 3}), info(DType::kFloat32, {2, 3})},
             {{"axis", int64_t{0}}})
          .shape,
      (Shape{kDynamicDim, 3}));
  EXPECT_EQ(
      infer1("Concat", {info(DType::kFloat32, {kDynamicDim, 3}), info(DType::kFloat32, {2, 4})},
             {{"axis", int64_t{-1}}})
          .shape,
      (Shape{2, 7}));
  EXPECT_THROW(infer1("Concat", {info(DType::kFloat32, {2, 3}), info(DType::kFloat32, {3, 3})},
                      {{"axis", int64_t{1}}}),
               InputError);
  EXPECT_THROW(infer1("Concat", {info(DType::kFloat32, {2, 3})}), InputError);
}

TEST(Tensor, ConcatAndSplitOfOneOuterIndexAcrossTheThreads) {
  // Pieces of 1, 3 and 5 channels of 100x100 floats (40 KB to 200 KB): one outer index, copied
  // in ranges per thread that start and end inside pieces.
  const Tensor a = random_tensor(DType::kFloat32, {1, 1, 100, 100}, 21);
  const Tensor b = random_tensor(DType::kFloat32, {1, 3, 100, 100}, 22);
  const Tensor c = random_tensor(DType::kFloat32, {1, 5, 100, 100}, 23);
  const Tensor joined = run1("Concat", {a, b, c}, {{"axis", int64_t{1}}});
  ASSERT_EQ(joined.shape(), (Shape{1, 9, 100, 100}));
  const auto* bytes = static_cast<const char*>(joined.raw());
  EXPECT_EQ(std::memcmp(bytes, a.raw(), a.nbytes()), 0);
  EXPECT_EQ(std::memcmp(bytes + a.nbytes(), b.raw(), b.nbytes()), 0);
  EXPECT_EQ(std::memcmp(bytes + a.nbytes() + b.nbytes(), c.raw(), c.nbytes()), 0);
  const OpResult split = run_op("Split", {joined, i64({3}, {1, 3, 5})}, {{"axis", int64_t{1}}}, 3);
  expect_same_bytes(split.outputs[0], a);
  expect_same_bytes(split.outputs[1], b);
  expect_same_bytes(split.outputs[2], c);
}

TEST(Tensor, SplitBySizesInput) {
  const OpResult result =
      run_op("Split", {iota_f32({2, 3}), i64({2}, {1, 2})}, {{"axis", int64_t{1}}}, 2);
  expect_equal(result.outputs[0], f32({2, 1}, {0, 3}));
  expect_equal(result.outputs[1], f32({2, 2}, {1, 2, 4, 5}));
}

TEST(Tensor, SplitEvenAndNumOutputs) {
  const OpResult even = run_op("Split", {iota_f32({4})}, {}, 2);
  expect_equal(even.outputs[1], f32({2}, {2, 3}));
  const OpResult uneven = run_op("Split", {iota_f32({5})}, {{"num_outputs", int64_t{3}}}, 3, 18);
  expect_equal(uneven.outputs[0], f32({2}, {0, 1}));
  expect_equal(uneven.outputs[2], f32({1}, {4}));
  EXPECT_THROW(infer_op("Split", {info(DType::kFloat32, {5})}, {}, 2), InputError);
  const Tensor bad_sizes = i64({2}, {1, 1});
  EXPECT_THROW(infer_op("Split", {info(DType::kFloat32, {5}), known(bad_sizes)}, {}, 2),
               InputError);
  const auto dynamic = infer_op("Split", {info(DType::kFloat32, {kDynamicDim, 2})}, {}, 2);
  EXPECT_EQ(dynamic[1].shape, (Shape{kDynamicDim, 2}));
}

// ---- Slice ----

TEST(Tensor, SliceClampedAndNegative) {
  // data[0:2, -3:100] of a 3x4 iota.
  const OpResult result =
      run_op("Slice", {iota_f32({3, 4}), i64({2}, {0, -3}), i64({2}, {2, 100})});
  expect_equal(result.outputs[0], f32({2, 3}, {1, 2, 3, 5, 6, 7}));
  expect_equal(result.inferred[0].value, f32({2, 3}, {1, 2, 3, 5, 6, 7}));
}

TEST(Tensor, SliceNegativeStepsAndAxes) {
  // data[:, ::-2] and data[2:0:-1] on axis 0, with int32 bounds.
  expect_equal(run1("Slice", {iota_f32({2, 5}), i32({1}, {-1}), i32({1}, {INT32_MIN}),
                              i32({1}, {-1}), i32({1}, {-2})}),
               f32({2, 3}, {4, 2, 0, 9, 7, 5}));
  expect_equal(run1("Slice", {iota_f32({3, 2}), i64({1}, {2}), i64({1}, {0}), i64({1}, {0}),
                              i64({1}, {-1})}),
               f32({2, 2}, {4, 5, 2, 3}));
  const int64_t min = std::numeric_limits<int64_t>::min();
  expect_equal(run1("Slice", {iota_f32({4}), i64({1}, {-1}), i64({1}, {min}), i64({1}, {0}),
                              i64({1}, {min})}),
               f32({1}, {3}));
}

TEST(Tensor, SliceUnknownBoundsGiveDynamicDims) {
  const Tensor axes = i64({1}, {1});
  EXPECT_EQ(infer1("Slice", {info(DType::kFloat32, {2, 3, 4}), info(DType::kInt64, {1}),
                             info(DType::kInt64, {1}), known(axes)})
                .shape,
            (Shape{2, kDynamicDim, 4}));
  EXPECT_EQ(infer1("Slice", {info(DType::kFloat32, {2, 3, 4}), info(DType::kInt64, {2}),
                             info(DType::kInt64, {2})})
                .shape,
            (Shape{kDynamicDim, kDynamicDim, 4}));
  const Tensor starts = i64({1}, {1});
  const Tensor ends = i64({1}, {3});
  EXPECT_EQ(infer1("Slice", {info(DType::kFloat32, {kDynamicDim, 8}), known(starts), known(ends),
                             known(axes)})
                .shape,
            (Shape{kDynamicDim, 2}));
}

TEST(Tensor, SliceRejectsBadArguments) {
  const Tensor one = i64({1}, {1});
  const Tensor zero = i64({1}, {0});
  const Tensor axis = i64({1}, {2});
  EXPECT_THROW(infer1("Slice", {info(DType::kFloat32, {4}), known(zero), known(one), known(zero),
                                known(zero)}),
               InputError);
  EXPECT_THROW(infer1("Slice", {info(DType::kFloat32, {4}), known(zero), known(one), known(axis)}),
               InputError);
  EXPECT_THROW(
      infer1("Slice", {info(DType::kFloat32, {4}), info(DType::kFloat32, {1}), known(one)}),
      InputError);
}

// ---- Expand, Tile ----

TEST(Tensor, ExpandBroadcasts) {
  const OpResult result = run_op("Expand", {f32({2, 1}, {1, 2}), i64({3}, {2, 1, 3})});
  expect_equal(result.outputs[0], f32({2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  expect_equal(result.inferred[0].value, result.outputs[0]);
  EXPECT_EQ(infer1("Expand", {info(DType::kFloat32, {3, 1}), info(DType::kInt64, {3})}).shape,
            (Shape{kDynamicDim, 3, kDynamicDim}));
  const Tensor shape = i64({2}, {2, 4});
  EXPECT_THROW(infer1("Expand", {info(DType::kFloat32, {3}), known(shape)}), InputError);
}

TEST(Tensor, TileRepeats) {
  const OpResult result = run_op("Tile", {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {2, 2})});
  expect_equal(result.outputs[0], f32({4, 4}, {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4}));
  expect_equal(result.inferred[0].value, result.outputs[0]);
  EXPECT_EQ(infer1("Tile", {info(DType::kFloat32, {2, 3}), info(DType::kInt64, {2})}).shape,
            (Shape{kDynamicDim, kDynamicDim}));
  const Tensor wrong = i64({1}, {2});
  EXPECT_THROW(infer1("Tile", {info(DType::kFloat32, {2, 3}), known(wrong)}), InputError);
}

// ---- Pad, Trilu ----

TEST(Tensor, PadConstantWithValue) {
  expect_equal(run1("Pad", {f32({1, 2}, {1, 2}), i64({4}, {0, 1, 1, 0}), f32({}, {9})}),
               f32({2, 3}, {9, 1, 2, 9, 9, 9}));
}

TEST(Tensor, PadReflectEdgeWrap) {
  const Tensor data = f32({3}, {1, 2, 3});
  const Tensor pads = i64({2}, {2, 2});
  expect_equal(run1("Pad", {data, pads}, {{"mode", std::string("reflect")}}),
               f32({7}, {3, 2, 1, 2, 3, 2, 1}));
  expect_equal(run1("Pad", {data, pads}, {{"mode", std::string("edge")}}),
               f32({7}, {1, 1, 1, 2, 3, 3, 3}));
  expect_equal(run1("Pad", {data, pads}, {{"mode", std::string("wrap")}}),
               f32({7}, {2, 3, 1, 2, 3, 1, 2}));
  EXPECT_THROW(infer1("Pad", {known(data), known(pads)}, {{"mode", std::string("wrap")}}, 18),
               InputError);
  const Tensor too_far = i64({2}, {3, 0});
  EXPECT_THROW(infer1("Pad", {known(data), known(too_far)}, {{"mode", std::string("reflect")}}),
               InputError);
}

TEST(Tensor, PadNegativeCropsAndAxes) {
  expect_equal(run1("Pad", {iota_f32({2, 3}), i64({4}, {0, -1, 1, 0})}),
               f32({3, 2}, {1, 2, 4, 5, 0, 0}));
  // Only axis 1 (given as -1) is padded.
  expect_equal(run1("Pad", {iota_f32({2, 2}), i64({2}, {1, 0}), Tensor(), i64({1}, {-1})},
                    {{"mode", std::string("edge")}}),
               f32({2, 3}, {0, 0, 1, 2, 2, 3}));
  EXPECT_EQ(infer1("Pad", {info(DType::kFloat32, {2, 2}), info(DType::kInt64, {4})}).shape,
            (Shape{kDynamicDim, kDynamicDim}));
  const Tensor crop_all = i64({2}, {-2, -2});
  EXPECT_THROW(infer1("Pad", {info(DType::kFloat32, {3}), known(crop_all)}), InputError);
}

TEST(Tensor, TriluUpperLowerBatched) {
  const Tensor data = iota_f32({2, 2, 3});
  expect_equal(run1("Trilu", {data, i64({}, {1})}),
               f32({2, 2, 3}, {0, 1, 2, 0, 0, 5, 0, 7, 8, 0, 0, 11}));
  expect_equal(run1("Trilu", {data, i64({}, {-1})}, {{"upper", int64_t{0}}}),
               f32({2, 2, 3}, {0, 0, 0, 3, 0, 0, 0, 0, 0, 9, 0, 0}));
  expect_equal(run1("Trilu", {data}, {{"upper", int64_t{0}}}),
               f32({2, 2, 3}, {0, 0, 0, 3, 4, 0, 6, 0, 0, 9, 10, 0}));
  EXPECT_THROW(infer1("Trilu", {info(DType::kFloat32, {3})}), InputError);
}

// ---- DepthToSpace, SpaceToDepth ----

TEST(Tensor, DepthToSpaceModes) {
  // numpy: x = arange(8).reshape(1, 8, 1, 1), blocksize 2.
  expect_equal(run1("DepthToSpace", {iota_f32({1, 8, 1, 1})}, {{"blocksize", int64_t{2}}}),
               f32({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}));
  expect_equal(run1("DepthToSpace", {iota_f32({1, 8, 1, 1})},
                    {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}),
               f32({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THROW(
      infer1("DepthToSpace", {info(DType::kFloat32, {1, 6, 2, 2})}, {{"blocksize", int64_t{2}}}),
      InputError);
}

TEST(Tensor, SpaceToDepthInvertsDepthToSpace) {
  // numpy: x = arange(8).reshape(1, 2, 2, 2) -> [1, 8, 1, 1].
  expect_equal(run1("SpaceToDepth", {iota_f32({1, 2, 2, 2})}, {{"blocksize", int64_t{2}}}),
               f32({1, 8, 1, 1}, {0, 4, 1, 5, 2, 6, 3, 7}));
  const Tensor depth = run1("DepthToSpace", {iota_f32({1, 8, 2, 3})}, {{"blocksize", int64_t{2}}});
  expect_equal(run1("SpaceToDepth", {depth}, {{"blocksize", int64_t{2}}}), iota_f32({1, 8, 2, 3}));
}

// ---- Gather family ----

TEST(Tensor, GatherEmbeddingRows) {
  const OpResult result = run_op("Gather", {iota_f32({4, 2}), i64({2, 2}, {3, 0, -1, 1})});
  expect_equal(result.outputs[0], f32({2, 2, 2}, {6, 7, 0, 1, 6, 7, 2, 3}));
}

TEST(Tensor, GatherAxis1AndFold) {
  expect_equal(run1("Gather", {iota_f32({2, 3}), i32({2}, {2, 0})}, {{"axis", int64_t{1}}}),
               f32({2, 2}, {2, 0, 5, 3}));
  const Tensor shape = i64({4}, {2, 16, 12, 64});
  const Tensor index = i64({}, {-1});
  const InferredOutput out = infer1("Gather", {known(shape), known(index)});
  EXPECT_EQ(out.shape, Shape{});
  expect_equal(out.value, i64({}, {64}));
}

TEST(Tensor, GatherIndexOutOfRange) {
  const Tensor data = iota_f32({3});
  const Tensor index = i64({1}, {3});
  EXPECT_THROW(infer1("Gather", {known(data), known(index)}), InputError);
  // Indices unknown at import: the kernel checks them.
  EXPECT_THROW(
      run_kernel("Gather", {data, i64({2}, {0, -4})}, {Tensor::allocate(DType::kFloat32, {2})}),
      InputError);
  EXPECT_THROW(infer1("Gather", {info(DType::kFloat32, {3}), info(DType::kFloat32, {1})}),
               InputError);
  EXPECT_THROW(infer1("Gather", {info(DType::kFloat32, {3}), info(DType::kInt64, {1})},
                      {{"axis", int64_t{1}}}),
               InputError);
}

TEST(Tensor, GatherBool) {
  expect_equal(run1("Gather", {boolean({3}, {1, 0, 1}), i64({2}, {1, 2})}), boolean({2}, {0, 1}));
}

TEST(Tensor, GatherElementsAxis1) {
  expect_equal(run1("GatherElements", {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})},
                    {{"axis", int64_t{1}}}),
               f32({2, 2}, {1, 1, 4, 3}));
  EXPECT_THROW(run_kernel("GatherElements", {f32({2}, {1, 2}), i64({1}, {2})},
                          {Tensor::allocate(DType::kFloat32, {1})}),
               InputError);
  EXPECT_THROW(infer1("GatherElements", {info(DType::kFloat32, {2, 2}), info(DType::kInt64, {2})}),
               InputError);
}

TEST(Tensor, GatherNDWithBatchDims) {
  // ONNX example: data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[1],[0]], batch_dims 1.
  expect_equal(
      run1("GatherND", {iota_f32({2, 2, 2}), i64({2, 1}, {1, 0})}, {{"batch_dims", int64_t{1}}}),
      f32({2, 2}, {2, 3, 4, 5}));
  expect_equal(run1("GatherND", {iota_f32({2, 2}), i64({2, 2}, {0, 0, 1, 1})}), f32({2}, {0, 3}));
  EXPECT_THROW(infer1("GatherND", {info(DType::kFloat32, {2, 2}), info(DType::kInt64, {1, 3})}),
               InputError);
}

// ---- Scatter family ----

TEST(Tensor, ScatterNDReplaceAndAdd) {
  // ONNX example: data = arange(1, 9), indices [[4],[3],[1],[7]], updates [9,10,11,12].
  const Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor indices = i64({4, 1}, {4, 3, 1, 7});
  const Tensor updates = f32({4}, {9, 10, 11, 12});
  expect_equal(run1("ScatterND", {data, indices, updates}), f32({8}, {1, 11, 3, 10, 9, 6, 7, 12}));
  expect_equal(run1("ScatterND", {data, i64({2, 1}, {0, 0}), f32({2}, {5, 6})},
                    {{"reduction", std::string("add")}}),
               f32({8}, {12, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(infer1("ScatterND", {known(data), known(indices), info(DType::kFloat32, {3})}),
               InputError);
  EXPECT_THROW(infer1("ScatterND", {known(data), known(indices), known(updates)},
                      {{"reduction", std::string("max")}}, 16),
               InputError);
}

TEST(Tensor, ScatterElementsAxis1) {
  // ONNX example: data [[1,2,3,4,5]], indices [[1,3]], updates [[1.1,2.1]], axis 1.
  const Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  expect_close(run1("ScatterElements", {data, i64({1, 2}, {1, 3}), f32({1, 2}, {1.1f, 2.1f})},
                    {{"axis", int64_t{1}}}),
               f32({1, 5}, {1, 1.1f, 3, 2.1f, 5}));
  expect_close(run1("ScatterElements", {data, i64({1, 2}, {1, 1}), f32({1, 2}, {1.1f, 2.1f})},
                    {{"axis", int64_t{1}}, {"reduction", std::string("add")}}),
               f32({1, 5}, {1, 5.2f, 3, 4, 5}));
  EXPECT_THROW(run_kernel("ScatterElements", {data, i64({1, 1}, {-6}), f32({1, 1}, {0})},
                          {Tensor::allocate(DType::kFloat32, {1, 5})}, {{"axis", int64_t{1}}}),
               InputError);
}

// ---- OneHot ----

TEST(Tensor, OneHotAxes) {
  const Tensor values = f32({2}, {0, 5});
  expect_equal(run1("OneHot", {i64({3}, {0, -1, 7}), i64({}, {3}), values}),
               f32({3, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0}));
  expect_equal(run1("OneHot", {i64({2}, {1, 0}), f32({}, {2}), values}, {{"axis", int64_t{0}}}),
               f32({2, 2}, {0, 5, 5, 0}));
  EXPECT_EQ(
      infer1("OneHot", {info(DType::kInt64, {4}), info(DType::kInt64, {}), known(values)}).shape,
      (Shape{4, kDynamicDim}));
  const Tensor zero = i64({}, {0});
  EXPECT_THROW(infer1("OneHot", {info(DType::kInt64, {4}), known(zero), known(values)}),
               InputError);
}

// ---- NonZero, NonMaxSuppression, Unique, TopK ----

TEST(Tensor, NonZeroCoordinates) {
  const OpResult result = run_op("NonZero", {f32({2, 2}, {1, 0, -0.0f, 3})});
  EXPECT_EQ(result.inferred[0].shape, (Shape{2, kDynamicDim}));
  expect_equal(result.outputs[0], i64({2, 2}, {0, 1, 0, 1}));
  expect_equal(run1("NonZero", {boolean({3}, {0, 0, 0})}), i64({1, 0}, {}));
}

Tensor nms_boxes() {
  return f32({1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                         0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101});
}
Tensor nms_scores() { return f32({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}); }

TEST(Tensor, NonMaxSuppressionSuppressByIou) {
  // ONNX test cases (nonmaxsuppression_suppress_by_IOU and _and_scores).
  expect_equal(run1("NonMaxSuppression",
                    {nms_boxes(), nms_scores(), i64({1}, {3}), f32({1}, {0.5f}), f32({1}, {0})}),
               i64({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
  expect_equal(run1("NonMaxSuppression",
                    {nms_boxes(), nms_scores(), i64({1}, {3}), f32({1}, {0.5f}), f32({1}, {0.4f})}),
               i64({2, 3}, {0, 0, 3, 0, 0, 0}));
  expect_equal(run1("NonMaxSuppression", {nms_boxes(), nms_scores()}), i64({0, 3}, {}));
}

TEST(Tensor, NonMaxSuppressionCenterPointBox) {
  const Tensor boxes = f32({1, 6, 4}, {0.5f, 0.5f,  1, 1, 0.5f, 0.6f,  1, 1, 0.5f, 0.4f,   1, 1,
                                       0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1});
  expect_equal(run1("NonMaxSuppression",
                    {boxes, nms_scores(), i64({1}, {3}), f32({1}, {0.5f}), f32({1}, {0})},
                    {{"center_point_box", int64_t{1}}}),
               i64({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(Tensor, NonMaxSuppressionBatchesClassesAndTies) {
  const Tensor boxes = nms_boxes();
  Tensor two_batches = Tensor::allocate(DType::kFloat32, {2, 6, 4});
  std::memcpy(two_batches.raw(), boxes.raw(), boxes.nbytes());
  std::memcpy(two_batches.data<float>() + 24, boxes.raw(), boxes.nbytes());
  Tensor two = Tensor::allocate(DType::kFloat32, {2, 1, 6});
  std::memcpy(two.raw(), nms_scores().raw(), 24);
  std::memcpy(two.data<float>() + 6, nms_scores().raw(), 24);
  expect_equal(run1("NonMaxSuppression", {two_batches, two, i64({1}, {2}), f32({1}, {0.5f})}),
               i64({4, 3}, {0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0}));
  expect_equal(
      run1("NonMaxSuppression", {boxes, two.reshaped({1, 2, 6}), i64({1}, {2}), f32({1}, {0.5f})}),
      i64({4, 3}, {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0}));
  // Identical boxes and scores: the lowest index wins.
  std::vector<float> same(40);
  for (size_t i = 0; i < same.size(); i += 4) same[i + 2] = same[i + 3] = 1;
  expect_equal(run1("NonMaxSuppression",
                    {f32({1, 10, 4}, same), f32({1, 1, 10}, std::vector<float>(10, 0.9f)),
                     i64({1}, {3}), f32({1}, {0.5f})}),
               i64({1, 3}, {0, 0, 0}));
}

TEST(Tensor, NonMaxSuppressionRejectsBadInputs) {
  EXPECT_THROW(infer1("NonMaxSuppression",
                      {info(DType::kFloat32, {1, 6, 3}), info(DType::kFloat32, {1, 1, 6})}),
               InputError);
  EXPECT_THROW(infer1("NonMaxSuppression",
                      {info(DType::kFloat32, {1, 6, 4}), info(DType::kFloat32, {1, 1, 5})}),
               InputError);
  EXPECT_THROW(
      run1("NonMaxSuppression", {nms_boxes(), nms_scores(), i64({1}, {3}), f32({1}, {1.5f})}),
      InputError);
}

TEST(Tensor, UniqueSortedAndUnsorted) {
  const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  const OpResult sorted = run_op("Unique", {x}, {}, 4);
  expect_equal(sorted.outputs[0], f32({4}, {1, 2, 3, 4}));
  expect_equal(sorted.outputs[1], i64({4}, {1, 0, 3, 4}));
  expect_equal(sorted.outputs[2], i64({6}, {1, 0, 0, 2, 3, 2}));
  expect_equal(sorted.outputs[3], i64({4}, {2, 1, 2, 1}));
  EXPECT_EQ(sorted.inferred[2].shape, (Shape{6}));
  const OpResult unsorted = run_op("Unique", {x}, {{"sorted", int64_t{0}}}, 4);
  expect_equal(unsorted.outputs[0], f32({4}, {2, 1, 3, 4}));
  expect_equal(unsorted.outputs[1], i64({4}, {0, 1, 3, 4}));
  expect_equal(unsorted.outputs[2], i64({6}, {0, 1, 1, 2, 3, 2}));
  expect_equal(unsorted.outputs[3], i64({4}, {1, 2, 2, 1}));
}

TEST(Tensor, UniqueAlongAxis) {
  // ONNX example (unique_sorted_with_axis_3d): x of shape [2, 4, 2], axis 1.
  const Tensor x = f32({2, 4, 2}, {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1});
  const OpResult result = run_op("Unique", {x}, {{"axis", int64_t{1}}}, 4);
  expect_equal(result.outputs[0], f32({2, 3, 2}, {0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1}));
  expect_equal(result.outputs[1], i64({3}, {1, 0, 2}));
  expect_equal(result.outputs[2], i64({4}, {1, 0, 2, 0}));
  expect_equal(result.outputs[3], i64({3}, {2, 1, 1}));
  EXPECT_THROW(infer_op("Unique", {info(DType::kFloat32, {2})}, {{"axis", int64_t{1}}}, 4),
               InputError);
}

TEST(Tensor, TopKLargestAndSmallestWithTies) {
  const Tensor x = f32({5}, {3, 1, 3, 2, 3});
  const OpResult largest = run_op("TopK", {x, i64({1}, {2})}, {}, 2);
  expect_equal(largest.outputs[0], f32({2}, {3, 3}));
  expect_equal(largest.outputs[1], i64({2}, {0, 2}));
  const OpResult smallest = run_op("TopK", {x, i64({1}, {3})}, {{"largest", int64_t{0}}}, 2);
  expect_equal(smallest.outputs[0], f32({3}, {1, 2, 3}));
  expect_equal(smallest.outputs[1], i64({3}, {1, 3, 0}));
}

TEST(Tensor, TopKAxis0AndFloat16) {
  const OpResult result =
      run_op("TopK", {f32({3, 2}, {1, 6, 5, 2, 3, 4}), i64({1}, {2})}, {{"axis", int64_t{0}}}, 2);
  expect_equal(result.outputs[0], f32({2, 2}, {5, 6, 3, 4}));
  expect_equal(result.outputs[1], i64({2, 2}, {1, 0, 2, 2}));
  std::vector<uint16_t> halves;
  for (float v : {0.5f, -2.0f, 4.0f}) halves.push_back(float_to_half(v));
  const OpResult half =
      run_op("TopK", {Tensor::from_vector(DType::kFloat16, {3}, halves), i64({1}, {1})}, {}, 2);
  EXPECT_EQ(half.outputs[0].to_doubles(), std::vector<double>{4.0});
  expect_equal(half.outputs[1], i64({1}, {2}));
}

TEST(Tensor, TopKUnknownK) {
  const auto outputs =
      infer_op("TopK", {info(DType::kFloat32, {2, 10}), info(DType::kInt64, {1})}, {}, 2);
  EXPECT_EQ(outputs[0].shape, (Shape{2, kDynamicDim}));
  EXPECT_EQ(outputs[1].dtype, DType::kInt64);
  const Tensor too_big = i64({1}, {11});
  EXPECT_THROW(infer_op("TopK", {info(DType::kFloat32, {2, 10}), known(too_big)}, {}, 2),
               InputError);
}

// ---- Costs ----

TEST(Tensor, GatherCostReadsOnlyGatheredRows) {
  const OpSchema* schema = OpRegistry::instance().find("Gather");
  Node node;
  const std::vector<TensorType> inputs{{DType::kFloat32, {50000, 512}}, {DType::kInt64, {8}}};
  const std::vector<TensorType> outputs{{DType::kFloat32, {8, 512}}};
  const OpCost cost = schema->cost(node, inputs, outputs);
  EXPECT_EQ(cost.bytes, 8 * 8 + 2 * 8 * 512 * 4);
  EXPECT_EQ(cost.flops, 0);
  EXPECT_TRUE(OpRegistry::instance().find("Reshape")->output_aliases_input);
  EXPECT_TRUE(OpRegistry::instance().find("NonZero")->data_dependent_shape);
}

}  // namespace
}  // namespace tandem::testing
