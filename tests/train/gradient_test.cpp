// Every gradient rule against central finite differences: one op on random inputs, the loss a
// random weighting of its outputs (sum of y * r), each gradient element compared with
// (loss(x + h) - loss(x - h)) / 2h, all run by the CPU backend's kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backends/cpu/cpu_device.h"
#include "ir/error.h"
#include "runtime/executor.h"
#include "train/autodiff.h"
#include "train/graph_builder.h"

namespace tandem::train {
namespace {

struct Input {
  Tensor value;
  bool differentiate = true;
};

struct Case {
  std::string op;
  std::vector<Input> inputs;
  GraphBuilder::Attributes attributes = {};
  int outputs = 1;
  int opset = 17;
};

Tensor uniform(Shape shape, float low, float high, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Distinct values, at least 0.05 apart: no tie in a max and no kink within the step.
Tensor distinct(Shape shape, uint64_t seed, float offset = 0) {
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(shape));
  std::vector<int64_t> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] =
        0.05f * static_cast<float>(order[static_cast<size_t>(i)] - t.numel() / 2) + 0.025f + offset;
  return t;
}

Tensor ints(Shape shape, std::vector<int64_t> values) {
  return Tensor::from_vector(DType::kInt64, std::move(shape), values);
}

Input constant(Tensor value) { return {std::move(value), false}; }

double loss_of(GraphExecutor& executor, const std::vector<Tensor>& inputs) {
  return executor.run(inputs)[0].to_doubles()[0];
}

void check(const Case& c, double step = 1e-2, double tolerance = 2e-2) {
  Graph graph;
  graph.opset = c.opset;
  GraphBuilder b(graph, "test");
  std::vector<int> ids, wrt;
  std::vector<Tensor> feed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& value = c.inputs[i].value;
    if (!value.defined()) {
      ids.push_back(-1);
      continue;
    }
    if (c.inputs[i].differentiate) {
      const int id = graph.add_value("x" + std::to_string(i), {value.dtype(), value.shape()});
      graph.inputs.push_back(id);
      ids.push_back(id);
      wrt.push_back(id);
      feed.push_back(value);
    } else {
      ids.push_back(b.constant(value));
    }
  }
  const std::vector<int> outputs = b.add_multi(c.op, ids, c.attributes, c.outputs);
  int loss = -1;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!is_floating(b.dtype(outputs[k]))) continue;
    const int weights = b.constant(uniform(b.shape(outputs[k]), -1, 1, 100 + k));
    std::vector<int64_t> all(b.shape(outputs[k]).size());
    std::iota(all.begin(), all.end(), 0);
    const int term = all.empty() ? b.mul(outputs[k], weights)
                                 : b.reduce_sum(b.mul(outputs[k], weights), all, false);
    loss = loss < 0 ? term : b.sum(loss, term);
  }
  const std::vector<int> grads = append_gradients(graph, loss, wrt);
  graph.outputs = {loss};
  for (int g : grads) {
    ASSERT_GE(g, 0) << c.op << ": no gradient";
    graph.outputs.push_back(g);
  }
  graph.sort_topologically();
  cpu::CpuDevice device;
  GraphExecutor executor(graph, device);
  const std::vector<Tensor> analytic = executor.run(feed);
  for (size_t w = 0; w < wrt.size(); ++w) {
    const Tensor& x = feed[w];
    const std::vector<double> grad = analytic[w + 1].to_doubles();
    ASSERT_EQ(static_cast<int64_t>(grad.size()), x.numel());
    // Up to 40 elements of each input, spread over it.
    const int64_t count = x.numel(), stride = std::max<int64_t>(1, count / 40);
    for (int64_t i = 0; i < count; i += stride) {
      std::vector<Tensor> shifted = feed;
      shifted[w] = x.clone();
      float* element = shifted[w].data<float>() + i;
      const float original = *element;
      *element = static_cast<float>(original + step);
      const double up = loss_of(executor, shifted);
      *element = static_cast<float>(original - step);
      const double down = loss_of(executor, shifted);
      const double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(grad[static_cast<size_t>(i)], numeric,
                  tolerance * std::max(1.0, std::abs(numeric)))
          << c.op << ": input " << w << ", element " << i;
    }
  }
}

