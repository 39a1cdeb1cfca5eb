#include "devices/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "ir/error.h"

namespace tandem {
namespace {

// Named after the test as well: ctest runs each test as a process of its own, in parallel, and
// two of them writing one file would read each other's.
std::string temp_path(const std::string& name) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return (std::filesystem::path(::testing::TempDir()) / (test + "_" + name)).string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

CalibrationProfile sample_profile() {
  CalibrationProfile profile;
  profile.device_name = "cpu: test CPU, 2 threads";
  profile.threads = 2;
  profile.figures.matrix_flops[static_cast<size_t>(Precision::kFp32)] = {
      1.75e11, "calibration p.json: best GEMM", ""};
  profile.figures.vector_flops[static_cast<size_t>(Precision::kFp32)] = {
      3.25e9, "calibration p.json: Tanh", ""};
  profile.figures.memory_bandwidth = {1.2345678901234e10, "calibration p.json: Add", ""};
  profile.figures.launch_overhead = {1.5e-6, "calibration p.json: chain", "one thread"};
  profile.figures.memory_bytes = {2.4e10, "calibration p.json: sysconf", ""};
  profile.host_link_bandwidth = {9.5e9, "calibration p.json: memcpy", ""};
  profile.gemm_curve = {{32, 32, 32, 2.5e-6},
                        {1024, 1024, 1024, 0.0117},
                        {1, 1024, 1024, 3e-5},
                        {64, 64, 64, 2.1e-5, 8}};
  profile.op_element_curves = {{"Softmax", {{4096, 3e-6, 256}, {4096, 6e-6, 16}}},
                               {"Transpose", {{4096, 1e-6}}}};
  profile.bandwidth_curve = {{49152, 3.5e-7}, {201326592, 0.0195}};
  profile.op_seconds = {{"Relu(float32[2x3])->(float32[2x3]){}", 4e-7},
                        {"MatMul(float32[2x256],float32[256x10])->(float32[2x10]){}", 2.5e-6}};
  profile.measurements = {{"gemm 32x32x32", 2.6e10, "FLOP/s", "MatMul, median"}};
  return profile;
}

// A valid profile's JSON with one line replaced, for the bad-input cases.
std::string profile_text_with(const std::string& from, const std::string& to) {
  const std::string path = temp_path("valid.json");
  write_profile(path, sample_profile());
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Reading `text` from a file fails with an InputError naming the file and saying `expect`.
void expect_rejected(const std::string& text, const std::string& expect) {
  const std::string path = temp_path("bad.json");
  write_text(path, text);
  try {
    read_profile(path);
    FAIL() << "accepted a bad profile; expected: " << expect;
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), path);
    EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
  }
}

TEST(Profile, RoundTripKeepsFiguresCurveAndOpTimes) {
  const CalibrationProfile written = sample_profile();
  const std::string path = temp_path("round_trip.json");
  write_profile(path, written);
  const CalibrationProfile read = read_profile(path);
  EXPECT_EQ(read.version, 1);
  EXPECT_EQ(read.device_name, written.device_name);
  EXPECT_EQ(read.kind, DeviceKind::kCpu);
  EXPECT_EQ(read.threads, 2);
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    EXPECT_EQ(read.figures.matrix_flops[p].value, written.figures.matrix_flops[p].value) << p;
    EXPECT_EQ(read.figures.matrix_flops[p].source, written.figures.matrix_flops[p].source) << p;
    EXPECT_EQ(read.figures.vector_flops[p].value, written.figures.vector_flops[p].value) << p;
  }
  EXPECT_EQ(read.figures.memory_bandwidth.value, written.figures.memory_bandwidth.value);
  EXPECT_EQ(read.figures.memory_bandwidth.source, written.figures.memory_bandwidth.source);
  EXPECT_EQ(read.figures.launch_overhead.value, written.figures.launch_overhead.value);
  EXPECT_EQ(read.figures.launch_overhead.note, "one thread");
  EXPECT_EQ(read.figures.memory_bytes.value, written.figures.memory_bytes.value);
  EXPECT_FALSE(read.figures.price_per_hour.known());
  EXPECT_EQ(read.host_link_bandwidth.value, written.host_link_bandwidth.value);
  ASSERT_EQ(read.gemm_curve.size(), written.gemm_curve.size());
  for (size_t i = 0; i < read.gemm_curve.size(); ++i) {
    EXPECT_EQ(read.gemm_curve[i].m, written.gemm_curve[i].m);
    EXPECT_EQ(read.gemm_curve[i].n, written.gemm_curve[i].n);
    EXPECT_EQ(read.gemm_curve[i].k, written.gemm_curve[i].k);
    EXPECT_EQ(read.gemm_curve[i].seconds, written.gemm_curve[i].seconds);
    EXPECT_EQ(read.gemm_curve[i].batch, written.gemm_curve[i].batch);
  }
  EXPECT_EQ(read.gemm_curve.back().batch, 8);
  // A kind along rows keeps each point's row length; another kind has none.
  ASSERT_EQ(read.op_element_curves.at("Softmax").size(), 2u);
  EXPECT_EQ(read.op_element_curves.at("Softmax")[0].row, 256);
  EXPECT_EQ(read.op_element_curves.at("Softmax")[1].row, 16);
  EXPECT_EQ(read.op_element_curves.at("Softmax")[1].seconds, 6e-6);
  EXPECT_EQ(read.op_element_curves.at("Transpose")[0].row, 0);
  ASSERT_EQ(read.bandwidth_curve.size(), 2u);
  EXPECT_EQ(read.bandwidth_curve[1].bytes, 201326592);
  EXPECT_EQ(read.bandwidth_curve[1].seconds, 0.0195);
  EXPECT_EQ(read.op_seconds, written.op_seconds);
  ASSERT_EQ(read.measurements.size(), 1u);
  EXPECT_EQ(read.measurements[0].name, "gemm 32x32x32");
  EXPECT_EQ(read.measurements[0].value, 2.6e10);
}

