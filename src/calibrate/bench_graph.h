#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::calibrate {

// Builds the small graphs the calibration times, as an importer would: typed inputs,
// constants for weights and shape arguments, nodes whose outputs shape inference types.
class BenchGraph {
 public:
  BenchGraph();
  int input(const TensorType& type);
  int constant(Tensor value);
  int random_constant(const TensorType& type);  // weights: uniform in [-1, 1)
  // Adds a node; returns its (single) output's value id.
  int node(const std::string& op_type, std::vector<int> inputs,
           std::map<std::string, Attribute, std::less<>> attributes = {});
  // Adds a node of `count` outputs (a TopK's values and indices); returns their value ids.
  std::vector<int> node_of_outputs(const std::string& op_type, std::vector<int> inputs, int count,
                                   std::map<std::string, Attribute, std::less<>> attributes = {});
  // Marks the outputs and infers every shape and cost.
  Graph finish(std::vector<int> outputs);

 private:
  Graph graph_;
  uint64_t seed_ = 42;
};

// One node of `op_type` on `inputs`; the constant ones become weights.
struct OpInput {
  TensorType type;
  bool constant = false;
};
Graph single_op_graph(const std::string& op_type, const std::vector<OpInput>& inputs,
                      std::map<std::string, Attribute, std::less<>> attributes = {});

// The small ops a model is full of (broadcast arithmetic, activations, transposes, a small
// MatMul, Softmax, Concat, Slice, Gather, a reduction, a view) on 4x16 tensors, `repeats`
// times in a chain: what a node costs when its work is negligible.
Graph tiny_op_mix(int repeats);

// The small layers a convolutional model ends in, `repeats` times in a chain on a 1x16x4x4
// tensor: a 1x1 Conv, a MaxPool, a depthwise 3x3 Conv, and a squeeze-and-excitation block
// (GlobalAveragePool, Flatten, Gemm, Reshape, a 1x1 Conv, Mul): what those kinds of node cost
// when their work is negligible.
Graph tiny_layer_mix(int repeats);

// A depthwise convolution of `shape` with bias in the layout the CPU gives it among its
// neighbours: its input channels-last when a 1x1 Conv makes it, its output when a 1x1 Conv
// reads it (pads keep the image at stride 1). An NCHW input is written just before by a Neg,
// as a model's op before a convolution writes it: oneDNN's reorder of a Mul's 480x10x10 output
// took 10-14 us more than of a graph input (2-vCPU Xeon). The measured Conv is node 1.
struct ConvLayerShape {
  int64_t batch, channels, height, width, kernel, stride;
};
Graph depthwise_in_layout(const ConvLayerShape& shape, bool input_channels_last,
                          bool output_channels_last);

// A 1x1 convolution with bias of `channels` to `filters` on a side x side image, its sides
// NCHW or channels-last as depthwise_in_layout's. The measured Conv is node 1.
Graph pointwise_in_layout(int64_t channels, int64_t filters, int64_t side, bool input_channels_last,
                          bool output_channels_last);

// `units` pairs of convolutions in a chain, each pair a `kernel` x `kernel` one of `channels`
// to `filters` then one of `filters` back (stride 1, pads keeping the image, with bias):
// convolutions as a model has them, each reading what the last one made. Every pair has the
// same two weights, so that a chain reads no more weights than one pair (in cache: their
// streaming is the conv weight curve's).
struct ConvPairShape {
  int64_t batch, channels, height, width, filters, kernel;
};
Graph conv_pair_chain(const ConvPairShape& shape, int units);

// `units` 1x1 convolutions of `shape.channels` to as many in a chain, each followed (with
// `depthwise`) by a depthwise `shape.kernel` x `shape.kernel` one with bias (stride 1, pads
// keeping the image): a MobileNet block's convolutions, each with weights of its own.
Graph pointwise_chain(const ConvLayerShape& shape, int units, bool depthwise);

// `count` MatMuls in a chain, each of a `rows` x `size` tensor by its own `size` x `size`
// constant weights: of 2 rows, work bound by reading the weights.
Graph weight_chain(int64_t size, int count, int64_t rows = 2);