Tensor scalar_float(float v) {
  return Tensor::from_vector(DType::kFloat32, {}, std::vector<float>{v});
}

TEST(Gradients, BroadcastingArithmetic) {
  for (const char* op : {"Add", "Sub", "Mul"})
    check({op, {{uniform({2, 3, 4}, -1, 1, 1)}, {uniform({3, 1}, -1, 1, 2)}}});
  check({"Div", {{uniform({2, 3}, -1, 1, 3)}, {uniform({3}, 0.5, 2, 4)}}});
  check({"Pow", {{uniform({2, 3}, 0.5, 2, 5)}, {uniform({1}, 1.5, 2.5, 6)}}});
  // Offset grids: no element of one input equals one of the other.
  check({"Max", {{distinct({2, 3}, 7)}, {distinct({3}, 8, 0.0125f)}}});
  check({"Min", {{distinct({2, 3}, 9)}, {distinct({2, 3}, 10, 0.0125f)}}});
  check({"Sum",
         {{uniform({4}, -1, 1, 11)}, {uniform({2, 4}, -1, 1, 12)}, {uniform({1}, -1, 1, 13)}}});
  Tensor condition = Tensor::allocate(DType::kBool, {2, 3});
  for (int i = 0; i < 6; ++i) condition.data<bool>()[i] = i % 2;
  check({"Where", {constant(condition), {uniform({2, 3}, -1, 1, 14)}, {uniform({3}, -1, 1, 15)}}});
}

TEST(Gradients, Activations) {
  for (const char* op : {"Relu", "Abs", "LeakyRelu", "HardSwish", "HardSigmoid"})
    check({op, {{distinct({3, 4, 5}, 20)}}});
  for (const char* op : {"Sigmoid", "Tanh", "Exp", "Erf", "Softplus", "Neg", "Identity"})
    check({op, {{uniform({3, 7}, -2, 2, 21)}}});
  for (const char* op : {"Log", "Sqrt", "Reciprocal"}) check({op, {{uniform({3, 7}, 0.5, 2, 22)}}});
  check({"Gelu", {{uniform({3, 7}, -3, 3, 23)}}, {}, 1, 20});
  check({"Gelu", {{uniform({3, 7}, -3, 3, 24)}}, {{"approximate", std::string("tanh")}}, 1, 20});
  check({"Clip",
         {{distinct({4, 5}, 25)}, constant(scalar_float(-0.26f)), constant(scalar_float(0.31f))}});
}

TEST(Gradients, MatMulAndGemm) {
  check({"MatMul", {{uniform({2, 3, 4}, -1, 1, 30)}, {uniform({4, 5}, -1, 1, 31)}}});
  check({"MatMul", {{uniform({2, 1, 3, 4}, -1, 1, 32)}, {uniform({3, 4, 2}, -1, 1, 33)}}});
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      const Shape a = ta ? Shape{4, 3} : Shape{3, 4}, m = tb ? Shape{5, 4} : Shape{4, 5};
      check({"Gemm",
             {{uniform(a, -1, 1, 34)}, {uniform(m, -1, 1, 35)}, {uniform({5}, -1, 1, 36)}},
             {{"transA", ta}, {"transB", tb}, {"alpha", 0.7f}, {"beta", 1.3f}}});
    }
  }
}

TEST(Gradients, Convolutions) {
  check({"Conv",
         {{uniform({2, 3, 7, 6}, -1, 1, 40)},
          {uniform({4, 3, 3, 3}, -1, 1, 41)},
          {uniform({4}, -1, 1, 42)}},
         {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}}});
  check({"Conv",
         {{uniform({1, 2, 9, 9}, -1, 1, 43)}, {uniform({3, 2, 3, 2}, -1, 1, 44)}},
         {{"dilations", std::vector<int64_t>{2, 1}}, {"pads", std::vector<int64_t>{0, 1, 2, 0}}}});
  check({"Conv",  // depthwise with a channel multiplier
         {{uniform({2, 3, 6, 6}, -1, 1, 45)}, {uniform({6, 1, 3, 3}, -1, 1, 46)}},
         {{"group", int64_t{3}},
          {"pads", std::vector<int64_t>{1, 1, 1, 1}},
          {"strides", std::vector<int64_t>{2, 2}}}});
  check({"Conv",  // two groups of two channels
         {{uniform({2, 4, 5, 5}, -1, 1, 47)}, {uniform({6, 2, 3, 3}, -1, 1, 48)}},
         {{"group", int64_t{2}}}});
  check({"Conv",
         {{uniform({2, 3, 10}, -1, 1, 49)}, {uniform({2, 3, 3}, -1, 1, 50)}},
         {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2}}}});
}