TEST(Profile, MissingFileNamesTheFile) {
  const std::string path = temp_path("no_such_profile.json");
  try {
    read_profile(path);
    FAIL() << "read a file that does not exist";
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), path);
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

TEST(Profile, NotJsonNamesTheLine) {
  expect_rejected("{\n  \"format\": \"tandem-profile\",\n  oops\n}\n", "line 3");
}

TEST(Profile, TruncatedFileIsRejected) {
  const std::string text = profile_text_with("\"op_seconds\"", "\"op_seconds\"");
  expect_rejected(text.substr(0, text.size() / 2), "not valid JSON");
}

TEST(Profile, NumberBeyondADoubleIsRejected) {
  // nlohmann's parser throws out_of_range, not parse_error, for these.
  expect_rejected(profile_text_with("\"version\": 1", "\"version\": 1e400"), "not valid JSON");
}

TEST(Profile, WrongVersionIsRejected) {
  expect_rejected(profile_text_with("\"version\": 1", "\"version\": 2"),
                  "version 2 is not supported");
}

TEST(Profile, NegativeFigureNamesTheField) {
  expect_rejected(profile_text_with("12345678901.234", "-12345678901.234"),
                  "figures.memory_bandwidth.value");
}

TEST(Profile, NonPositiveOpTimeNamesTheSignature) {
  expect_rejected(profile_text_with("4e-07", "0"), "op_seconds[\"Relu(float32[2x3])");
}

TEST(Profile, MissingFieldIsNamed) {
  expect_rejected(profile_text_with("\"gemm_curve\"", "\"gemm_curves\""),
                  "field 'gemm_curve': missing");
}

TEST(Profile, ZeroBandwidthPointIsRejected) {
  expect_rejected(profile_text_with("0.0195", "0"), "bandwidth_curve[1].seconds");
}

