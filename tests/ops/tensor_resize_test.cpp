// Tests of Resize (tensor family): output sizes and validation of its schema, and its CPU kernel
// against ONNX Runtime for every mode x coordinate transformation mode.
#include <cmath>
#include <limits>
#include <string>

#include "backends/cpu/cpu_device.h"
#include "ir/error.h"
#include "op_test_util.h"

namespace tandem::testing {
namespace {

using Attributes = std::map<std::string, Attribute, std::less<>>;

ValueInfo info(DType dtype, Shape shape) { return ValueInfo{dtype, std::move(shape), nullptr}; }
ValueInfo known(const Tensor& value) { return ValueInfo{value.dtype(), value.shape(), &value}; }

Attributes mode(const std::string& name) { return {{"mode", name}}; }

// Shape inference of Resize(X, roi, scales, sizes); an undefined tensor is an omitted input.
Shape infer_shape(const Shape& x, const Tensor& roi, const Tensor& scales, const Tensor& sizes,
                  Attributes attributes = {}, int opset = 19) {
  std::vector<ValueInfo> inputs = {info(DType::kFloat32, x)};
  for (const Tensor* t : {&roi, &scales, &sizes}) {
    inputs.push_back(t->defined() ? known(*t) : ValueInfo{});
  }
  return infer_op("Resize", inputs, std::move(attributes), 1, opset)[0].shape;
}

// The InputError message of inferring Resize on a float32 X of shape `x`.
std::string infer_error(const Shape& x, const Tensor& roi, const Tensor& scales,
                        const Tensor& sizes, Attributes attributes = {}, int opset = 19) {
  try {
    infer_shape(x, roi, scales, sizes, std::move(attributes), opset);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

Tensor resize(const Tensor& x, const Tensor& roi, const Tensor& scales, const Tensor& sizes,
              Attributes attributes = {}, int opset = 19) {
  return run_op("Resize", {x, roi, scales, sizes}, std::move(attributes), 1, opset).outputs[0];
}

const Tensor kNone;

// ---- Schema: output sizes ----

TEST(Resize, ScalesGiveFlooredSizes) {
  // floor(3 * 1.7) = 5, floor(4 * 0.6) = 2 (2.4000001 in float).
  EXPECT_EQ(infer_shape({1, 1, 3, 4}, kNone, f32({4}, {1, 1, 1.7f, 0.6f}), kNone),
            (Shape{1, 1, 5, 2}));
  EXPECT_EQ(infer_shape({2, 3, 5, 7}, kNone, f32({4}, {1, 1, 2, 0.5f}), kNone),
            (Shape{2, 3, 10, 3}));
  // The same at opset 13, the first Resize this importer takes.
  EXPECT_EQ(infer_shape({2, 3, 5, 7}, kNone, f32({4}, {1, 1, 2, 0.5f}), kNone, {}, 13),
            (Shape{2, 3, 10, 3}));
}

TEST(Resize, SizesAsExportersWriteThem) {
  // torch.onnx: an empty roi and scales, then the sizes.
  const Tensor empty = f32({0}, {});
  EXPECT_EQ(infer_shape({1, 3, 300, 400}, empty, empty, i64({4}, {1, 3, 320, 320})),
            (Shape{1, 3, 320, 320}));
  // Sizes need no input dims (stretch); scales keep unknown dims unknown.
  EXPECT_EQ(infer_shape({kDynamicDim, 3, kDynamicDim, 8}, kNone, kNone, i64({4}, {2, 3, 10, 4})),
            (Shape{2, 3, 10, 4}));
  EXPECT_EQ(infer_shape({kDynamicDim, 3, 4, 8}, kNone, f32({4}, {1, 1, 2, 2}), kNone),
            (Shape{kDynamicDim, 3, 8, 16}));
}

TEST(Resize, UnknownScalesOrSizesGiveDynamicResizedAxes) {
  const std::vector<ValueInfo> sizes = {info(DType::kFloat32, {1, 3, 4, 4}), ValueInfo{},
                                        ValueInfo{}, info(DType::kInt64, {4})};
  EXPECT_EQ(infer_op("Resize", sizes)[0].shape,
            (Shape{kDynamicDim, kDynamicDim, kDynamicDim, kDynamicDim}));
  const std::vector<ValueInfo> scales = {info(DType::kFloat32, {1, 3, 4, 4}), ValueInfo{},
                                         info(DType::kFloat32, {2})};
  EXPECT_EQ(infer_op("Resize", scales, {{"axes", std::vector<int64_t>{2, -1}}})[0].shape,
            (Shape{1, 3, kDynamicDim, kDynamicDim}));
}

TEST(Resize, AxesAndKeepAspectRatio) {
  const Tensor sizes = i64({2}, {6, 6});
  const Attributes axes = {{"axes", std::vector<int64_t>{2, 3}}};
  EXPECT_EQ(infer_shape({1, 1, 4, 8}, kNone, kNone, sizes, axes, 18), (Shape{1, 1, 6, 6}));
  Attributes not_larger = axes;
  not_larger["keep_aspect_ratio_policy"] = std::string("not_larger");
  EXPECT_EQ(infer_shape({1, 1, 4, 8}, kNone, kNone, sizes, not_larger, 18), (Shape{1, 1, 3, 6}));
  Attributes not_smaller = axes;
  not_smaller["keep_aspect_ratio_policy"] = std::string("not_smaller");
  EXPECT_EQ(infer_shape({1, 1, 4, 8}, kNone, kNone, sizes, not_smaller, 18), (Shape{1, 1, 6, 12}));
  // Negative axes count from the back; the other axes keep their size.
  EXPECT_EQ(infer_shape({2, 3, 4, 8}, kNone, f32({1}, {0.5f}), kNone,
                        {{"axes", std::vector<int64_t>{-2}}}, 18),
            (Shape{2, 3, 2, 8}));
}

// ---- Schema: validation ----

TEST(Resize, RefusesBadScalesAndSizes) {
  const Shape x = {1, 1, 4, 4};
  const Tensor scales = f32({4}, {1, 1, 2, 2});
  const Tensor sizes = i64({4}, {1, 1, 8, 8});
  EXPECT_NE(infer_error(x, kNone, scales, sizes).find("only one of scales and sizes"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, kNone, kNone).find("one of scales and sizes must be given"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, f32({0}, {}), i64({0}, {})).find("must be given"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, f32({2}, {2, 2}), kNone).find("expected 4"), std::string::npos);
  EXPECT_NE(infer_error(x, kNone, kNone, i64({3}, {1, 8, 8})).find("expected 4"),
            std::string::npos);
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.0f, -1.0f, inf, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_NE(infer_error(x, kNone, f32({4}, {1, 1, bad, 1}), kNone).find("positive and finite"),
              std::string::npos)
        << bad;
  }
  EXPECT_NE(infer_error(x, kNone, f32({4}, {1, 1, 1e30f, 1}), kNone).find("too large"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, kNone, i64({4}, {1, 1, -1, 8})).find("out of range"),
            std::string::npos);
  EXPECT_NE(
      infer_error(x, kNone, kNone, i64({4}, {1, 1, int64_t{1} << 40, 8})).find("out of range"),
      std::string::npos);
  // Each size is fine, their product is not.
  EXPECT_THROW(infer_shape(x, kNone, kNone, i64({4}, {1, 1, int64_t{1} << 20, int64_t{1} << 20})),
               InputError);
  EXPECT_NE(infer_error({1, 0, 4}, kNone, kNone, i64({3}, {1, 2, 4})).find("empty axis 1"),
            std::string::npos);
  EXPECT_EQ(infer_shape({1, 0, 4}, kNone, f32({3}, {1, 2, 1}), kNone), (Shape{1, 0, 4}));
  // Dtypes and ranks of the lists.
  EXPECT_NE(infer_error(x, kNone, i64({4}, {1, 1, 2, 2}), kNone).find("scales must be float32"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, kNone, f32({4}, {1, 1, 8, 8})).find("sizes must be int64"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, f32({1, 4}, {1, 1, 2, 2}), kNone).find("1-D"), std::string::npos);
  EXPECT_NE(infer_error({}, kNone, f32({0}, {}), i64({0}, {})).find("rank >= 1"),
            std::string::npos);
}

TEST(Resize, RefusesBadAttributesNamingTheNode) {
  const Shape x = {1, 1, 4, 4};
  const Tensor scales = f32({4}, {1, 1, 2, 2});
  const std::string antialias = infer_error(
      x, kNone, scales, kNone, {{"mode", std::string("linear")}, {"antialias", int64_t{1}}});
  EXPECT_NE(antialias.find("test_Resize (Resize)"), std::string::npos) << antialias;
  EXPECT_NE(antialias.find("antialias=1 is not supported"), std::string::npos) << antialias;
  EXPECT_NE(infer_error(x, kNone, scales, kNone,
                        {{"mode", std::string("cubic")}, {"antialias", int64_t{1}}})
                .find("antialias"),
            std::string::npos);
  // Nearest ignores antialias (the spec applies it to linear and cubic only).
  EXPECT_EQ(infer_shape(x, kNone, scales, kNone, {{"antialias", int64_t{1}}}), (Shape{1, 1, 8, 8}));
  // Attributes of later opsets.
  EXPECT_NE(infer_error(x, kNone, scales, kNone, {{"antialias", int64_t{0}}}, 13).find("opset 18"),
            std::string::npos);
  EXPECT_NE(
      infer_error(x, kNone, f32({2}, {2, 2}), kNone, {{"axes", std::vector<int64_t>{2, 3}}}, 17)
          .find("opset 18"),
      std::string::npos);
  const Attributes symmetric = {
      {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}};
  EXPECT_NE(infer_error(x, kNone, scales, kNone, symmetric, 18).find("opset 19"),
            std::string::npos);
  EXPECT_EQ(infer_shape(x, kNone, scales, kNone, symmetric, 19), (Shape{1, 1, 8, 8}));
  // Unknown values.
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"mode", "bilinear"},
           {"coordinate_transformation_mode", "corners"},
           {"nearest_mode", "round"},
           {"keep_aspect_ratio_policy", "fit"}}) {
    EXPECT_NE(infer_error(x, kNone, scales, kNone, {{name, value}}).find("unknown " + name),
              std::string::npos)
        << name;
  }
  EXPECT_NE(infer_error(x, kNone, scales, kNone, {{"exclude_outside", int64_t{2}}})
                .find("exclude_outside must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, f32({1}, {2}), kNone, {{"axes", std::vector<int64_t>{4}}})
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(infer_error(x, kNone, f32({2}, {2, 2}), kNone, {{"axes", std::vector<int64_t>{3, -1}}})
                .find("twice"),
            std::string::npos);
}

TEST(Resize, CropAndResizeNeedsAValidRoi) {
  const Attributes crop = {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}};
  const Shape x = {1, 1, 4, 4};
  const Tensor sizes = i64({4}, {1, 1, 2, 2});
  EXPECT_NE(infer_error(x, kNone, kNone, sizes, crop).find("needs the roi input"),
            std::string::npos);
  EXPECT_NE(infer_error(x, f32({0}, {}), kNone, sizes, crop).find("needs the roi input"),
            std::string::npos);
  EXPECT_NE(infer_error(x, f32({4}, {0, 0, 1, 1}), kNone, sizes, crop).find("expected 8"),
            std::string::npos);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(infer_error(x, f32({8}, {0, 0, nan, 0, 1, 1, 1, 1}), kNone, sizes, crop).find("finite"),
            std::string::npos);
  EXPECT_NE(
      infer_error(x, i64({8}, {0, 0, 0, 0, 1, 1, 1, 1}), kNone, sizes, crop).find("roi must be"),
      std::string::npos);
  // Other modes ignore roi, as ONNX Runtime does.
  EXPECT_EQ(infer_shape(x, f32({4}, {0, 0, 1, 1}), kNone, sizes), (Shape{1, 1, 2, 2}));
}

TEST(Resize, CostCountsTapsOfResizedAxes) {
  const OpSchema* schema = OpRegistry::instance().find("Resize");
  ASSERT_NE(schema, nullptr);
  Node node;
  node.op_type = "Resize";
  const std::vector<TensorType> inputs = {{DType::kFloat32, {1, 3, 10, 10}}};
  const std::vector<TensorType> outputs = {{DType::kFloat32, {1, 3, 20, 20}}};
  node.attributes = mode("linear");
  EXPECT_EQ(schema->cost(node, inputs, outputs).flops, 1200.0 * 2 * 4);  // 2 x 2 taps
  node.attributes = mode("cubic");
  EXPECT_EQ(schema->cost(node, inputs, outputs).flops, 1200.0 * 2 * 16);  // 4 x 4 taps
  node.attributes = mode("nearest");
  const OpCost nearest = schema->cost(node, inputs, outputs);
  EXPECT_EQ(nearest.flops, 0);
  EXPECT_EQ(nearest.bytes, (300.0 + 1200.0) * 4);
}

// ---- Kernel ----

// Small cases checked by hand.
TEST(Resize, HandCheckedValues) {
  // Asymmetric linear, x 2: sources 0, 0.5, 1, 1.5 (clamped to the last sample).
  expect_close(resize(f32({2}, {0, 10}), kNone, f32({1}, {2}), kNone,
                      {{"mode", std::string("linear")},
                       {"coordinate_transformation_mode", std::string("asymmetric")}}),
               f32({4}, {0, 5, 10, 10}));
  // Half-pixel bilinear, 1x2 -> 1x4: sources -0.25 (clamped), 0.25, 0.75, 1.25 (clamped).
  expect_close(resize(f32({1, 2}, {0, 8}), kNone, kNone, i64({2}, {1, 4}), mode("linear")),
               f32({1, 4}, {0, 2, 6, 8}));
  // Nearest, half_pixel, round_prefer_floor, x 2 on both axes: each sample becomes a 2x2 block.
  expect_equal(resize(f32({2, 2}, {1, 2, 3, 4}), kNone, f32({2}, {2, 2}), kNone),
               f32({4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // Align-corners linear 3 -> 5: sources 0, 0.5, 1, 1.5, 2.
  expect_close(resize(f32({3}, {0, 4, 2}), kNone, kNone, i64({1}, {5}),
                      {{"mode", std::string("linear")},
                       {"coordinate_transformation_mode", std::string("align_corners")}}),
               f32({5}, {0, 2, 4, 3, 2}));
  // Crop and resize: roi [0.5, 1.5] of a 3-sample axis is [1, 3]; 3 is past the end.
  expect_close(resize(f32({3}, {0, 4, 2}), f32({2}, {0.5f, 1.5f}), kNone, i64({1}, {3}),
                      {{"mode", std::string("linear")},
                       {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                       {"extrapolation_value", 7.0f}}),
               f32({3}, {4, 2, 7}));
}

struct ResizeCase {
  const char* name;
  Attributes attributes;
  int opset;
  Shape shape;
  std::vector<float> x;
  std::vector<float> roi;
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  Shape expected_shape;
  std::vector<float> expected;
};

// Expected values from ONNX Runtime 1.20 (tests/ops/resize_cases.py prints this table; the
// comments are its notes on the cases where the onnx reference evaluator differs or gave them).
const std::vector<ResizeCase>& resize_cases() {
  // clang-format off
  static const std::vector<ResizeCase> cases = {
    {"nearest_half_pixel_scales", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 2, 1, 2, 5, 4, 7, 1, 7, 1}},
    {"nearest_half_pixel_sizes", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 3, 8, 1, 3, 8, 5, 0, 6, 7, 9, 2, 7, 9, 2}},
    {"nearest_half_pixel_one_row", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {5, 5, 0, 4, 4, 6}},
    {"nearest_half_pixel_symmetric_scales", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {3, 2, 3, 2, 0, 4, 9, 1, 9, 1}},
    {"nearest_half_pixel_symmetric_sizes", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 3, 8, 1, 3, 8, 5, 0, 6, 7, 9, 2, 7, 9, 2}},
    {"nearest_half_pixel_symmetric_one_row", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {5, 5, 0, 4, 4, 6}},
    {"nearest_pytorch_half_pixel_scales", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 2, 1, 2, 5, 4, 7, 1, 7, 1}},
    {"nearest_pytorch_half_pixel_sizes", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 3, 8, 1, 3, 8, 5, 0, 6, 7, 9, 2, 7, 9, 2}},
    {"nearest_pytorch_half_pixel_one_row", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 1, 3, 2, 2, 8}},
    // ORT; the onnx reference differs.
    {"nearest_align_corners_scales", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 8, 1, 8, 5, 6, 5, 6, 7, 2}},
    {"nearest_align_corners_sizes", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 3, 8, 1, 3, 8, 5, 0, 6, 5, 0, 6, 7, 9, 2}},
    {"nearest_align_corners_one_row", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 3, 3, 2, 2, 8}},
    {"nearest_asymmetric_scales", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 2, 5, 4, 5, 4, 7, 1, 7, 1}},
    {"nearest_asymmetric_sizes", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 3, 8, 5, 0, 6, 5, 0, 6, 7, 9, 2, 7, 9, 2}},
    {"nearest_asymmetric_one_row", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 3, 3, 2, 8, 8}},
    // ORT; the onnx reference differs.
    {"nearest_tf_crop_and_resize_scales", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, -1, 5, -1, 5, -1, 5, -1, 7, -1}},
    {"nearest_tf_crop_and_resize_sizes", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 2, -1, 5, 4, -1, 5, 4, -1, 5, 4, -1, 7, 1, -1}},
    {"nearest_tf_crop_and_resize_one_row", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {5, 0, 4, 4, 6, -1}},
    {"linear_half_pixel_scales", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1.66666663, 2, 2.30392146, 2.76470566, 3.28431392, 3.94117641, 5.75490236, 2.32352924, 7.66666698, 1}},
    {"linear_half_pixel_sizes", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.33333337, 2.5, 6.99999952, 2.4666667, 2.30000019, 6.46666622, 4.16666651, 2, 5.66666651, 6.06666756, 3.80000067, 3.36666632, 7.33333302, 5, 1.83333325}},
    {"linear_half_pixel_one_row", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {5, 2.5, 0.666666508, 3.33333302, 5, 6}},
    {"linear_half_pixel_symmetric_scales", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {2.33333325, 3.99999952, 2.05882359, 4.27450943, 1.66666651, 4.66666651, 5.58823586, 2.70588183, 8.33333302, 1.33333325}},
    {"linear_half_pixel_symmetric_sizes", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.33333325, 2.5, 6.99999952, 2.4666667, 2.30000019, 6.46666622, 4.16666651, 2, 5.66666651, 6.0666666, 3.79999995, 3.36666656, 7.33333302, 5, 1.83333325}},
    {"linear_half_pixel_symmetric_one_row", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {4.99999952, 2.5, 0.666666627, 3.33333349, 5, 6}},
    {"linear_pytorch_half_pixel_scales", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1.66666663, 2, 2.30392146, 2.76470566, 3.28431392, 3.94117641, 5.75490236, 2.32352924, 7.66666698, 1}},
    {"linear_pytorch_half_pixel_sizes", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.33333337, 2.5, 6.99999952, 2.4666667, 2.30000019, 6.46666622, 4.16666651, 2, 5.66666651, 6.06666756, 3.80000067, 3.36666632, 7.33333302, 5, 1.83333325}},
    {"linear_pytorch_half_pixel_one_row", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 2, 2.83333325, 2.16666675, 5, 8}},
    // ORT; the onnx reference differs.
    {"linear_align_corners_scales", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 8, 3, 7, 5, 6, 6, 4, 7, 2}},
    {"linear_align_corners_sizes", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 2.5, 8, 3, 2.25, 7, 5, 2, 6, 6, 3.5, 4, 7, 5, 2}},
    {"linear_align_corners_one_row", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 2.20000005, 2.79999995, 2.20000005, 4.40000057, 8}},
    {"linear_asymmetric_scales", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 2.33333349, 3.35294104, 2.52941179, 5.35294056, 2.84313703, 6.52941179, 3.4313724, 7, 3.66666698}},
    {"linear_asymmetric_sizes", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 2.66666651, 6.00000048, 3.4000001, 1.86666656, 5.60000038, 5.4000001, 2.33333349, 4.5999999, 6.5999999, 5.33333349, 2.39999962, 7, 6.33333254, 1.66666675}},
    {"linear_asymmetric_one_row", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 2.33333325, 2.66666651, 2, 6.00000048, 8}},
    // ORT; the onnx reference differs.
    {"linear_tf_crop_and_resize_scales", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {2.36000013, -1, 3.0250001, -1, 3.91000009, -1, 5.34499931, -1, 6.77999973, -1}},
    {"linear_tf_crop_and_resize_sizes", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {2.36000013, 2.75, -1, 3.0250001, 3.36250019, -1, 3.91000009, 3.56000018, -1, 5.34499931, 2.72000027, -1, 6.77999973, 1.87999988, -1}},
    {"linear_tf_crop_and_resize_one_row", {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {3.91000009, 1.07200003, 2.63600039, 4.23200035, 5.48600006, -1}},
    {"cubic_half_pixel_scales", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1.53731954, 1.80524874, 1.91486776, 2.94008827, 3.06803536, 4.01695156, 6.08457232, 2.46492767, 8.46487617, 0.759281337}},
    {"cubic_half_pixel_sizes", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.02517653, 2.20000076, 7.25008726, 2.20158768, 1.5518744, 6.89461517, 4.21296358, 1.34375, 5.78240871, 6.38871527, 3.58250141, 3.19832659, 7.734375, 5.45375204, 1.327371}},
    {"cubic_half_pixel_one_row", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {5.43403006, 2.125, 0.105326414, 3.16551018, 5.375, 6.17361164}},
    {"cubic_half_pixel_symmetric_scales", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {2.60282636, 3.66142297, 1.33117795, 4.6453867, 1.12963176, 5.07407618, 5.89751768, 2.38716507, 9.98899269, 0.00870024599}},
    {"cubic_half_pixel_symmetric_sizes", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.02517736, 2.20000076, 7.25008726, 2.20158863, 1.5518744, 6.89461517, 4.21296406, 1.34375, 5.78240871, 6.38871336, 3.5824995, 3.1983223, 7.73437405, 5.45375204, 1.327371}},
    {"cubic_half_pixel_symmetric_one_row", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {5.43402767, 2.12500024, 0.105326585, 3.16551137, 5.37500048, 6.17361212}},
    {"cubic_pytorch_half_pixel_scales", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1.53731954, 1.80524874, 1.91486776, 2.94008827, 3.06803536, 4.01695156, 6.08457232, 2.46492767, 8.46487617, 0.759281337}},
    {"cubic_pytorch_half_pixel_sizes", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.02517653, 2.20000076, 7.25008726, 2.20158768, 1.5518744, 6.89461517, 4.21296358, 1.34375, 5.78240871, 6.38871527, 3.58250141, 3.19832659, 7.734375, 5.45375204, 1.327371}},
    // ORT; the onnx reference differs.
    {"cubic_pytorch_half_pixel_one_row", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {0.826389313, 2.09375, 2.92592931, 1.65740895, 4.90625, 8.52083302}},
    // ORT; the onnx reference differs.
    {"cubic_align_corners_scales", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 8, 2.8125, 7.375, 5, 6, 6.375, 3.8125, 7, 2}},
    {"cubic_align_corners_sizes", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 2.125, 8, 2.8125, 1.3828125, 7.375, 5, 1.34375, 6, 6.375, 3.14550781, 3.8125, 7, 5.09375, 2}},
    {"cubic_align_corners_one_row", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 2.33199978, 2.8720026, 1.64800096, 4.22000027, 8}},
    {"cubic_asymmetric_scales", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1, 1.75925875, 3.18196726, 1.91108572, 5.6649704, 2.47940826, 6.70404816, 3.26357961, 7.2216568, 3.66013098}},
    {"cubic_asymmetric_sizes", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1, 2.57407188, 6.05555677, 3.23199964, 0.707404554, 6.2422204, 5.73600245, 1.46814942, 4.78222275, 6.743999, 5.53481293, 1.9955585, 7.21599913, 7.30214643, 0.770743668}},
    {"cubic_asymmetric_one_row", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {1, 2.48148179, 2.57407188, 2, 6.05555677, 8.66666985}},
    // ORT; the onnx reference differs.
    {"cubic_tf_crop_and_resize_scales", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {1, 1, 1.70000005, 0.600000024}, {}, {1, 1, 5, 2}, {1.98237944, -1, 2.5290339, -1, 3.89664578, -1, 5.60690165, -1, 7.18394089, -1}},
    {"cubic_tf_crop_and_resize_sizes", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {}, {1, 1, 5, 3}, {1, 1, 5, 3}, {1.98237944, 2.7659328, -1, 2.5290339, 3.59148479, -1, 3.89664578, 3.67966056, -1, 5.60690165, 2.86130548, -1, 7.18394089, 1.76726794, -1}},
    {"cubic_tf_crop_and_resize_one_row", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}, {"extrapolation_value", -1.0f}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0, 0, 0.200000003, 0.100000001, 1, 1, 0.899999976, 1.20000005}, {}, {1, 1, 1, 6}, {1, 1, 1, 6}, {3.89664578, 0.615170777, 2.15167737, 4.66875696, 5.47920752, -1}},
    {"nearest_round_prefer_floor_half_pixel", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}, {"nearest_mode", std::string("round_prefer_floor")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1, 1, 3, 3, 2, 2, 2, 8, 8, 1, 1, 1, 3, 3, 2, 2, 2, 8, 8, 5, 5, 5, 0, 0, 4, 4, 4, 6, 6, 5, 5, 5, 0, 0, 4, 4, 4, 6, 6, 7, 7, 7, 9, 9, 1, 1, 1, 2, 2, 7, 7, 7, 9, 9, 1, 1, 1, 2, 2}},
    {"nearest_round_prefer_floor_asymmetric", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("round_prefer_floor")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1, 3, 3, 2, 2, 2, 8, 8, 8, 1, 1, 3, 3, 2, 2, 2, 8, 8, 8, 5, 5, 0, 0, 4, 4, 4, 6, 6, 6, 5, 5, 0, 0, 4, 4, 4, 6, 6, 6, 7, 7, 9, 9, 1, 1, 1, 2, 2, 2, 7, 7, 9, 9, 1, 1, 1, 2, 2, 2}},
    {"nearest_round_prefer_ceil_half_pixel", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}, {"nearest_mode", std::string("round_prefer_ceil")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1, 3, 3, 3, 2, 2, 8, 8, 8, 1, 1, 3, 3, 3, 2, 2, 8, 8, 8, 5, 5, 0, 0, 0, 4, 4, 6, 6, 6, 5, 5, 0, 0, 0, 4, 4, 6, 6, 6, 7, 7, 9, 9, 9, 1, 1, 2, 2, 2, 7, 7, 9, 9, 9, 1, 1, 2, 2, 2}},
    {"nearest_round_prefer_ceil_asymmetric", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("round_prefer_ceil")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1, 3, 3, 2, 2, 2, 8, 8, 8, 5, 5, 0, 0, 4, 4, 4, 6, 6, 6, 5, 5, 0, 0, 4, 4, 4, 6, 6, 6, 7, 7, 9, 9, 1, 1, 1, 2, 2, 2, 7, 7, 9, 9, 1, 1, 1, 2, 2, 2, 7, 7, 9, 9, 1, 1, 1, 2, 2, 2}},
    {"nearest_floor_half_pixel", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}, {"nearest_mode", std::string("floor")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1, 1, 1, 3, 3, 2, 2, 2, 8, 1, 1, 1, 1, 3, 3, 2, 2, 2, 8, 1, 1, 1, 1, 3, 3, 2, 2, 2, 8, 5, 5, 5, 5, 0, 0, 4, 4, 4, 6, 5, 5, 5, 5, 0, 0, 4, 4, 4, 6, 7, 7, 7, 7, 9, 9, 1, 1, 1, 2}},
    {"nearest_floor_asymmetric", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("floor")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1, 1, 3, 3, 2, 2, 2, 8, 8, 1, 1, 1, 3, 3, 2, 2, 2, 8, 8, 5, 5, 5, 0, 0, 4, 4, 4, 6, 6, 5, 5, 5, 0, 0, 4, 4, 4, 6, 6, 7, 7, 7, 9, 9, 1, 1, 1, 2, 2, 7, 7, 7, 9, 9, 1, 1, 1, 2, 2}},
    {"nearest_ceil_half_pixel", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("half_pixel")}, {"nearest_mode", std::string("ceil")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 3, 3, 3, 2, 2, 8, 8, 8, 8, 5, 0, 0, 0, 4, 4, 6, 6, 6, 6, 5, 0, 0, 0, 4, 4, 6, 6, 6, 6, 7, 9, 9, 9, 1, 1, 2, 2, 2, 2, 7, 9, 9, 9, 1, 1, 2, 2, 2, 2, 7, 9, 9, 9, 1, 1, 2, 2, 2, 2}},
    {"nearest_ceil_asymmetric", {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("ceil")}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 3, 3, 2, 2, 2, 8, 8, 8, 8, 5, 0, 0, 4, 4, 4, 6, 6, 6, 6, 5, 0, 0, 4, 4, 4, 6, 6, 6, 6, 7, 9, 9, 1, 1, 1, 2, 2, 2, 2, 7, 9, 9, 1, 1, 1, 2, 2, 2, 2, 7, 9, 9, 1, 1, 1, 2, 2, 2, 2}},
    {"cubic_exclude_outside_up_half_pixel", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel")}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {0.387763917, 0.814299941, 1.96366775, 3.1443069, 2.88516235, 1.81086767, 2.19864988, 5.10207653, 7.77947426, 8.80577183, 1.66399264, 1.74628973, 1.94675839, 2.18970108, 2.16050434, 2.02015352, 2.81267452, 5.2438817, 7.38523626, 8.22934055, 4.36651945, 3.71921182, 1.90839696, 0.164001584, 0.622924566, 2.46326017, 4.11470079, 5.54602623, 6.55192375, 7.01019001, 6.10697746, 5.46845198, 3.76829839, 1.98632812, 1.88519144, 2.80366445, 3.64385033, 4.36865759, 4.89189672, 5.12606239, 6.65669346, 6.76418304, 7.28209591, 7.41725111, 5.78145981, 2.99664235, 1.46198702, 1.86646628, 2.62325954, 2.82450724, 6.91717625, 7.37665844, 8.94117641, 9.98085308, 7.62061691, 3.08791161, 0.432232082, 0.685121179, 1.5518018, 1.73737502}},
    {"cubic_exclude_outside_down_half_pixel", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("half_pixel")}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 2, 3}, {1, 1, 2, 3}, {1.77198172, 2.04288316, 7.11151838, 6.82841301, 4.38321161, 2.52850151}},
    {"cubic_exclude_outside_up_align_corners", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("align_corners")}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1, 1, 2, 2.5}, {}, {1, 1, 6, 10}, {1, 1.58620715, 2.42857122, 3, 2.62963176, 1.92592442, 2, 3.85714245, 6.3103447, 8, 2.31343269, 2.05687094, 1.69962621, 1.54477549, 1.6984539, 2.08098292, 2.83582139, 4.42004299, 6.24163675, 7.47761297, 4.21259785, 2.89546537, 1.02530837, -0.0708671808, 0.675125003, 2.33362412, 3.85826778, 5.01462364, 5.96660328, 6.58267784, 5.58267784, 4.32066298, 2.50956202, 1.29921329, 1.61388278, 2.6634593, 3.6299212, 4.30511808, 4.85636616, 5.21259785, 6.47761297, 6.38857365, 6.21082115, 5.70895576, 4.55168533, 3.08347273, 2.14179134, 2.26359272, 2.86721563, 3.31343222, 7, 7.82758379, 8.92857075, 9, 6.74073839, 3.3703723, 1, 0.750000298, 1.44827688, 2}},
    {"cubic_exclude_outside_down_align_corners", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("align_corners")}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}}, 19, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {1, 1, 2, 3}, {1, 1, 2, 3}, {1, 2.25, 8, 7, 5.0625, 2}},
    {"linear_axes_not_larger", {{"mode", std::string("linear")}, {"axes", std::vector<int64_t>{2, 3}}, {"keep_aspect_ratio_policy", std::string("not_larger")}}, 18, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {5, 5}, {1, 1, 4, 5}, {1, 2.4000001, 2.5, 3.79999971, 8, 3.80000019, 1.76999986, 2.1500001, 4.35999966, 6.60000038, 6, 4.94999981, 3.5, 2.95000005, 4, 7, 8.39999962, 5, 1.29999995, 2}},
    {"linear_axes_not_smaller", {{"mode", std::string("linear")}, {"axes", std::vector<int64_t>{2, 3}}, {"keep_aspect_ratio_policy", std::string("not_smaller")}}, 18, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {}, {5, 5}, {1, 1, 5, 7}, {1, 1.79999995, 3, 2.39999986, 3.20000029, 6.80000114, 8, 2.60000014, 2.27999997, 1.79999995, 2.4000001, 3.68000054, 6.32000065, 7.19999981, 5, 2.99999976, 0, 2.40000057, 4.4000001, 5.60000038, 6, 6.19999981, 5.88000107, 5.40000153, 3.47999954, 2.47999954, 3.31999969, 3.59999943, 7, 7.80000019, 9, 4.19999886, 1.20000005, 1.80000019, 2}},
    {"nearest_axes_last", {{"mode", std::string("nearest")}, {"axes", std::vector<int64_t>{3}}}, 18, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {1.5}, {}, {1, 1, 3, 6}, {1, 1, 3, 2, 2, 8, 5, 5, 0, 4, 4, 6, 7, 7, 9, 1, 1, 2}},
    {"cubic_axes_crop", {{"mode", std::string("cubic")}, {"axes", std::vector<int64_t>{3, 2}}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}, 18, {1, 1, 3, 4}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {0.25, 0, 1, 0.5}, {}, {3, 4}, {1, 1, 4, 3}, {2.65234375, 1.69433594, 8, 1.55895281, 2.31630659, 7.59259224, 0.35771203, 3.0323267, 7.07407761, 0.7109375, 3.38720703, 6}},
    {"trilinear", {{"mode", std::string("linear")}}, 19, {2, 3, 4}, {0, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0, 7}, {}, {1.5, 0.699999988, 1.25}, {}, {3, 2, 5}, {1.28571439, 4.53571463, 5.10714293, 5.67857075, 8.92857075, 2.78571463, 4.93571424, 5.8214283, 4.58571434, 1.78571463, 3.60714293, 4.65714312, 5.85714245, 6.70357084, 6.92857075, 4.3214283, 5.37142897, 4.8035717, 3.64642859, 3.32142878, 5.9285717, 4.77857161, 6.60714245, 7.72857094, 4.92857122, 5.85714245, 5.80714273, 3.78571463, 2.70714283, 4.85714293}},
    // onnx reference; the onnx reference agrees.
    {"tricubic_asymmetric", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {2, 3, 4}, {0, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0, 7}, {}, {}, {3, 2, 5}, {3, 2, 5}, {0, 6.15199995, 4.30000019, 5.28399992, 10.6719999, 4.0625, 4.20574999, 6.65749979, 5.38374996, 1.54824996, 4.79629612, 4.01422215, 6.44325924, 7.96992588, 7.20770359, 4.38368034, 6.18884706, 4.83910418, 3.113132, 3.00563884, 7.77777767, 2.68533325, 7.77555561, 9.63955593, 5.05422211, 4.58333349, 7.42158318, 3.70875001, 1.70166671, 3.91158342}},
    // onnx reference; the onnx reference agrees.
    {"linear_batch_axis", {{"mode", std::string("linear")}}, 19, {3, 4, 1, 1}, {1, 3, 2, 8, 5, 0, 4, 6, 7, 9, 1, 2}, {}, {2, 1, 1, 1}, {}, {6, 4, 1, 1}, {1, 3, 2, 8, 2, 2.25, 2.5, 7.5, 4, 0.75, 3.5, 6.5, 5.5, 2.25, 3.25, 5, 6.5, 6.75, 1.75, 3, 7, 9, 1, 2}},
    // onnx reference; the onnx reference agrees.
    {"cubic_rank1", {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}}, 19, {5}, {0, 4, 1, 9, 3}, {}, {}, {8}, {8}, {0, 2.88818359, 3.4609375, 0.780273438, 5.28125, 8.94726562, 4.640625, 2.34082031}},
    // onnx reference; the onnx reference agrees.
    {"linear_rank1_down", {{"mode", std::string("linear")}}, 19, {5}, {0, 4, 1, 9, 3}, {}, {0.5}, {}, {2}, {2, 5}},
  };
  // clang-format on
  return cases;
}