TEST(Gradients, Pooling) {
  check({"MaxPool",
         {{distinct({2, 3, 6, 6}, 60)}},
         {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
         2});
  check({"MaxPool",
         {{distinct({1, 2, 7, 7}, 61)}},
         {{"kernel_shape", std::vector<int64_t>{3, 3}},
          {"strides", std::vector<int64_t>{2, 2}},
          {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
         2});
  check({"AveragePool",
         {{uniform({2, 3, 6, 6}, -1, 1, 62)}},
         {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}});
  check({"AveragePool",
         {{uniform({1, 2, 5, 5}, -1, 1, 63)}},
         {{"kernel_shape", std::vector<int64_t>{3, 3}},
          {"pads", std::vector<int64_t>{1, 1, 1, 1}},
          {"count_include_pad", int64_t{1}}}});
  check({"GlobalAveragePool", {{uniform({2, 3, 4, 5}, -1, 1, 64)}}});
}

TEST(Gradients, Normalization) {
  check(
      {"LayerNormalization",
       {{uniform({2, 3, 8}, -2, 2, 70)}, {uniform({8}, 0.5, 1.5, 71)}, {uniform({8}, -1, 1, 72)}}});
  check({"LayerNormalization",
         {{uniform({2, 3, 4}, -2, 2, 73)}, {uniform({3, 4}, 0.5, 1.5, 74)}},
         {{"axis", int64_t{1}}}});
  check({"Softmax", {{uniform({3, 5}, -2, 2, 75)}}, {{"axis", int64_t{1}}}});
  check({"Softmax", {{uniform({2, 4, 3}, -2, 2, 76)}}, {{"axis", int64_t{1}}}});
  check({"LogSoftmax", {{uniform({3, 5}, -2, 2, 77)}}, {{"axis", int64_t{-1}}}});
}

TEST(Gradients, MovingElements) {
  check({"Reshape", {{uniform({2, 3, 4}, -1, 1, 80)}, constant(ints({2}, {6, 4}))}});
  check({"Flatten", {{uniform({2, 3, 4}, -1, 1, 81)}}});
  check(
      {"Transpose", {{uniform({2, 3, 4}, -1, 1, 82)}}, {{"perm", std::vector<int64_t>{2, 0, 1}}}});
  check({"Unsqueeze", {{uniform({2, 3}, -1, 1, 83)}, constant(ints({1}, {1}))}});
  check({"Squeeze", {{uniform({2, 1, 3}, -1, 1, 84)}, constant(ints({1}, {1}))}});
  check({"Concat",
         {{uniform({2, 3}, -1, 1, 85)}, {uniform({2, 2}, -1, 1, 86)}},
         {{"axis", int64_t{1}}}});
  check({"Split",
         {{uniform({2, 5}, -1, 1, 87)}, constant(ints({2}, {2, 3}))},
         {{"axis", int64_t{1}}},
         2});
  check({"Slice",
         {{uniform({4, 6}, -1, 1, 88)},
          constant(ints({2}, {1, -4})),
          constant(ints({2}, {3, 100})),
          constant(ints({2}, {0, 1}))}});
  check({"Pad", {{uniform({2, 3}, -1, 1, 89)}, constant(ints({4}, {1, 0, 2, 3}))}});
  check({"Expand", {{uniform({3, 1}, -1, 1, 90)}, constant(ints({3}, {2, 3, 4}))}});
  check({"Gather", {{uniform({5, 3}, -1, 1, 91)}, constant(ints({2, 2}, {0, 4, 4, -1}))}});
  check({"Gather",
         {{uniform({2, 5, 3}, -1, 1, 92)}, constant(ints({3}, {1, 1, 3}))},
         {{"axis", int64_t{1}}}});
  check({"GatherElements",
         {{uniform({3, 4}, -1, 1, 93)}, constant(ints({3, 2}, {0, 3, 3, 3, 1, 0}))},
         {{"axis", int64_t{1}}}});
}

TEST(Gradients, Reductions) {
  check({"ReduceSum",
         {{uniform({2, 3, 4}, -1, 1, 100)}, constant(ints({2}, {0, 2}))},
         {{"keepdims", int64_t{0}}}});
  check({"ReduceMean", {{uniform({2, 3, 4}, -1, 1, 101)}}, {{"axes", std::vector<int64_t>{1}}}});
  check({"ReduceMean", {{uniform({2, 3, 4}, -1, 1, 102)}, constant(ints({1}, {-1}))}, {}, 1, 18});
}

// A chain of 16 Tanh(MatMul) layers: recomputation gives the same gradients and a smaller arena.
TEST(Gradients, RecomputationSavesMemoryAndChangesNothing) {
  const auto build = [](bool recompute, size_t* arena) {
    Graph graph;
    graph.opset = 17;
    const int x = graph.add_value("x", {DType::kFloat32, {64, 32}});
    const int w = graph.add_value("w", {DType::kFloat32, {32, 32}});
    graph.inputs = {x, w};
    GraphBuilder b(graph, "test");
    int h = x;
    for (int layer = 0; layer < 16; ++layer) h = b.add("Tanh", {b.add("MatMul", {h, w})});
    const int loss = b.reduce_sum(b.mul(h, h), {0, 1}, false);
    const std::vector<int> grads = append_gradients(graph, loss, {x, w}, recompute);
    graph.outputs = {loss, grads[0], grads[1]};
    cpu::CpuDevice device;
    GraphExecutor executor(graph, device);
    *arena = executor.memory_plan().arena_bytes;
    return executor.run(
        std::vector<Tensor>{uniform({64, 32}, -1, 1, 1), uniform({32, 32}, -0.3f, 0.3f, 2)});
  };
  size_t kept_arena = 0, recomputed_arena = 0;
  const std::vector<Tensor> kept = build(false, &kept_arena);
  const std::vector<Tensor> recomputed = build(true, &recomputed_arena);
  for (size_t k = 0; k < kept.size(); ++k)
    EXPECT_EQ(kept[k].to_doubles(), recomputed[k].to_doubles()) << "output " << k;
  // Without, the 16 Tanh outputs (8 KiB each) stay live for the backward pass (152 KiB in all);
  // with, about 5 kept values and one stretch of 6 recomputed ones (84 KiB).
  EXPECT_LT(static_cast<double>(recomputed_arena), 0.6 * static_cast<double>(kept_arena))
      << recomputed_arena << " vs " << kept_arena;
}

TEST(Gradients, RefusesWhatItCannotDifferentiate) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {4}});
  graph.inputs = {x};
  GraphBuilder b(graph, "test");
  const int sorted = b.add_multi("TopK", {x, b.int64s({2})}, {}, 2)[0];
  const int loss = b.reduce_sum(sorted, {0}, false);
  try {
    append_gradients(graph, loss, {x});
    FAIL() << "TopK has no gradient rule";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no gradient for TopK"), std::string::npos) << e.what();
  }
}

TEST(Gradients, OnlyDifferentiablePathsCount) {
  // The loss reads x only through its shape: x has no gradient, and is not a parameter.
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {2, 3}});
  const int y = graph.add_value("y", {DType::kFloat32, {6}});
  graph.inputs = {x, y};
  GraphBuilder b(graph, "test");
  const int shaped = b.add("Reshape", {y, b.add("Shape", {x})});
  const int loss = b.reduce_sum(shaped, {0, 1}, false);
  EXPECT_EQ(values_loss_depends_on(graph, loss, {x, y}), std::vector<int>{y});
}

}  // namespace
}  // namespace tandem::train
