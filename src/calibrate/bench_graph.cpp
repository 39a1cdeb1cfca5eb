#include "calibrate/bench_graph.h"

#include <cmath>
#include <memory>
#include <random>

#include "ir/infer.h"
#include "util/random_tensor.h"

namespace tandem::calibrate {
namespace {

using Attributes = std::map<std::string, Attribute, std::less<>>;

Tensor int64s(std::vector<int64_t> values) {
  const int64_t count = static_cast<int64_t>(values.size());
  return Tensor::from_vector<int64_t>(DType::kInt64, {count}, values);
}

}  // namespace

BenchGraph::BenchGraph() { graph_.opset = 17; }

int BenchGraph::input(const TensorType& type) {
  const int id = graph_.add_value("in" + std::to_string(graph_.values.size()), type);
  graph_.inputs.push_back(id);
  return id;
}

int BenchGraph::constant(Tensor value) {
  const int id = graph_.add_value("const" + std::to_string(graph_.values.size()),
                                  {value.dtype(), value.shape()});
  graph_.values[id].constant = std::move(value);
  return id;
}

int BenchGraph::random_constant(const TensorType& type) {
  std::mt19937_64 rng(seed_++);
  return constant(random_tensor(type.dtype, type.shape, rng));
}

int BenchGraph::node(const std::string& op_type, std::vector<int> inputs, Attributes attributes) {
  return node_of_outputs(op_type, std::move(inputs), 1, std::move(attributes)).front();
}

std::vector<int> BenchGraph::node_of_outputs(const std::string& op_type, std::vector<int> inputs,
                                             int count, Attributes attributes) {
  Node node;
  node.name = op_type + std::to_string(graph_.nodes.size());
  node.op_type = op_type;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  for (int i = 0; i < count; ++i)
    node.outputs.push_back(graph_.add_value(node.name + "_out" + (i ? std::to_string(i) : "")));
  std::vector<int> outputs = node.outputs;
  graph_.nodes.push_back(std::move(node));
  return outputs;
}

Graph BenchGraph::finish(std::vector<int> outputs) {
  graph_.outputs = std::move(outputs);
  infer_graph(graph_);
  return std::move(graph_);
}

Graph single_op_graph(const std::string& op_type, const std::vector<OpInput>& inputs,
                      Attributes attributes) {
  BenchGraph graph;
  std::vector<int> ids;
  for (const OpInput& in : inputs) {
    ids.push_back(in.constant ? graph.random_constant(in.type) : graph.input(in.type));
  }
  return graph.finish({graph.node(op_type, std::move(ids), std::move(attributes))});
}

Graph tiny_op_mix(int repeats) {
  BenchGraph graph;
  const TensorType row{DType::kFloat32, {16}};
  int x = graph.input({DType::kFloat32, {4, 16}});
  const int bias = graph.random_constant(row);
  const int weight = graph.random_constant({DType::kFloat32, {16, 16}});
  const int starts = graph.constant(int64s({0}));
  const int ends = graph.constant(int64s({4}));
  const int axes = graph.constant(int64s({0}));
  const int rows = graph.constant(int64s({3, 2, 1, 0}));
  const int sum_axes = graph.constant(int64s({1}));
  const int shape = graph.constant(int64s({4, 16}));
  const std::vector<int64_t> swap = {1, 0};
  for (int r = 0; r < repeats; ++r) {
    x = graph.node("Add", {x, bias});
    x = graph.node("Mul", {x, bias});
    x = graph.node("Relu", {x});
    x = graph.node("Transpose", {x}, {{"perm", swap}});
    x = graph.node("Transpose", {x}, {{"perm", swap}});
    x = graph.node("MatMul", {x, weight});
    x = graph.node("Softmax", {x}, {{"axis", int64_t{-1}}});
    x = graph.node("Concat", {x, x}, {{"axis", int64_t{0}}});
    x = graph.node("Slice", {x, starts, ends, axes});
    x = graph.node("Gather", {x, rows}, {{"axis", int64_t{0}}});
    const int sum = graph.node("ReduceSum", {x, sum_axes}, {{"keepdims", int64_t{1}}});
    x = graph.node("Div", {x, sum});
    x = graph.node("Sigmoid", {x});
    x = graph.node("Reshape", {x, shape});
  }
  return graph.finish({x});
}

Graph tiny_layer_mix(int repeats) {
  constexpr int64_t kChannels = 16;
  BenchGraph graph;
  const auto weights = [&](int64_t per_group, int64_t side) {
    return graph.random_constant({DType::kFloat32, {kChannels, per_group, side, side}});
  };
  const int bias = graph.random_constant({DType::kFloat32, {kChannels}});
  const int fc = graph.random_constant({DType::kFloat32, {kChannels, kChannels}});
  const int image = graph.constant(int64s({1, kChannels, 1, 1}));
  const std::vector<int64_t> one = {1, 1}, three = {3, 3}, pads = {1, 1, 1, 1};
  int x = graph.input({DType::kFloat32, {1, kChannels, 4, 4}});
  for (int r = 0; r < repeats; ++r) {
    x = graph.node("Conv", {x, weights(kChannels, 1), bias}, {{"kernel_shape", one}});
    x = graph.node("MaxPool", {x}, {{"kernel_shape", three}, {"pads", pads}});
    x = graph.node("Conv", {x, weights(1, 3), bias},
                   {{"kernel_shape", three}, {"pads", pads}, {"group", kChannels}});
    int squeezed = graph.node("GlobalAveragePool", {x});
    squeezed = graph.node("Flatten", {squeezed});
    squeezed = graph.node("Gemm", {squeezed, fc, bias}, {{"transB", int64_t{1}}});
    squeezed = graph.node("Reshape", {squeezed, image});
    squeezed = graph.node("Conv", {squeezed, weights(kChannels, 1), bias}, {{"kernel_shape", one}});
    x = graph.node("Mul", {x, squeezed});
  }
  return graph.finish({x});
}

namespace {

// A 1x1 Conv of `from` to `to` channels without bias: it keeps the tensors beside a measured
// convolution channels-last.
int pointwise(BenchGraph& graph, int x, int64_t from, int64_t to) {
  return graph.node("Conv", {x, graph.random_constant({DType::kFloat32, {to, from, 1, 1}})},
                    {{"kernel_shape", std::vector<int64_t>{1, 1}}});
}

}  // namespace

Graph depthwise_in_layout(const ConvLayerShape& shape, bool input_channels_last,
                          bool output_channels_last) {
  const int64_t c = shape.channels, pad = shape.kernel / 2;
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {shape.batch, c, shape.height, shape.width}});
  x = input_channels_last ? pointwise(graph, x, c, c) : graph.node("Neg", {x});
  x = graph.node("Conv",
                 {x, graph.random_constant({DType::kFloat32, {c, 1, shape.kernel, shape.kernel}}),
                  graph.random_constant({DType::kFloat32, {c}})},
                 {{"kernel_shape", std::vector<int64_t>{shape.kernel, shape.kernel}},
                  {"strides", std::vector<int64_t>{shape.stride, shape.stride}},
                  {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                  {"group", c}});
  if (output_channels_last) x = pointwise(graph, x, c, c);
  return graph.finish({x});
}

