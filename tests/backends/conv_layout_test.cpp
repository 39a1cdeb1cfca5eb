// The CPU keeps tensors between convolutions channels-last (backends/cpu/conv_layout.h): which
// tensors it marks, and that a model run so gives what it gives with every tensor NCHW.
#include "backends/cpu/conv_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backends/cpu/cpu_device.h"
#include "expect_outputs.h"
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

TEST(ConvLayout, MarksExactlyTheTensorsThatOnlyConvolutionsRead) {
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
    if (node.op_type != "Conv") {
      EXPECT_FALSE(node.has(cpu::kDstLayoutAttribute) || node.has(cpu::kSrcLayoutAttribute))
          << node.label();
      continue;
    }
    const bool channels_last = layout(node, cpu::kDstLayoutAttribute) == cpu::kChannelsLast;
    chained += channels_last;
    for (const auto& [reader, input] : readers[node.outputs[0]]) {
      // Both ends of a tensor agree on its layout; a tensor any other op reads stays NCHW.
      const char* attribute = input == 0 ? cpu::kSrcLayoutAttribute : cpu::kResidualLayoutAttribute;
      if (reader->op_type == "Conv") {
        EXPECT_EQ(layout(*reader, attribute), layout(node, cpu::kDstLayoutAttribute))
            << node.label() << " -> " << reader->label();
      } else {
        EXPECT_FALSE(channels_last) << node.label() << " -> " << reader->label();
      }
    }
  }
  // Of ResNet-18's 20 convolutions, all but the last (read by GlobalAveragePool) write for
  // convolutions only; the stem's output goes to MaxPool.
  EXPECT_EQ(chained, 18);
}

TEST(ConvLayout, ModelsRunChannelsLastGiveTheirNchwOutputs) {
  for (const std::string name : {"real/resnet18", "real/mobilenet_v3_small", "tv_resnet18"}) {
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
