#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "ir/error.h"
#include "ir/infer.h"
#include "util/random_tensor.h"

namespace tandem {
namespace {

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_vector(DType::kFloat32, shape, values);
}

int add_node(Graph& graph, const std::string& op, std::vector<int> inputs, TensorType out = {}) {
  Node node;
  node.name = op + std::to_string(graph.nodes.size());
  node.op_type = op;
  node.inputs = std::move(inputs);
  const int output = graph.add_value(node.name + "_out", out);
  node.outputs = {output};
  graph.nodes.push_back(std::move(node));
  return output;
}

int add_constant(Graph& graph, const std::string& name, Tensor value) {
  const int id = graph.add_value(name, {value.dtype(), value.shape()});
  graph.values[id].constant = std::move(value);
  return id;
}

TEST(Executor, ChainReusesArenaBuffers) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {1024}});
  graph.inputs = {x};
  int last = x;
  for (int i = 0; i < 8; ++i) last = add_node(graph, i % 2 ? "Neg" : "Relu", {last});
  graph.outputs = {last};
  infer_graph(graph);
  cpu::CpuDevice device;
  GraphExecutor executor(graph, device);
  EXPECT_EQ(executor.memory_plan().requested_bytes, 7 * 4096u);
  EXPECT_EQ(executor.memory_plan().arena_bytes, 2 * 4096u);
  std::vector<float> values(1024);
  for (int i = 0; i < 1024; ++i) values[i] = static_cast<float>(i % 7) - 3.0f;
  const Tensor out = executor.run(std::vector<Tensor>{floats({1024}, values)})[0];
  for (int i = 0; i < 1024; ++i) {
    // Relu then Neg, four times: -relu(x) after the first pair, then relu(-relu(x)) = 0.
    EXPECT_EQ(out.data<float>()[i], 0.0f) << i;
  }
}

// Regression: a plan's device worker runs kernels that the main thread compiled. oneDNN's
// default scratchpad belonged to the compiling thread, so ResNet-18's 7x7 stem at 224x224 (an
// im2col convolution with a large scratchpad) wrote out of bounds from the worker: SIGSEGV.
// A run's outputs are the caller's to keep, however the executor recycles their memory once
// let go of (RecycledHostMemory, tested on its own).
TEST(Executor, OutputsTheCallerHoldsAreNeverWrittenByALaterRun) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {4096}});
  graph.inputs = {x};
  const int relu = add_node(graph, "Relu", {x});
  const int neg = add_node(graph, "Neg", {relu});
  graph.outputs = {neg, relu};  // a kernel's output, and one that is also read by a kernel
  infer_graph(graph);
  cpu::CpuDevice device;
  GraphExecutor executor(graph, device);
  const auto input = [](float value) {
    return std::vector<Tensor>{floats({4096}, std::vector<float>(4096, value))};
  };
  std::vector<Tensor> first = executor.run(input(1.0f));
  EXPECT_TRUE(first[0].owns_storage_alone());  // handed to Python without a copy
  const void* first_address = first[0].raw();
  // Held by the caller: the next run writes elsewhere, and leaves these values as they were.
  std::vector<Tensor> second = executor.run(input(2.0f));
  EXPECT_NE(second[0].raw(), first_address);
  EXPECT_EQ(first[0].data<float>()[4095], -1.0f);
  EXPECT_EQ(first[1].data<float>()[0], 1.0f);
  first.clear();
  // The first run's memory is free to be written again; the second's is still held.
  const std::vector<Tensor> third = executor.run(input(3.0f));
  EXPECT_NE(third[0].raw(), second[0].raw());
  EXPECT_EQ(third[0].data<float>()[4095], -3.0f);
  EXPECT_EQ(third[1].data<float>()[4095], 3.0f);
  EXPECT_EQ(second[0].data<float>()[0], -2.0f);
}

TEST(Executor, KernelsCompiledOnOneThreadRunOnAnother) {
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {1, 3, 224, 224}});
  graph.inputs = {x};
  std::mt19937_64 rng(3);
  const int w = add_constant(graph, "w", random_tensor(DType::kFloat32, {64, 3, 7, 7}, rng));
  Node conv;
  conv.name = "stem";
  conv.op_type = "Conv";
  conv.inputs = {x, w};
  conv.attributes = {{"kernel_shape", std::vector<int64_t>{7, 7}},
                     {"strides", std::vector<int64_t>{2, 2}},
                     {"pads", std::vector<int64_t>{3, 3, 3, 3}}};
  conv.outputs = {graph.add_value("y")};
  graph.nodes.push_back(conv);
  graph.outputs = {conv.outputs[0]};
  infer_graph(graph);
  const Tensor input = random_tensor(DType::kFloat32, {1, 3, 224, 224}, rng);

  cpu::CpuDevice device;
  GraphExecutor here(graph, device);
  const Tensor expected = here.run(std::vector<Tensor>{input})[0];
  GraphExecutor compiled_here(graph, device);
  Tensor from_worker;
  std::thread worker([&] { from_worker = compiled_here.run(std::vector<Tensor>{input})[0]; });
  worker.join();
  ASSERT_EQ(from_worker.shape(), (Shape{1, 64, 112, 112}));
  EXPECT_EQ(std::memcmp(from_worker.raw(), expected.raw(), expected.nbytes()), 0);
}