Graph pointwise_in_layout(int64_t channels, int64_t filters, int64_t side, bool input_channels_last,
                          bool output_channels_last) {
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {1, channels, side, side}});
  x = input_channels_last ? pointwise(graph, x, channels, channels) : graph.node("Neg", {x});
  x = graph.node("Conv",
                 {x, graph.random_constant({DType::kFloat32, {filters, channels, 1, 1}}),
                  graph.random_constant({DType::kFloat32, {filters}})},
                 {{"kernel_shape", std::vector<int64_t>{1, 1}}});
  if (output_channels_last) x = pointwise(graph, x, filters, filters);
  return graph.finish({x});
}

Graph pointwise_chain(const ConvLayerShape& shape, int units, bool depthwise) {
  const int64_t c = shape.channels, pad = shape.kernel / 2;
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {shape.batch, c, shape.height, shape.width}});
  for (int i = 0; i < units; ++i) {
    x = graph.node("Conv", {x, graph.random_constant({DType::kFloat32, {c, c, 1, 1}})},
                   {{"kernel_shape", std::vector<int64_t>{1, 1}}});
    if (!depthwise) continue;
    x = graph.node("Conv",
                   {x, graph.random_constant({DType::kFloat32, {c, 1, shape.kernel, shape.kernel}}),
                    graph.random_constant({DType::kFloat32, {c}})},
                   {{"kernel_shape", std::vector<int64_t>{shape.kernel, shape.kernel}},
                    {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                    {"group", c}});
  }
  return graph.finish({x});
}

