// The StableHLO lowering of reductions, Softmax, LogSoftmax and LayerNormalization against the
// CPU backend on the xla-cpu-pjrt plugin.
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_device.h"
#include "ir/infer.h"
#include "pjrt_op_util.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {
namespace {

Tensor axes(std::vector<int64_t> values) {
  const auto size = static_cast<int64_t>(values.size());
  return Tensor::from_vector<int64_t>(DType::kInt64, {size}, values);
}

// A Reduce* node with constant `axes` (the opset 13/18 input form).
OpCase reduce(std::string op_type, Tensor data, std::vector<int64_t> reduced, int64_t keepdims,
              double tolerance = 1e-5) {
  return {std::move(op_type),
          {std::move(data), axes(std::move(reduced))},
          {{"keepdims", keepdims}},
          {false, true},
          1,
          tolerance,
          tolerance};
}

constexpr const char* kFloatReductions[] = {"ReduceSum", "ReduceMean",     "ReduceMax",
                                            "ReduceMin", "ReduceProd",     "ReduceL1",
                                            "ReduceL2",  "ReduceSumSquare"};

TEST(LowerReduction, FloatReductionsOverOneAxis) {
  for (const char* op : kFloatReductions) {
    SCOPED_TRACE(op);
    for (int64_t keepdims : {0, 1}) {
      expect_matches_cpu(reduce(op, random(DType::kFloat32, {3, 4, 5}, 1), {1}, keepdims));
    }
  }
}

TEST(LowerReduction, FloatReductionsOverSeveralNegativeAxes) {
  for (const char* op : kFloatReductions) {
    SCOPED_TRACE(op);
    for (int64_t keepdims : {0, 1}) {
      expect_matches_cpu(reduce(op, random(DType::kFloat32, {2, 3, 4, 5}, 2), {-1, 0}, keepdims));
    }
  }
}

TEST(LowerReduction, EmptyAxesReduceEverything) {
  for (const char* op : kFloatReductions) {
    SCOPED_TRACE(op);
    expect_matches_cpu({op, {random(DType::kFloat32, {3, 4}, 3)}, {{"keepdims", int64_t{0}}}});
    expect_matches_cpu({op, {random(DType::kFloat32, {3, 4}, 3)}});
  }
}

TEST(LowerReduction, NoopWithEmptyAxesAppliesOnlyTheElementwisePart) {
  // As the CPU kernel: nothing is reduced, but L2 still takes |x|, SumSquare x^2, LogSum log x.
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu({op,
                        {random(DType::kFloat32, {3, 4}, 4), axes({})},
                        {{"noop_with_empty_axes", int64_t{1}}},
                        {false, true}});
  }
}

TEST(LowerReduction, LogReductions) {
  // LogSum of positive sums; LogSumExp of values far beyond exp's range, shifted by the max.
  Tensor positive = random(DType::kFloat32, {3, 4, 5}, 5);
  for (int64_t i = 0; i < positive.numel(); ++i) {
    positive.data<float>()[i] = std::abs(positive.data<float>()[i]) + 0.1f;
  }
  for (int64_t keepdims : {0, 1}) {
    expect_matches_cpu(reduce("ReduceLogSum", positive, {1}, keepdims));
    expect_matches_cpu(reduce("ReduceLogSum", positive, {-1, 0}, keepdims));
    expect_matches_cpu(reduce("ReduceLogSumExp", random_scaled({3, 4, 5}, 200, 6), {1}, keepdims));
    expect_matches_cpu(reduce("ReduceLogSumExp", random_scaled({3, 4, 5}, 3, 7), {2, 0}, keepdims));
  }
  expect_matches_cpu({"ReduceLogSumExp", {random_scaled({4, 6}, 5, 8)}});
}

TEST(LowerReduction, LogSumExpOfNonFiniteRows) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rows: all -inf, one +inf, a NaN, finite with a -inf.
  expect_matches_cpu(
      reduce("ReduceLogSumExp",
             Tensor::from_vector<float>(DType::kFloat32, {4, 3},
                                        {-inf, -inf, -inf, 1, inf, 2, 0, nan, 1, 3, -inf, 4}),
             {1}, 0));
}