// `units` MatMuls in a chain of a [`elements` / 64, 64] tensor by one shared 64x64 constant
// weight, each followed (with `adds`) by an Add of a constant of the same shape: elementwise ops
// between products, which a compiler cannot fuse into one loop.
Graph product_add_chain(int64_t elements, int units, bool adds);

// `count` MatMuls in a chain, products back to back with their weights in cache: the first an
// m x k input by a k x n constant, each further one the last one's output by a constant that
// turns it back to m x k or on to m x n (one constant where n = k).
Graph product_chain(int64_t m, int64_t k, int64_t n, int count);

// `count` 3x3 convolutions (pads 1) in a chain on a batch x 512 x side x side tensor, each with
// its own 512x512x3x3 constant weights (9 MiB): a late layer's convolutions. At 2x512x2x2 the
// work is bound by reading the weights once they are past the caches; at 1x512x7x7 (ResNet's
// last stage) computing takes about as long.
Graph conv_weight_chain(int count, int64_t batch = 2, int64_t side = 2);

// One node of each kind whose CPU kernel runs in loops of its own rather than a oneDNN
// primitive, each writing about `elements` elements (a multiple of 1024; a NonZero reads them):
// a channels-last Transpose, a Concat, a Slice, a row Gather, a Pad, a 2x bilinear Resize, a
// NonZero of a sparse mask, a bias Add broadcast over rows, a Softmax and a LayerNormalization
// over rows of 256, a GlobalAveragePool of 16x16 planes (the last three reading `elements`).
struct KindGraph {
  std::string op_type;
  Graph graph;
};
std::vector<KindGraph> element_kind_graphs(int64_t elements);
// The kinds that work along rows (row_length): a Softmax and a LayerNormalization over `elements`
// in rows of `row`, a GlobalAveragePool of planes of `row` pixels (a square number).
std::vector<KindGraph> row_kind_graphs(int64_t elements, int64_t row);
// Copies in runs of one element, `runs` of them (copy_runs): a Gather of one column of a
// [runs, 16] table (a detector's scores, one class at a time), a Concat of two [runs / 2, 1]
// columns.
std::vector<KindGraph> run_kind_graphs(int64_t runs);

// An `m` x `k` by `k` x `n` MatMul (constant weights), then three bias Adds in a chain, a linear
// layer's: the first reads what the product wrote, the second what an elementwise op wrote
// (nodes 1 and 2); the third writes the graph's output, which a run hands to its caller rather
// than to its arena.
Graph product_then_reads(int64_t m, int64_t k, int64_t n);
// A Neg of x[m,k], then it times random weights [k,n] (node 1): a product whose input an
// elementwise op wrote in the same run, as a model's products' are.
Graph product_after_neg(int64_t m, int64_t k, int64_t n);
// Negs of a[batch,m,k] and b[batch,k,n], then their batched product (node 2): attention's
// products, of two activations written in the same run.
Graph batched_product_after_negs(int64_t batch, int64_t m, int64_t k, int64_t n);
// x[m,k] times random weights [k,n], a bias Add of the product, and that Add's output times
// random weights [n,n]: a tensor an elementwise op writes for a product as wide to read (a narrow
// one is not split among the threads as a model's are).
Graph product_reads_an_add(int64_t m, int64_t k, int64_t n);

// Unary ops of the kinds given, in that order, in a chain on `elements` floats.
Graph unary_chain(const std::vector<std::string>& kinds, int64_t elements);

// `count` Reshapes of a 4x16 tensor in a chain, alternating 16x4 and 4x16: views only.
Graph view_chain(int count);

// A Loop of `trips` iterations (a constant trip count) carrying a 4x16 tensor through a body
// of one Add of a constant and one Identity for the condition.
Graph counting_loop(int64_t trips);

// An RNN as exporters write one: a Loop of `trips` iterations whose body carries a 2x64 state
// through a MatMul by constant weights, a bias Add and a Tanh, and hands each state out as a
// scan output (an Identity) beside the condition's Identity. rnn_chain is the same cell's ops,
// `steps` times in a chain: what the Loop costs beyond it is its iterations' own.
Graph rnn_loop(int64_t trips);
Graph rnn_chain(int64_t steps);

}  // namespace tandem::calibrate