Graph weight_chain(int64_t size, int count, int64_t rows) {
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {rows, size}});
  for (int i = 0; i < count; ++i) {
    x = graph.node("MatMul", {x, graph.random_constant({DType::kFloat32, {size, size}})});
  }
  return graph.finish({x});
}

Graph product_add_chain(int64_t elements, int units, bool adds) {
  constexpr int64_t kColumns = 64;
  const TensorType type{DType::kFloat32, {elements / kColumns, kColumns}};
  BenchGraph graph;
  int x = graph.input(type);
  const int weights = graph.random_constant({DType::kFloat32, {kColumns, kColumns}});
  const int addend = graph.random_constant(type);
  for (int i = 0; i < units; ++i) {
    x = graph.node("MatMul", {x, weights});
    if (adds) x = graph.node("Add", {x, addend});
  }
  return graph.finish({x});
}

Graph product_chain(int64_t m, int64_t k, int64_t n, int count) {
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {m, k}});
  const int there = graph.random_constant({DType::kFloat32, {k, n}});
  const int back = n == k ? there : graph.random_constant({DType::kFloat32, {n, k}});
  for (int i = 0; i < count; ++i) x = graph.node("MatMul", {x, i % 2 == 0 ? there : back});
  return graph.finish({x});
}

Graph conv_weight_chain(int count, int64_t batch, int64_t side) {
  constexpr int64_t kChannels = 512;
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {batch, kChannels, side, side}});
  for (int i = 0; i < count; ++i) {
    x = graph.node(
        "Conv", {x, graph.random_constant({DType::kFloat32, {kChannels, kChannels, 3, 3}})},
        {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  }
  return graph.finish({x});
}

Graph conv_pair_chain(const ConvPairShape& shape, int units) {
  const int64_t pad = shape.kernel / 2;
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {shape.batch, shape.channels, shape.height, shape.width}});
  const auto weights = [&](int64_t from, int64_t to) {
    return std::pair{
        graph.random_constant({DType::kFloat32, {to, from, shape.kernel, shape.kernel}}),
        graph.random_constant({DType::kFloat32, {to}})};
  };
  const auto there = weights(shape.channels, shape.filters);
  const auto back = weights(shape.filters, shape.channels);
  const auto conv = [&](int input, std::pair<int, int> weights_and_bias) {
    return graph.node("Conv", {input, weights_and_bias.first, weights_and_bias.second},
                      {{"kernel_shape", std::vector<int64_t>{shape.kernel, shape.kernel}},
                       {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
  };
  for (int i = 0; i < units; ++i) x = conv(conv(x, there), back);
  return graph.finish({x});
}

std::vector<KindGraph> run_kind_graphs(int64_t runs) {
  std::vector<KindGraph> graphs;
  {
    BenchGraph graph;
    const int table = graph.input({DType::kFloat32, {runs, 16}});
    const int column = graph.constant(int64s({3}));
    graphs.push_back(
        {"Gather", graph.finish({graph.node("Gather", {table, column}, {{"axis", int64_t{1}}})})});
  }
  const TensorType column{DType::kFloat32, {runs / 2, 1}};
  graphs.push_back(
      {"Concat", single_op_graph("Concat", {{column}, {column}}, {{"axis", int64_t{1}}})});
  return graphs;
}

std::vector<KindGraph> element_kind_graphs(int64_t elements) {
  const TensorType rows{DType::kFloat32, {elements / 256, 256}};
  const TensorType row{DType::kFloat32, {256}};
  // The side of a square image of `channels` channels with about `elements` elements.
  const auto side = [&](int64_t channels) {
    return static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(elements / channels))));
  };
  std::vector<KindGraph> graphs;
  graphs.push_back(
      {"Transpose",
       single_op_graph("Transpose", {{{DType::kFloat32, {1, 64, elements / 1024, 16}}}},
                       {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})});
  const TensorType half{DType::kFloat32, {elements / 1024, 512}};
  graphs.push_back({"Concat", single_op_graph("Concat", {{half}, {half}}, {{"axis", int64_t{1}}})});
  {
    BenchGraph graph;
    const int x = graph.input({DType::kFloat32, {elements / 512, 1024}});
    const int starts = graph.constant(int64s({256})), ends = graph.constant(int64s({768}));
    const int axes = graph.constant(int64s({1}));
    graphs.push_back({"Slice", graph.finish({graph.node("Slice", {x, starts, ends, axes})})});
  }
  {
    // Rows of 64 picked from a table of 1024, in an order a cache cannot predict.
    BenchGraph graph;
    const int table = graph.input({DType::kFloat32, {1024, 64}});
    std::vector<int64_t> order(static_cast<size_t>(elements / 64));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>((i * 389) % 1024);
    const int picked = graph.constant(int64s(order));
    graphs.push_back({"Gather", graph.finish({graph.node("Gather", {table, picked})})});
  }
  {
    // A recommender's bags: rows of 64 summed in bags of 8, picked from an 8 MiB table (past a
    // core's caches, as a DLRM's tables are) in an order a cache cannot predict. Rated by the
    // elements the bags read (rated_elements).
    BenchGraph graph;
    constexpr int64_t kTableRows = int64_t{1} << 15, kWidth = 64, kBag = 8;
    const int64_t lookups = elements / kWidth;
    const int table = graph.random_constant({DType::kFloat32, {kTableRows, kWidth}});
    std::vector<int64_t> order(static_cast<size_t>(lookups));
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = static_cast<int64_t>((i * 40503 + 17) % kTableRows);
    std::vector<int64_t> starts, ends;
    for (int64_t start = 0; start < lookups; start += kBag) {
      starts.push_back(start);
      ends.push_back(start + kBag);
    }
    const int bags = static_cast<int>(starts.size());
    const int picked = graph.constant(int64s(order));
    graphs.push_back(
        {"EmbeddingBag",
         graph.finish({graph.node(
             "EmbeddingBag",
             {table, picked, graph.constant(int64s(starts)), graph.constant(int64s(ends))},
             {{"mode", std::string("sum")}, {"bags", int64_t{bags}}})})});
  }
  {
    BenchGraph graph;
    const int64_t inner = side(64) - 2;
    const int x = graph.input({DType::kFloat32, {1, 64, inner, inner}});
    const int pads = graph.constant(int64s({0, 0, 1, 1, 0, 0, 1, 1}));
    graphs.push_back({"Pad", graph.finish({graph.node("Pad", {x, pads})})});
  }
  {
    // A detector's transform or an FPN's upsampling: twice the size, bilinear.
    BenchGraph graph;
    const int64_t input = side(16);
    const int x = graph.input({DType::kFloat32, {1, 4, input, input}});
    const int scales = graph.constant(
        Tensor::from_vector<float>(DType::kFloat32, {4}, std::vector<float>{1, 1, 2, 2}));
    graphs.push_back({"Resize", graph.finish({graph.node("Resize", {x, -1, scales},
                                                         {{"mode", std::string("linear")}})})});
  }
  {
    // A mask as a threshold on scores makes it: few found (one in 32, spread out), so that the
    // time is the scan's, not a fair coin's mispredicted branches.
    BenchGraph graph;
    std::vector<uint8_t> mask(static_cast<size_t>(elements), 0);
    for (size_t i = 0; i < mask.size(); i += 32) mask[(i * 7) % mask.size()] = 1;
    const int found = graph.constant(Tensor::from_vector<uint8_t>(DType::kBool, {elements}, mask));
    graphs.push_back({"NonZero", graph.finish({graph.node("NonZero", {found})})});
  }
  {
    // A detector's candidates: the best 100 scores of each row of 1024.
    BenchGraph graph;
    const int scores = graph.input({DType::kFloat32, {elements / 1024, 1024}});
    const int k = graph.constant(int64s({100}));
    graphs.push_back({"TopK", graph.finish(graph.node_of_outputs("TopK", {scores, k}, 2))});
  }
  {
    // Boxes on a grid, none overlapping: every candidate is compared with every box kept before
    // it, as many pairs as rated_elements counts.
    BenchGraph graph;
    const auto boxes =
        static_cast<int64_t>(std::lround(std::sqrt(2.0 * static_cast<double>(elements))));
    const auto side = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(boxes))));
    std::vector<float> corners;
    for (int64_t b = 0; b < boxes; ++b) {
      const auto y = static_cast<float>(b / side * 10), x = static_cast<float>(b % side * 10);
      corners.insert(corners.end(), {y, x, y + 5, x + 5});
    }
    const int box_input =
        graph.constant(Tensor::from_vector<float>(DType::kFloat32, {1, boxes, 4}, corners));
    const int scores = graph.input({DType::kFloat32, {1, 1, boxes}});
    const int cap = graph.constant(int64s({boxes}));
    const int iou = graph.constant(Tensor::from_vector<float>(DType::kFloat32, {1}, {0.5F}));
    graphs.push_back(
        {"NonMaxSuppression",
         graph.finish({graph.node("NonMaxSuppression", {box_input, scores, cap, iou})})});
  }
  // A linear layer's bias, broadcast over its rows.
  graphs.push_back({"Add", single_op_graph("Add", {{rows}, {row, true}})});
  for (KindGraph& kind : row_kind_graphs(elements, 256)) graphs.push_back(std::move(kind));
  return graphs;
}