TEST(LowerReduction, IntegerReductionsAreExact) {
  const Tensor int32 = Tensor::from_vector<int32_t>(DType::kInt32, {2, 3, 2},
                                                    {-7, 3, 0, 12, -5, 5, 9, -2, 4, 4, -11, 6});
  const Tensor int64 =
      Tensor::from_vector<int64_t>(DType::kInt64, {3, 4},
                                   {std::numeric_limits<int64_t>::max(), -3, 8, 1,
                                    std::numeric_limits<int64_t>::min(), 2, 2, -9, 5, 0, -1, 7});
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean",
                         "ReduceL1", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    for (int64_t keepdims : {0, 1}) {
      expect_matches_cpu(reduce(op, int32, {1}, keepdims));
      expect_matches_cpu(reduce(op, int32, {-1, 0}, keepdims));
      expect_matches_cpu(reduce(op, random(DType::kInt32, {4, 5}, 9), {0}, keepdims));
    }
    expect_matches_cpu({op, {int32}});
  }
  // int64 extremes: Max and Min need exact identities; sums wrap as on the CPU.
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu(reduce(op, int64, {0}, 0));
    expect_matches_cpu(reduce(op, int64, {-1}, 1));
  }
}

TEST(LowerReduction, IntegerMeanWidensAndTruncates) {
  // int32 sums past 2^31 are divided in int64 as on the CPU; the quotient truncates toward 0.
  const int32_t big = std::numeric_limits<int32_t>::max();
  expect_matches_cpu(reduce(
      "ReduceMean", Tensor::from_vector<int32_t>(DType::kInt32, {2, 3}, {big, big, big, -7, 2, 0}),
      {1}, 0));
}

TEST(LowerReduction, MaxAndMinOfNarrowTypes) {
  const Tensor int8 =
      Tensor::from_vector<int8_t>(DType::kInt8, {2, 3}, {-128, -128, -5, 127, 3, 127});
  const Tensor uint8 = Tensor::from_vector<uint8_t>(DType::kUInt8, {2, 3}, {0, 0, 7, 255, 3, 255});
  const Tensor flags =
      Tensor::from_vector<bool>(DType::kBool, {2, 3}, {false, false, false, true, false, true});
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    for (const Tensor& data : {int8, uint8, flags}) {
      expect_matches_cpu(reduce(op, data, {1}, 0));
      expect_matches_cpu(reduce(op, data, {0}, 1));
    }
  }
}

TEST(LowerReduction, EmptySetsGiveTheIdentities) {
  // Sum 0, Max -inf, LogSum -inf, float Mean NaN and integer Mean 0, as on the CPU.
  for (const char* op : kFloatReductions) {
    SCOPED_TRACE(op);
    expect_matches_cpu(reduce(op, Tensor::zeros(DType::kFloat32, {0, 3}), {0}, 0));
  }
  expect_matches_cpu(reduce("ReduceLogSum", Tensor::zeros(DType::kFloat32, {0, 3}), {0}, 0));
  expect_matches_cpu(reduce("ReduceLogSumExp", Tensor::zeros(DType::kFloat32, {0, 3}), {0}, 0));
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu(reduce(op, Tensor::zeros(DType::kInt32, {0, 3}), {0}, 1));
  }
}

TEST(LowerReduction, RefusesAxesThatAreNotConstant) {
  // With keepdims the output shape stays static when every dim is 1.
  EXPECT_EQ(refusal({"ReduceSum", {random(DType::kFloat32, {1, 1}, 1), axes({1})}}),
            "input 1 of ReduceSum must be a constant");
}

TEST(LowerReduction, RefusesIntegerDataForFloatResults) {
  for (const char* op : {"ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
    EXPECT_EQ(refusal(reduce(op, random(DType::kInt32, {3, 4}, 1), {1}, 0)), "integer data") << op;
  }
}

TEST(LowerReduction, ArgMaxAndArgMinOfFloats) {
  const Tensor data = random(DType::kFloat32, {3, 4, 5}, 10);
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      for (int64_t keepdims : {0, 1}) {
        expect_matches_cpu({op, {data}, {{"axis", axis}, {"keepdims", keepdims}}});
      }
    }
    expect_matches_cpu({op, {data}});  // axis 0, keepdims 1 by default
  }
}

TEST(LowerReduction, ArgMaxAndArgMinTiesPickTheFirstOrLastIndex) {
  // Integers in [0, 4) tie often; both the innermost axis and an outer one.
  const Tensor int32 = random(DType::kInt32, {6, 7, 8}, 11);
  const Tensor int64 = random(DType::kInt64, {9, 5}, 12);
  std::vector<float> tied_values;
  for (double v : random(DType::kInt32, {5, 8}, 13).to_doubles()) {
    tied_values.push_back(static_cast<float>(v) - 1.5f);
  }
  const Tensor floats = Tensor::from_vector<float>(DType::kFloat32, {5, 8}, tied_values);
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    for (int64_t last : {0, 1}) {
      for (int64_t axis : {0, 1, -1}) {
        expect_matches_cpu(
            {op, {int32}, {{"axis", axis}, {"keepdims", int64_t{0}}, {"select_last_index", last}}});
      }
      for (int64_t axis : {0, 1}) {
        for (const Tensor& data : {int64, floats}) {
          expect_matches_cpu({op, {data}, {{"axis", axis}, {"select_last_index", last}}});
        }
      }
    }
  }
}

