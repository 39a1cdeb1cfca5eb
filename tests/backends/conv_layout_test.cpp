// The CPU keeps tensors between convolutions channels-last (backends/cpu/conv_layout.h): which
// tensors it marks, and that a model run so gives what it gives with every tensor NCHW.
#include "backends/cpu/conv_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backends/cpu/cpu_device.h"
#include "expect_outputs.h"
#include "ir/infer.h"
#include "runtime/executor.h"
#include "zoo_cases.h"

namespace tandem {
namespace {

// The host CPU with every tensor NCHW: compiles the graph as given.
class NchwCpu final : public Device {
 public:
  std::string name() const override { return "nchw-cpu"; }
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override { return cpu_.compile(spec); }

 private:
  cpu::CpuDevice cpu_;
};

std::vector<Tensor> run_on(const Graph& graph, Device& device, const std::vector<Tensor>& inputs) {
  GraphExecutor executor(graph, device);
  return executor.run(inputs);
}

std::string layout(const Node& node, const char* attribute) {
  return node.attr_string(attribute, "nchw");
}

bool layout_aware(const Node& node) { return node.op_type == "Conv" || node.op_type == "MaxPool"; }

TEST(ConvLayout, MarksExactlyTheTensorsThatOnlyLayoutAwareNodesRead) {
  const testing::ZooCase c = testing::load_zoo_case("real/resnet18");
  const std::optional<Graph> marked = cpu::with_channels_last_conv_chains(c.graph);
  ASSERT_TRUE(marked);
  ASSERT_EQ(marked->nodes.size(), c.graph.nodes.size());
  std::map<int, std::vector<std::pair<const Node*, size_t>>> readers;
  for (const Node& node : marked->nodes) {
    for (size_t i = 0; i < node.inputs.size(); ++i) readers[node.inputs[i]].push_back({&node, i});
  }
  int chained = 0;
  for (const Node& node : marked->nodes) {
    if (!layout_aware(node)) {
      EXPECT_FALSE(node.has(cpu::kDstLayoutAttribute) || node.has(cpu::kSrcLayoutAttribute))
          << node.label();
      continue;
    }
    const bool channels_last = layout(node, cpu::kDstLayoutAttribute) == cpu::kChannelsLast;
    chained += channels_last;
    for (const auto& [reader, input] : readers[node.outputs[0]]) {
      // Both ends of a tensor agree on its layout; a tensor any other op reads stays NCHW.
      const char* attribute = input == 0 ? cpu::kSrcLayoutAttribute : cpu::kResidualLayoutAttribute;
      if (layout_aware(*reader)) {
        EXPECT_EQ(layout(*reader, attribute), layout(node, cpu::kDstLayoutAttribute))
            << node.label() << " -> " << reader->label();
      } else {
        EXPECT_FALSE(channels_last) << node.label() << " -> " << reader->label();
      }
    }
  }
  // ResNet-18's 20 convolutions and its stem's MaxPool: all but the last convolution (read by
  // GlobalAveragePool) write for convolutions or the MaxPool only.
  EXPECT_EQ(chained, 20);
}

// What the cost model is told (through the backend registry) is what the kernels are given.
TEST(ConvLayout, DeclaredLayoutsAreTheMarkedOnes) {
  const testing::ZooCase c = testing::load_zoo_case("real/mobilenet_v3_small");
  const std::optional<Graph> marked = cpu::with_channels_last_conv_chains(c.graph);
  ASSERT_TRUE(marked);
  const std::vector<ActivationLayout> layouts = cpu::activation_layouts(c.graph);
  ASSERT_EQ(layouts.size(), c.graph.nodes.size());
  int inputs = 0, outputs = 0;
  for (size_t n = 0; n < layouts.size(); ++n) {
    const Node& node = marked->nodes[n];
    EXPECT_EQ(layouts[n].input_channels_last,
              layout(node, cpu::kSrcLayoutAttribute) == cpu::kChannelsLast)
        << node.label();
    EXPECT_EQ(layouts[n].output_channels_last,
              layout(node, cpu::kDstLayoutAttribute) == cpu::kChannelsLast)
        << node.label();
    inputs += layouts[n].input_channels_last;
    outputs += layouts[n].output_channels_last;
  }
  // Some convolutions read channels-last and some write NCHW (for the squeeze-and-excitation).
  EXPECT_GT(inputs, 10);
  EXPECT_GT(outputs, 10);
  EXPECT_LT(outputs, static_cast<int>(layouts.size()));
}

// x -> 1x1 Conv -> (1x1 Conv when `chain`) -> Relu, `channels` on a 32x32 image.
Graph pointwise_graph(int64_t channels, bool chain) {
  Graph graph;
  graph.opset = 17;
  int x = graph.add_value("x", {DType::kFloat32, {1, channels, 32, 32}});
  graph.inputs = {x};
  const int convs = chain ? 2 : 1;
  for (int i = 0; i < convs; ++i) {
    const int w =
        graph.add_value("w" + std::to_string(i), {DType::kFloat32, {channels, channels, 1, 1}});
    graph.values[w].constant = Tensor::zeros(DType::kFloat32, {channels, channels, 1, 1});
    Node conv;
    conv.name = "conv" + std::to_string(i);
    conv.op_type = "Conv";
    conv.inputs = {x, w};
    conv.outputs = {graph.add_value(conv.name + "_out")};
    x = conv.outputs[0];
    graph.nodes.push_back(std::move(conv));
  }
  Node relu;
  relu.name = "relu";
  relu.op_type = "Relu";
  relu.inputs = {x};
  relu.outputs = {graph.add_value("y")};
  graph.outputs = relu.outputs;
  graph.nodes.push_back(std::move(relu));
  infer_graph(graph);
  return graph;
}

// A convolution with an NCHW side reorders it into oneDNN's layout, unless both sides are NCHW
// and the plain GEMM is preferred (64 channels or more on 28x28 or more).
TEST(ConvLayout, DeclaredReordersAreTheNchwSidesOfBlockedConvolutions) {
  const std::vector<ActivationLayout> plain = cpu::activation_layouts(pointwise_graph(64, false));
  EXPECT_FALSE(plain[0].reorders_input);
  EXPECT_FALSE(plain[0].reorders_output);
  const std::vector<ActivationLayout> narrow = cpu::activation_layouts(pointwise_graph(16, false));
  EXPECT_TRUE(narrow[0].reorders_input);
  EXPECT_TRUE(narrow[0].reorders_output);
  // In a chain of two: the first reorders its NCHW input only, the second its NCHW output only.
  const std::vector<ActivationLayout> chain = cpu::activation_layouts(pointwise_graph(64, true));
  EXPECT_TRUE(chain[0].reorders_input);
  EXPECT_FALSE(chain[0].reorders_output);
  EXPECT_FALSE(chain[1].reorders_input);
  EXPECT_TRUE(chain[1].reorders_output);
  EXPECT_FALSE(chain[2].reorders_input || chain[2].reorders_output);  // Relu: no kernel layout
}

// A pooling joins a chain only where oneDNN runs it: not with an Indices output or
// count_include_pad (the loop handles those, on NCHW).
TEST(ConvLayout, PoolingsTheLoopRunsStayNchw) {
  Graph graph;
  graph.opset = 17;
  const auto add = [&](const std::string& op, std::vector<int> inputs,
                       std::map<std::string, Attribute, std::less<>> attributes, int outputs) {
    Node node;
    node.name = op + std::to_string(graph.nodes.size());
    node.op_type = op;
    node.inputs = std::move(inputs);
    node.attributes = std::move(attributes);
    for (int i = 0; i < outputs; ++i)
      node.outputs.push_back(graph.add_value(node.name + "_" + std::to_string(i)));
    graph.nodes.push_back(std::move(node));
    return graph.nodes.back().outputs;
  };
  const int x = graph.add_value("x", {DType::kFloat32, {1, 4, 8, 8}});
  const int w = graph.add_value("w", {DType::kFloat32, {4, 4, 1, 1}});
  graph.values[static_cast<size_t>(w)].constant = Tensor::zeros(DType::kFloat32, {4, 4, 1, 1});
  graph.inputs = {x};
  const std::vector<int64_t> kernel{2, 2};
  const int a = add("Conv", {x, w}, {}, 1)[0];
  const int b = add("Conv", {x, w}, {}, 1)[0];
  const int c = add("Conv", {x, w}, {}, 1)[0];
  add("MaxPool", {a}, {{"kernel_shape", kernel}}, 2);  // with Indices
  add("AveragePool", {b}, {{"kernel_shape", kernel}, {"count_include_pad", int64_t{1}}}, 1);
  const int pooled = add("AveragePool", {c}, {{"kernel_shape", kernel}}, 1)[0];
  graph.outputs = {graph.nodes[3].outputs[0], graph.nodes[3].outputs[1], graph.nodes[4].outputs[0],
                   pooled};
  infer_graph(graph);
  const std::optional<Graph> marked = cpu::with_channels_last_conv_chains(graph);
  ASSERT_TRUE(marked);
  const auto producer = [&](int value) -> const Node& {
    for (const Node& node : marked->nodes) {
      if (node.outputs[0] == value) return node;
    }
    throw std::logic_error("no producer");
  };
  EXPECT_FALSE(producer(a).has(cpu::kDstLayoutAttribute));  // read by MaxPool with Indices
  EXPECT_FALSE(producer(b).has(cpu::kDstLayoutAttribute));  // by AveragePool counting pads
  EXPECT_EQ(layout(producer(c), cpu::kDstLayoutAttribute), cpu::kChannelsLast);
  EXPECT_EQ(layout(producer(pooled), cpu::kSrcLayoutAttribute), cpu::kChannelsLast);
  EXPECT_FALSE(producer(pooled).has(cpu::kDstLayoutAttribute));  // a graph output stays NCHW
}

TEST(ConvLayout, ModelsRunChannelsLastGiveTheirNchwOutputs) {
  for (const std::string name :
       {"real/resnet18", "real/mobilenet_v3_small", "real/ssdlite320", "tv_resnet18"}) {
    SCOPED_TRACE(name);
    const testing::ZooCase c = testing::load_zoo_case(name);
    ASSERT_TRUE(cpu::with_channels_last_conv_chains(c.graph));
    cpu::CpuDevice cpu;
    NchwCpu nchw;
    const std::vector<Tensor> chained = run_on(c.graph, cpu, c.inputs);
    const std::vector<Tensor> plain = run_on(c.graph, nchw, c.inputs);
    ASSERT_EQ(chained.size(), plain.size());
    for (size_t i = 0; i < chained.size(); ++i) {
      const std::vector<double> a = chained[i].to_host().to_doubles();
      const std::vector<double> b = plain[i].to_host().to_doubles();
      ASSERT_EQ(a.size(), b.size());
      for (size_t j = 0; j < a.size(); ++j)
        ASSERT_NEAR(a[j], b[j], 1e-5 * (1 + std::abs(b[j]))) << "output " << i << " at " << j;
    }
    testing::expect_same_outputs(chained, c.expected);
  }
}

}  // namespace
}  // namespace tandem