std::vector<KindGraph> row_kind_graphs(int64_t elements, int64_t row) {
  const TensorType rows{DType::kFloat32, {elements / row, row}};
  const TensorType scale{DType::kFloat32, {row}};
  std::vector<KindGraph> graphs;
  graphs.push_back({"Softmax", single_op_graph("Softmax", {{rows}}, {{"axis", int64_t{-1}}})});
  graphs.push_back({"LayerNormalization",
                    single_op_graph("LayerNormalization", {{rows}, {scale, true}, {scale, true}},
                                    {{"axis", int64_t{-1}}})});
  // Square planes of `row` pixels (a squeeze-and-excitation block pools 2x2 to 56x56 ones).
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(row))));
  graphs.push_back({"GlobalAveragePool",
                    single_op_graph("GlobalAveragePool",
                                    {{{DType::kFloat32, {1, elements / row, side, side}}}})});
  return graphs;
}

Graph product_then_reads(int64_t m, int64_t k, int64_t n) {
  BenchGraph graph;
  const int x = graph.input({DType::kFloat32, {m, k}});
  const int weights = graph.random_constant({DType::kFloat32, {k, n}});
  const int bias = graph.random_constant({DType::kFloat32, {n}});
  const int product = graph.node("MatMul", {x, weights});
  const int first = graph.node("Add", {product, bias});
  const int second = graph.node("Add", {first, bias});
  return graph.finish({graph.node("Add", {second, bias})});
}

