#include "pjrt_op_util.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_device.h"
#include "backends/pjrt/lower.h"
#include "ir/infer.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

namespace tandem::pjrt::testing {

Tensor random(DType dtype, Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_tensor(dtype, shape, rng);
}

Tensor random_scaled(Shape shape, float scale, uint64_t seed) {
  Tensor tensor = random(DType::kFloat32, std::move(shape), seed);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] *= scale;
  return tensor;
}

PjrtDevice& cpu_plugin_device() {
  static PjrtDevice device("pjrt0", std::make_shared<PjrtSession>(
                                        PjrtPlugin::load(TANDEM_PJRT_CPU_PLUGIN), std::string()));
  return device;
}

Graph one_node_graph(const OpCase& op) {
  Graph graph;
  graph.opset = 21;
  Node node;
  node.name = "test_" + op.op_type;
  node.op_type = op.op_type;
  node.attributes = op.attributes;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Tensor& input = op.inputs[i];
    if (!input.defined()) {
      node.inputs.push_back(-1);
      continue;
    }
    const int id = graph.add_value("in" + std::to_string(i), {input.dtype(), input.shape()});
    if (i < op.constant.size() && op.constant[i]) {
      graph.values[static_cast<size_t>(id)].constant = input;
    } else {
      graph.inputs.push_back(id);
    }
    node.inputs.push_back(id);
  }
  for (int i = 0; i < op.num_outputs; ++i) {
    node.outputs.push_back(graph.add_value("out" + std::to_string(i)));
    graph.outputs.push_back(node.outputs.back());
  }
  graph.nodes.push_back(std::move(node));
  graph.sort_topologically();
  infer_graph(graph);
  return graph;
}

std::vector<Tensor> fed_inputs(const OpCase& op) {
  std::vector<Tensor> fed;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i].defined() && !(i < op.constant.size() && op.constant[i])) {
      fed.push_back(op.inputs[i]);
    }
  }
  return fed;
}

namespace {

// The node lowered (it must be), run on the plugin and on the CPU backend; outputs of the same
// dtypes and shapes, or a fatal failure.
void run_on_both(const OpCase& op, std::vector<Tensor>& actual, std::vector<Tensor>& expected) {
  const Graph graph = one_node_graph(op);
  ASSERT_EQ(graph.nodes.size(), 1u) << op.op_type << ": shape inference folded the node away";
  ASSERT_EQ(lowering_refusal(graph.nodes[0], graph), "") << op.op_type;
  const std::vector<Tensor> fed = fed_inputs(op);
  cpu::CpuDevice cpu;
  expected = GraphExecutor(graph, cpu).run(fed);
  actual = GraphExecutor(graph, cpu_plugin_device()).run(fed);
  for (Tensor& output : actual) output = output.to_host();  // out of the PJRT device's memory
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    ASSERT_EQ(actual[o].dtype(), expected[o].dtype()) << op.op_type << " output " << o;
    ASSERT_EQ(actual[o].shape(), expected[o].shape()) << op.op_type << " output " << o;
  }
}

}  // namespace

void expect_identical_to_cpu(const OpCase& op) {
  std::vector<Tensor> actual, expected;
  run_on_both(op, actual, expected);
  if (::testing::Test::HasFatalFailure()) return;
  for (size_t o = 0; o < expected.size(); ++o) {
    const size_t size = dtype_size(expected[o].dtype());
    const std::vector<double> a = actual[o].to_doubles(), e = expected[o].to_doubles();
    for (size_t i = 0; i < e.size(); ++i) {
      if (std::isnan(e[i]) && std::isnan(a[i])) continue;
      EXPECT_EQ(std::memcmp(static_cast<const char*>(actual[o].raw()) + i * size,
                            static_cast<const char*>(expected[o].raw()) + i * size, size),
                0)
          << op.op_type << " output " << o << " [" << i << "] (" << dtype_name(expected[o].dtype())
          << "): pjrt " << a[i] << ", cpu " << e[i];
    }
  }
}

std::string refusal(const OpCase& op) {
  const Graph graph = one_node_graph(op);
  if (graph.nodes.size() != 1) {
    ADD_FAILURE() << op.op_type << ": shape inference folded the node away";
    return "folded";
  }
  return lowering_refusal(graph.nodes[0], graph);
}

void expect_matches_cpu(const OpCase& op) {
  std::vector<Tensor> actual, expected;
  run_on_both(op, actual, expected);
  if (::testing::Test::HasFatalFailure()) return;
  for (size_t o = 0; o < expected.size(); ++o) {
    const std::vector<double> a = actual[o].to_doubles(), e = expected[o].to_doubles();
    const bool exact = !is_floating(expected[o].dtype());
    for (size_t i = 0; i < e.size(); ++i) {
      if (std::isnan(e[i])) {
        EXPECT_TRUE(std::isnan(a[i])) << op.op_type << " output " << o << "[" << i << "]";
        continue;
      }
      const double tolerance = exact ? 0 : op.atol + op.rtol * std::abs(e[i]);
      if (std::isinf(e[i])) {
        EXPECT_EQ(a[i], e[i]) << op.op_type << " output " << o << "[" << i << "]";
      } else {
        ASSERT_LE(std::abs(a[i] - e[i]), tolerance)
            << op.op_type << " output " << o << "[" << i << "]: pjrt " << a[i] << ", cpu " << e[i];
      }
    }
  }
}

}  // namespace tandem::pjrt::testing