TEST(Resize, MatchesOnnxRuntime) {
  for (const ResizeCase& c : resize_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = f32(c.shape, c.x);
    const Tensor roi = c.roi.empty() ? Tensor() : f32({static_cast<int64_t>(c.roi.size())}, c.roi);
    const Tensor scales =
        c.scales.empty() ? Tensor() : f32({static_cast<int64_t>(c.scales.size())}, c.scales);
    const Tensor sizes =
        c.sizes.empty() ? Tensor() : i64({static_cast<int64_t>(c.sizes.size())}, c.sizes);
    const OpResult result = run_op("Resize", {x, roi, scales, sizes}, c.attributes, 1, c.opset);
    EXPECT_EQ(result.inferred[0].shape, c.expected_shape);
    expect_close(result.outputs[0], f32(c.expected_shape, c.expected), 1e-5, 1e-5);
  }
}

// Large enough for the threaded path; values from ONNX Runtime (sum and samples).
TEST(Resize, ThreadedMatchesOnnxRuntime) {
  Tensor x = Tensor::allocate(DType::kFloat32, {1, 2, 40, 50});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>(i * 37 % 101) / 10;
  const std::vector<int64_t> samples = {0, 1, 97, 1000, 5000, 6143, 9000, 12287};
  struct Expected {
    const char* mode;
    double sum;
    std::vector<float> values;
  };
  const std::vector<Expected> expected = {
      {"linear",
       61446.4146,
       {0, 1.04062498f, 2.44062519f, 4.6968751f, 6.83020878f, 3.0999999f, 7.69771385f,
        9.89999962f}},
      {"cubic",
       61446.0227,
       {-0.681505561f, 0.463995993f, 2.34926987f, 3.86857009f, 7.39783287f, 1.69704986f,
        8.35778904f, 10.5815039f}},
      {"nearest", 61441.7, {0, 0, 0, 6, 6.0999999f, 3.0999999f, 9.39999962f, 9.89999962f}},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.mode);
    const Tensor y = resize(x, kNone, kNone, i64({4}, {1, 2, 64, 96}), mode(e.mode));
    ASSERT_EQ(y.shape(), (Shape{1, 2, 64, 96}));
    double sum = 0;
    for (int64_t i = 0; i < y.numel(); ++i) sum += y.data<float>()[i];
    EXPECT_NEAR(sum, e.sum, 1e-2);
    for (size_t i = 0; i < samples.size(); ++i) {
      EXPECT_NEAR(y.data<float>()[samples[i]], e.values[i], 1e-5) << samples[i];
    }
  }
}