Graph product_after_neg(int64_t m, int64_t k, int64_t n) {
  BenchGraph graph;
  const int negated = graph.node("Neg", {graph.input({DType::kFloat32, {m, k}})});
  const int weights = graph.random_constant({DType::kFloat32, {k, n}});
  return graph.finish({graph.node("MatMul", {negated, weights})});
}

Graph batched_product_after_negs(int64_t batch, int64_t m, int64_t k, int64_t n) {
  BenchGraph graph;
  const int a = graph.node("Neg", {graph.input({DType::kFloat32, {batch, m, k}})});
  const int b = graph.node("Neg", {graph.input({DType::kFloat32, {batch, k, n}})});
  return graph.finish({graph.node("MatMul", {a, b})});
}

Graph product_reads_an_add(int64_t m, int64_t k, int64_t n) {
  BenchGraph graph;
  const int x = graph.input({DType::kFloat32, {m, k}});
  const int weights = graph.random_constant({DType::kFloat32, {k, n}});
  const int bias = graph.random_constant({DType::kFloat32, {n}});
  const int biased = graph.node("Add", {graph.node("MatMul", {x, weights}), bias});
  const int next_weights = graph.random_constant({DType::kFloat32, {n, n}});
  return graph.finish({graph.node("MatMul", {biased, next_weights})});
}