// A Loop of `trips` iterations over x = [2] floats whose body computes `op`(state, step) with
// `step` = [1, 0.5] read from the enclosing graph; the body declares its state `declared` and,
// with `scan`, hands each state out as a scan output.
Graph stepping_loop(const std::string& op, Shape declared, int64_t trips, bool scan) {
  Graph body;
  body.opset = 17;
  const int iteration = body.add_value("i", {DType::kInt64, {}});
  const int cond_in = body.add_value("cond_in", {DType::kBool, {}});
  const int state = body.add_value("state", {DType::kFloat32, std::move(declared)});
  body.inputs = {iteration, cond_in, state};
  const int step = body.add_value("step");
  body.values[step].outer_scope = true;  // read from the enclosing graph
  const int next = add_node(body, op, {state, step});
  if (op == "Concat") body.nodes.back().attributes["axis"] = int64_t{0};
  body.outputs = {add_node(body, "Identity", {cond_in}), next};
  if (scan) body.outputs.push_back(add_node(body, "Identity", {next}));

  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {2}});
  graph.inputs = {x};
  add_constant(graph, "step", floats({2}, {1.0f, 0.5f}));
  const int trip_count =
      add_constant(graph, "trips", Tensor::from_vector<int64_t>(DType::kInt64, {}, {trips}));
  Node loop;
  loop.name = "loop";
  loop.op_type = "Loop";
  loop.inputs = {trip_count, -1, x};
  loop.outputs = {graph.add_value("final")};
  if (scan) loop.outputs.push_back(graph.add_value("history"));
  loop.attributes["body"] = std::make_shared<Graph>(std::move(body));
  graph.outputs = loop.outputs;
  graph.nodes.push_back(std::move(loop));
  graph.sort_topologically();
  infer_graph(graph);
  return graph;
}

TEST(Executor, LoopCarriesStateAndStacksScans) {
  const Graph graph = stepping_loop("Add", {2}, 5, true);
  cpu::CpuDevice device;
  GraphExecutor executor(graph, device);
  const std::vector<Tensor> out = executor.run(std::vector<Tensor>{floats({2}, {10.0f, 20.0f})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 15.0f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 22.5f);
  ASSERT_EQ(out[1].shape(), (Shape{5, 2}));
  EXPECT_FLOAT_EQ(out[1].data<float>()[0], 11.0f);
  EXPECT_FLOAT_EQ(out[1].data<float>()[9], 22.5f);
}

// A body that declares its carried value's dim unknown (an exporter's "batch") runs with the
// shape it is given where the body hands that shape back, and stays dynamic where it grows.
TEST(Executor, LoopBodyOfUnknownDimsKeepsTheCarriedShapeOnlyWhereItHoldsIt) {
  const auto carried_out = [](const Graph& graph) {
    const Graph& body = *graph.nodes[0].attr_graph("body");
    return body.values[body.outputs[1]].type.shape;
  };
  cpu::CpuDevice device;
  const Graph adding = stepping_loop("Add", {kDynamicDim}, 3, false);
  EXPECT_EQ(carried_out(adding), (Shape{2}));
  const Tensor sum = GraphExecutor(adding, device).run(std::vector<Tensor>{floats({2}, {1, 2})})[0];
  ASSERT_EQ(sum.shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(sum.data<float>()[1], 3.5f);
  const Graph growing = stepping_loop("Concat", {kDynamicDim}, 3, false);
  EXPECT_EQ(carried_out(growing), (Shape{kDynamicDim}));
  const Tensor grown =
      GraphExecutor(growing, device).run(std::vector<Tensor>{floats({2}, {1, 2})})[0];
  EXPECT_EQ(grown.shape(), (Shape{8}));
}

TEST(Executor, IfRunsTheBranchTheConditionPicks) {
  auto branch = [](const std::string& op, float operand) {
    auto g = std::make_shared<Graph>();
    g->opset = 17;
    const int x = g->add_value("x");
    g->values[x].outer_scope = true;
    const int c = add_constant(*g, "c_" + op, floats({}, {operand}));
    g->outputs = {add_node(*g, op, {x, c})};
    return g;
  };
  Graph graph;
  graph.opset = 17;
  const int x = graph.add_value("x", {DType::kFloat32, {3}});
  const int flag = graph.add_value("flag", {DType::kBool, {}});
  graph.inputs = {x, flag};
  Node node;
  node.name = "if";
  node.op_type = "If";
  node.inputs = {flag};
  node.outputs = {graph.add_value("y")};
  node.attributes["then_branch"] = branch("Mul", 2.0f);
  node.attributes["else_branch"] = branch("Add", 10.0f);
  graph.nodes.push_back(std::move(node));
  graph.outputs = {graph.find_value("y")};
  infer_graph(graph);

  cpu::CpuDevice device;
  GraphExecutor executor(graph, device);
  const Tensor input = floats({3}, {1, 2, 3});
  const Tensor doubled = executor.run(
      std::vector<Tensor>{input, Tensor::from_vector<uint8_t>(DType::kBool, {}, {1})})[0];
  const Tensor shifted = executor.run(
      std::vector<Tensor>{input, Tensor::from_vector<uint8_t>(DType::kBool, {}, {0})})[0];
  EXPECT_FLOAT_EQ(doubled.data<float>()[2], 6.0f);
  EXPECT_FLOAT_EQ(shifted.data<float>()[2], 13.0f);
}

TEST(Executor, CycleIsRejectedByName) {
  Graph graph;
  graph.opset = 17;
  const int a = graph.add_value("a");
  const int b = graph.add_value("b");
  Node first{.name = "first", .op_type = "Relu", .inputs = {b}, .outputs = {a}};
  Node second{.name = "second", .op_type = "Relu", .inputs = {a}, .outputs = {b}};
  graph.nodes = {first, second};
  try {
    graph.sort_topologically();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
  }
}

}  // namespace
}  // namespace tandem