TEST(Resize, NearestTakesEveryDtype) {
  const Tensor bytes = Tensor::from_vector(DType::kUInt8, {1, 3}, std::vector<uint8_t>{7, 200, 9});
  expect_equal(
      resize(bytes, kNone, f32({2}, {1, 2}), kNone),
      Tensor::from_vector(DType::kUInt8, {1, 6}, std::vector<uint8_t>{7, 7, 200, 200, 9, 9}));
  expect_equal(resize(i64({2, 1}, {-5, 1ll << 40}), kNone, kNone, i64({2}, {3, 2}),
                      {{"coordinate_transformation_mode", std::string("asymmetric")},
                       {"nearest_mode", std::string("ceil")}}),
               i64({3, 2}, {-5, -5, 1ll << 40, 1ll << 40, 1ll << 40, 1ll << 40}));
  // extrapolation_value in the tensor's dtype.
  expect_equal(resize(Tensor::from_vector(DType::kInt32, {2}, std::vector<int32_t>{3, 4}),
                      f32({2}, {0, 2}), kNone, i64({1}, {3}),
                      {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                       {"extrapolation_value", -2.5f}}),
               Tensor::from_vector(DType::kInt32, {3}, std::vector<int32_t>{3, 4, -2}));
}

TEST(Resize, LinearOfFloat64AndRefusalOfIntegers) {
  const Tensor doubles = Tensor::from_vector(DType::kFloat64, {2}, std::vector<double>{0, 1});
  expect_close(resize(doubles, kNone, kNone, i64({1}, {4}), mode("linear")),
               Tensor::from_vector(DType::kFloat64, {4}, std::vector<double>{0, 0.25, 0.75, 1}));
  const Tensor ints = Tensor::from_vector(DType::kInt32, {2}, std::vector<int32_t>{0, 1});
  try {
    resize(ints, kNone, kNone, i64({1}, {4}), mode("cubic"));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("test_Resize (Resize): cubic Resize of int32 has no CPU kernel"),
              std::string::npos)
        << message;
  }
}