TEST(LowerReduction, ArgMaxOfExtremesAndNarrowTypes) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  const int64_t highest = std::numeric_limits<int64_t>::max();
  const Tensor floats = Tensor::from_vector<float>(DType::kFloat32, {3, 3},
                                                   {-inf, -inf, -inf, inf, 1, inf, 2, -inf, 2});
  const Tensor int64 = Tensor::from_vector<int64_t>(DType::kInt64, {2, 3},
                                                    {lowest, lowest, lowest, highest, 0, highest});
  const Tensor uint8 = Tensor::from_vector<uint8_t>(DType::kUInt8, {2, 3}, {0, 255, 255, 3, 0, 0});
  const Tensor int8 = Tensor::from_vector<int8_t>(DType::kInt8, {2, 3}, {-128, 127, -128, 5, 5, 1});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    for (const Tensor& data : {floats, int64, uint8, int8}) {
      for (int64_t last : {0, 1}) {
        expect_matches_cpu({op, {data}, {{"axis", int64_t{1}}, {"select_last_index", last}}});
      }
    }
  }
}

TEST(LowerReduction, SoftmaxAndLogSoftmaxAlongEachAxis) {
  const Tensor data = random_scaled({2, 3, 6}, 4, 14);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu({op, {data}});  // axis -1
    for (int64_t axis : {0, 1, -2}) {
      expect_matches_cpu({op, {data}, {{"axis", axis}}});
    }
    // Logits far past exp's range only work shifted by the maximum.
    expect_matches_cpu(
        {op, {random_scaled({4, 7}, 300, 15)}, {{"axis", int64_t{1}}}, {}, 1, 1e-5, 1e-5});
  }
}

TEST(LowerReduction, SoftmaxOfMaskedRows) {
  const float inf = std::numeric_limits<float>::infinity();
  // An attention mask: -inf entries give 0; a row of only -inf gives NaN, as on the CPU.
  const Tensor data = Tensor::from_vector<float>(
      DType::kFloat32, {3, 4}, {1, -inf, 2, -inf, -inf, -inf, -inf, -inf, 0.5f, 0.25f, 0, -1});
  expect_matches_cpu({"Softmax", {data}});
  expect_matches_cpu({"LogSoftmax", {data}});
}

TEST(LowerReduction, LayerNormalizationLastAxis) {
  const Tensor x = random_scaled({2, 3, 8}, 3, 16);
  const Tensor scale = random(DType::kFloat32, {8}, 17);
  const Tensor bias = random(DType::kFloat32, {8}, 18);
  expect_matches_cpu({"LayerNormalization", {x, scale, bias}, {}, {}, 1, 1e-5, 1e-5});
  expect_matches_cpu({"LayerNormalization", {x, scale}, {}, {}, 1, 1e-5, 1e-5});
  expect_matches_cpu({"LayerNormalization",
                      {x, scale, bias},
                      {{"epsilon", 1e-3f}, {"axis", int64_t{-1}}},
                      {},
                      1,
                      1e-5,
                      1e-5});
}

TEST(LowerReduction, LayerNormalizationOverSeveralAxesWithStatistics) {
  const Tensor x = random_scaled({2, 3, 4, 5}, 2, 19);
  for (int64_t axis : {1, -2}) {
    SCOPED_TRACE(axis);
    // Scale over the normalised dims, bias broadcast from a trailing dim.
    const Tensor scale = random(DType::kFloat32, {4, 5}, 20);
    const Tensor bias = random(DType::kFloat32, {5}, 21);
    expect_matches_cpu(
        {"LayerNormalization", {x, scale, bias}, {{"axis", axis}}, {}, 3, 1e-5, 1e-5});
    expect_matches_cpu(
        {"LayerNormalization", {x, scale, Tensor()}, {{"axis", axis}}, {}, 2, 1e-5, 1e-5});
  }
}

// A graph built node by node, at any opset; every node output is a graph output.
class TestGraph {
 public:
  explicit TestGraph(int opset) { graph_.opset = opset; }