TEST(Profile, UnknownDepthwiseLayoutIsRejected) {
  expect_rejected(profile_text_with("\"op_seconds\"",
                                    "\"depthwise_curves\": {\"nhwc-nhcw\": []}, \"op_seconds\""),
                  "depthwise_curves[\"nhwc-nhcw\"]': expected nchw-nchw");
}

TEST(Profile, NegativeOpOverheadIsRejected) {
  expect_rejected(
      profile_text_with("\"op_seconds\"", "\"op_overheads\": {\"Conv\": -1}, \"op_seconds\""),
      "op_overheads[\"Conv\"]");
}

TEST(Profile, ElementCurvePointWithoutTimeIsRejected) {
  expect_rejected(
      profile_text_with("\"op_seconds\"",
                        "\"op_element_curves\": {\"Pad\": [{\"elements\": 4096, \"seconds\": 0}]}, "
                        "\"op_seconds\""),
      "op_element_curves[\"Pad\"][0].seconds");
}

TEST(Profile, ElementCurvePointOfRowsOfNothingIsRejected) {
  expect_rejected(profile_text_with("\"row\": 16", "\"row\": 0"),
                  "op_element_curves[\"Softmax\"][1].row");
}

TEST(Profile, GemmPointOfABatchOfNoProductsIsRejected) {
  expect_rejected(profile_text_with("\"batch\": 8", "\"batch\": 0"), "gemm_curve[3].batch");
}

TEST(Profile, StreamedProductOfAShapeBeyondAnIntegerIsRejected) {
  // A product's sides become a GEMM shape: 1e300 rows is no integer the cost model can take.
  expect_rejected(
      profile_text_with("\"op_seconds\"",
                        "\"streamed_product_points\": [{\"m\": 1e300, \"k\": 512, \"n\": 512, "
                        "\"run_weight_bytes\": 16777216, \"seconds\": 1e-4}], \"op_seconds\""),
      "streamed_product_points[0].m");
}

TEST(Profile, RunCurvePointWithoutRunsIsRejected) {
  expect_rejected(
      profile_text_with("\"op_seconds\"",
                        "\"op_run_curves\": {\"Gather\": [{\"runs\": 0, \"seconds\": 1e-6}]}, "
                        "\"op_seconds\""),
      "op_run_curves[\"Gather\"][0].runs");
}

TEST(Profile, ProductReadsAndWritesAndHandOffsMayCostNothingExtraButNotLessThanNothing) {
  for (const std::string curve : {"product_output_read_curve", "product_input_write_curve",
                                  "cross_core_spread_curve", "cross_core_gather_curve"}) {
    const auto with_point = [&](const std::string& seconds) {
      return profile_text_with("\"op_seconds\"",
                               "\"" + curve + "\": [{\"bytes\": 4194304, \"seconds\": " + seconds +
                                   "}], \"op_seconds\"");
    };
    const std::string path = temp_path(curve + ".json");
    write_text(path, with_point("0"));
    const CalibrationProfile read = read_profile(path);
    const std::map<std::string, const std::vector<CalibrationProfile::BandwidthPoint>*> curves = {
        {"product_output_read_curve", &read.product_output_read_curve},
        {"product_input_write_curve", &read.product_input_write_curve},
        {"cross_core_spread_curve", &read.cross_core_spread_curve},
        {"cross_core_gather_curve", &read.cross_core_gather_curve}};
    const auto& points = *curves.at(curve);
    ASSERT_EQ(points.size(), 1u) << curve;
    EXPECT_EQ(points[0].seconds, 0) << curve;
    expect_rejected(with_point("-1e-6"), curve + "[0].seconds");
  }
}

TEST(Profile, OtherJsonIsNotAProfile) { expect_rejected("{\"devices\": []}", "field 'format'"); }

}  // namespace
}  // namespace tandem