TEST(Resize, ManyResizedAxes) {
  // Axes of size 1 sample one input element whatever the mode: 10 cubic axes take 1 tap each.
  const Tensor one = resize(f32(Shape(10, 1), {2.5f}), kNone, kNone,
                            i64({10}, std::vector<int64_t>(10, 2)), mode("cubic"));
  ASSERT_EQ(one.numel(), 1024);
  for (int64_t i = 0; i < one.numel(); ++i) ASSERT_NEAR(one.data<float>()[i], 2.5f, 1e-6);
  // 4 taps on each of 9 axes is more than the kernel takes.
  Tensor x = Tensor::zeros(DType::kFloat32, Shape(9, 4));
  try {
    resize(x, kNone, kNone, i64({9}, std::vector<int64_t>(9, 5)), mode("cubic"));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("too many axes"), std::string::npos) << error.what();
  }
}

TEST(Resize, EmptyOutputs) {
  EXPECT_EQ(resize(f32({1, 0, 2}, {}), kNone, f32({3}, {1, 2, 2}), kNone, mode("linear")).shape(),
            (Shape{1, 0, 4}));
  EXPECT_EQ(resize(f32({1, 2}, {1, 2}), kNone, kNone, i64({2}, {1, 0}), mode("cubic")).shape(),
            (Shape{1, 0}));
}

}  // namespace
}  // namespace tandem::testing