  int input(const Tensor& value) {
    const int id =
        graph_.add_value("in" + std::to_string(fed_.size()), {value.dtype(), value.shape()});
    graph_.inputs.push_back(id);
    fed_.push_back(value);
    return id;
  }
  void node(std::string op_type, std::vector<int> inputs,
            std::map<std::string, Attribute, std::less<>> attributes = {}) {
    Node node;
    node.name = op_type + std::to_string(graph_.nodes.size());
    node.op_type = std::move(op_type);
    node.inputs = std::move(inputs);
    node.attributes = std::move(attributes);
    node.outputs.push_back(graph_.add_value("out" + std::to_string(graph_.nodes.size())));
    graph_.outputs.push_back(node.outputs.back());
    graph_.nodes.push_back(std::move(node));
  }
  // The graph's outputs; on the plugin the graph runs as one module.
  std::vector<Tensor> run_on(Device& device) {
    if (!inferred_) {
      graph_.sort_topologically();
      infer_graph(graph_);
      inferred_ = true;
    }
    GraphExecutor executor(graph_, device);
    std::vector<Tensor> outputs = executor.run(fed_);
    for (Tensor& output : outputs) output = output.to_host();
    return outputs;
  }
  std::vector<Tensor> run_on_plugin() { return run_on(cpu_plugin_device()); }
  std::vector<Tensor> run_on_cpu() {
    cpu::CpuDevice cpu;
    return run_on(cpu);
  }

 private:
  Graph graph_;
  std::vector<Tensor> fed_;
  bool inferred_ = false;
};

void expect_near(const Tensor& actual, const Tensor& expected, double tolerance) {
  ASSERT_EQ(actual.shape(), expected.shape());
  const std::vector<double> a = actual.to_doubles(), e = expected.to_doubles();
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_NEAR(a[i], e[i], tolerance * (1 + std::abs(e[i]))) << "[" << i << "]";
  }
}

TEST(LowerReduction, AxesAttributeOfOlderOpsets) {
  TestGraph graph(11);
  const int x = graph.input(random(DType::kFloat32, {3, 4, 5}, 22));
  graph.node("ReduceSum", {x}, {{"axes", std::vector<int64_t>{-1, 0}}, {"keepdims", int64_t{0}}});
  graph.node("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}});
  graph.node("ReduceLogSumExp", {x}, {{"axes", std::vector<int64_t>{2}}});
  graph.node("ReduceMax", {x}, {{"keepdims", int64_t{0}}});  // no axes: all
  const std::vector<Tensor> actual = graph.run_on_plugin();
  const std::vector<Tensor> expected = graph.run_on_cpu();
  ASSERT_EQ(actual.size(), 4u);
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE(i);
    expect_near(actual[i], expected[i], 1e-5);
  }
}

TEST(LowerReduction, SeveralArgReductionsInOneModule) {
  // Each variadic reduce writes its region with the same block argument names.
  TestGraph graph(21);
  const int x = graph.input(random(DType::kInt32, {4, 6}, 23));
  graph.node("ArgMax", {x}, {{"axis", int64_t{1}}});
  graph.node("ArgMin", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}});
  graph.node("ArgMax", {x}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}});
  const std::vector<Tensor> actual = graph.run_on_plugin();
  const std::vector<Tensor> expected = graph.run_on_cpu();
  ASSERT_EQ(actual.size(), 3u);
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE(i);
    expect_near(actual[i], expected[i], 0);
  }
}

Tensor to_half(const Tensor& floats) {
  std::vector<uint16_t> bits;
  for (double v : floats.to_doubles()) bits.push_back(float_to_half(static_cast<float>(v)));
  return Tensor::from_vector<uint16_t>(DType::kFloat16, floats.shape(), bits);
}

Tensor rounded_to_half(const Tensor& floats) {
  std::vector<float> values;
  for (double v : to_half(floats).to_doubles()) values.push_back(static_cast<float>(v));
  return Tensor::from_vector<float>(DType::kFloat32, floats.shape(), values);
}

TEST(LowerReduction, HalfPrecisionComputesInFloat) {
  // The CPU backend has no float16 kernels: compare with it in float32 on the same values.
  const Tensor x = rounded_to_half(random_scaled({4, 64}, 4, 24));
  const Tensor scale = rounded_to_half(random(DType::kFloat32, {64}, 25));
  const auto build = [&](bool half) {
    const auto as = [half](const Tensor& t) { return half ? to_half(t) : t; };
    TestGraph graph(21);
    const int input = graph.input(as(x));
    const int gamma = graph.input(as(scale));
    graph.node("ReduceSum", {input}, {{"keepdims", int64_t{0}}});
    graph.node("ReduceMean", {input});
    graph.node("ReduceLogSumExp", {input});
    graph.node("Softmax", {input});
    graph.node("LogSoftmax", {input});
    graph.node("LayerNormalization", {input, gamma});
    return graph;
  };
  auto half = build(true);
  auto single = build(false);
  const std::vector<Tensor> actual = half.run_on_plugin();
  const std::vector<Tensor> expected = single.run_on_cpu();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(actual[i].dtype(), DType::kFloat16);
    expect_near(actual[i], expected[i], 2e-3);  // one float16 rounding of the result
  }
}

}  // namespace
}  // namespace tandem::pjrt::testing