Graph unary_chain(const std::vector<std::string>& kinds, int64_t elements) {
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {elements}});
  for (const std::string& kind : kinds) x = graph.node(kind, {x});
  return graph.finish({x});
}

Graph view_chain(int count) {
  BenchGraph graph;
  int x = graph.input({DType::kFloat32, {4, 16}});
  const int tall = graph.constant(int64s({16, 4}));
  const int wide = graph.constant(int64s({4, 16}));
  for (int i = 0; i < count; ++i) x = graph.node("Reshape", {x, i % 2 == 0 ? tall : wide});
  return graph.finish({x});
}

Graph counting_loop(int64_t trips) {
  const TensorType carried{DType::kFloat32, {4, 16}};
  BenchGraph body;
  body.input({DType::kInt64, {}});  // iteration number
  const int condition = body.input({DType::kBool, {}});
  const int x = body.input(carried);
  const int bias = body.random_constant(carried);
  const int condition_out = body.node("Identity", {condition});
  const int next = body.node("Add", {x, bias});
  auto body_graph = std::make_shared<Graph>(body.finish({condition_out, next}));

  BenchGraph graph;
  const int trip_count = graph.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {trips}));
  const int keep_going = graph.constant(Tensor::from_vector<uint8_t>(DType::kBool, {}, {1}));
  const int initial = graph.input(carried);
  return graph.finish(
      {graph.node("Loop", {trip_count, keep_going, initial}, {{"body", body_graph}})});
}

namespace {

constexpr int64_t kRnnBatch = 2, kRnnHidden = 64;

struct RnnWeights {
  int weights, bias;
};

RnnWeights rnn_weights(BenchGraph& graph) {
  return {graph.random_constant({DType::kFloat32, {kRnnHidden, kRnnHidden}}),
          graph.random_constant({DType::kFloat32, {kRnnHidden}})};
}

// One step of the cell: tanh(state x weights + bias).
int rnn_cell(BenchGraph& graph, int state, const RnnWeights& cell) {
  return graph.node("Tanh",
                    {graph.node("Add", {graph.node("MatMul", {state, cell.weights}), cell.bias})});
}

}  // namespace

Graph rnn_loop(int64_t trips) {
  const TensorType state{DType::kFloat32, {kRnnBatch, kRnnHidden}};
  BenchGraph body;
  body.input({DType::kInt64, {}});  // iteration number
  const int condition = body.input({DType::kBool, {}});
  const int next = rnn_cell(body, body.input(state), rnn_weights(body));
  auto body_graph = std::make_shared<Graph>(
      body.finish({body.node("Identity", {condition}), next, body.node("Identity", {next})}));

  BenchGraph graph;
  const int trip_count = graph.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {trips}));
  const int keep_going = graph.constant(Tensor::from_vector<uint8_t>(DType::kBool, {}, {1}));
  return graph.finish(graph.node_of_outputs("Loop", {trip_count, keep_going, graph.input(state)}, 2,
                                            {{"body", body_graph}}));
}

Graph rnn_chain(int64_t steps) {
  BenchGraph graph;
  int state = graph.input({DType::kFloat32, {kRnnBatch, kRnnHidden}});
  const RnnWeights cell = rnn_weights(graph);
  for (int64_t step = 0; step < steps; ++step) state = rnn_cell(graph, state, cell);
  return graph.finish({state});
}

}  // namespace tandem::calibrate
