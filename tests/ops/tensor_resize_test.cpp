// Tests of Resize (tensor family): output sizes and validation of its schema, and its CPU kernel
// against ONNX Runtime for every mode x coordinate transformation mode.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
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
  std::string name;
  Attributes attributes;
  int opset = 0;
  Shape shape;
  std::vector<float> x;
  std::vector<float> roi;
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  Shape expected_shape;
  std::vector<float> expected;
};

// A Resize attribute as tests/ops/resize_cases.py writes it: a string, an integer, a float or a
// list of integers (ONNX's helper.make_node types them so).
Attribute attribute_of(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) return value.get<float>();
  if (value.is_array()) return value.get<std::vector<int64_t>>();
  throw std::runtime_error("unexpected attribute value " + value.dump());
}

// Expected values from ONNX Runtime 1.20, in tests/ops/resize_cases.json (written by
// tests/ops/resize_cases.py; each case's "note" says where the onnx reference evaluator differs
// or gave the values). Read at run time: as a C++ initializer this table took GCC minutes to
// compile under the sanitizers.
std::vector<ResizeCase> resize_cases() {
  // $TANDEM_SOURCE where the tests run away from the tree they were built from (tests/zoo_cases.h).
  const char* moved = std::getenv("TANDEM_SOURCE");
  const std::string path =
      std::string(moved ? moved : TANDEM_SOURCE_DIR) + "/tests/ops/resize_cases.json";
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  const nlohmann::json json = nlohmann::json::parse(file);
  std::vector<ResizeCase> cases;
  for (const nlohmann::json& c : json.at("cases")) {
    ResizeCase& r = cases.emplace_back();
    r.name = c.at("name").get<std::string>();
    for (const auto& [key, value] : c.at("attributes").items()) {
      r.attributes.emplace(key, attribute_of(value));
    }
    r.opset = c.at("opset").get<int>();
    r.shape = c.at("shape").get<Shape>();
    r.x = c.at("x").get<std::vector<float>>();
    r.roi = c.at("roi").get<std::vector<float>>();
    r.scales = c.at("scales").get<std::vector<float>>();
    r.sizes = c.at("sizes").get<std::vector<int64_t>>();
    r.expected_shape = c.at("expected_shape").get<Shape>();
    r.expected = c.at("expected").get<std::vector<float>>();
  }
  return cases;
}

TEST(Resize, MatchesOnnxRuntime) {
  const std::vector<ResizeCase> cases = resize_cases();
  // Every case of the script, none lost: 6 coordinate modes x 3 modes x 3 targets, then 8
  // nearest modes, 4 cubic exclude_outside, 4 of opset 18's axes and 5 other ranks.
  ASSERT_EQ(cases.size(), 75u);
  for (const ResizeCase& c : cases) {
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
