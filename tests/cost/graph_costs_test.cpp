#include "cost/graph_costs.h"

#include <gtest/gtest.h>

#include <cmath>

#include "report/device_costs.h"
#include "test_cluster.h"

namespace tandem {
namespace {

using testing::GraphBuilder;

Cluster two_gpus_and_a_tpu() {
  Cluster cluster;
  cluster.hosts = {testing::host("h0")};
  cluster.devices = {testing::gpu("gpu0", "h0"), testing::gpu("gpu1", "h0"),
                     testing::tpu("tpu0", "h0", 128)};
  cluster.links = {testing::link("gpu0", "h0", LinkKind::kPcie, 32e9, 32e9, 1e-6),
                   testing::link("gpu1", "h0", LinkKind::kPcie, 32e9, 32e9, 1e-6),
                   testing::link("tpu0", "h0", LinkKind::kPcie, 16e9, 16e9, 1e-6)};
  return cluster;
}

// A big MatMul, two small Adds and, optionally, an fp64 op the TPU cannot run.
Graph model_graph(bool with_fp64) {
  GraphBuilder builder;
  const int a = builder.input("a", DType::kFloat32, {1024, 1024});
  const int b = builder.input("b", DType::kFloat32, {1024, 1024});
  const int product = builder.node("MatMul", {a, b});
  const int sum = builder.node("Add", {builder.node("Add", {product, a}), b});
  std::vector<int> outputs{sum};
  if (with_fp64) {
    const int d = builder.input("d", DType::kFloat64, {16});
    outputs.push_back(builder.node("Neg", {d}));
  }
  return builder.infer(outputs);
}

TEST(GraphDeviceCosts, IdenticalDevicesShareAColumn) {
  const CostModel model(two_gpus_and_a_tpu());
  const GraphDeviceCosts costs = graph_device_costs(model_graph(false), model);
  ASSERT_EQ(costs.columns.size(), 2u);
  EXPECT_EQ(costs.columns[0].label, "gpu0 (x2)");
  EXPECT_EQ(costs.columns[0].ids, (std::vector<std::string>{"gpu0", "gpu1"}));
  EXPECT_EQ(costs.columns[1].label, "tpu0");
  EXPECT_EQ(costs.columns[1].sources, std::vector<std::string>{"test figure"});
}

TEST(GraphDeviceCosts, RowsSumTheirOpsAndNameTheFastest) {
  const Graph graph = model_graph(false);
  const CostModel model(two_gpus_and_a_tpu());
  const GraphDeviceCosts costs = graph_device_costs(graph, model);
  ASSERT_EQ(costs.rows.size(), 2u);
  EXPECT_EQ(costs.rows[0].op_type, "MatMul");  // the slowest op type first
  EXPECT_EQ(costs.rows[1].op_type, "Add");
  EXPECT_EQ(costs.rows[1].count, 2);
  const double adds_on_tpu =
      model.op_seconds(graph.nodes[1], graph, 2) + model.op_seconds(graph.nodes[2], graph, 2);
  EXPECT_DOUBLE_EQ(costs.rows[1].seconds[1], adds_on_tpu);
  for (const OpTypeTimes& row : costs.rows) {
    const int other = 1 - row.fastest;
    EXPECT_LE(row.seconds[row.fastest], row.seconds[other]) << row.op_type;
  }
  EXPECT_DOUBLE_EQ(costs.total_seconds[1], costs.rows[0].seconds[1] + costs.rows[1].seconds[1]);
  EXPECT_EQ(costs.fastest, costs.total_seconds[0] <= costs.total_seconds[1] ? 0 : 1);
}

TEST(GraphDeviceCosts, DeviceThatCannotRunAnOpCannotRunTheGraph) {
  const CostModel model(two_gpus_and_a_tpu());
  const GraphDeviceCosts costs = graph_device_costs(model_graph(true), model);
  EXPECT_TRUE(std::isinf(costs.total_seconds[1]));
  EXPECT_EQ(costs.fastest, 0);
  const auto neg = std::find_if(costs.rows.begin(), costs.rows.end(),
                                [](const OpTypeTimes& row) { return row.op_type == "Neg"; });
  ASSERT_NE(neg, costs.rows.end());
  EXPECT_EQ(neg->fastest, 0);

  const nlohmann::json json = device_costs_json(costs);
  EXPECT_TRUE(json["total_s"][1].is_null());
  EXPECT_EQ(json["fastest"], "gpu0 (x2)");
  EXPECT_EQ(json["columns"][0]["devices"], nlohmann::json({"gpu0", "gpu1"}));
  const std::string table = render_device_costs(costs);
  EXPECT_NE(table.find("cannot run"), std::string::npos) << table;
  EXPECT_NE(table.find("total"), std::string::npos) << table;
  EXPECT_NE(table.find("tpu0: test figure"), std::string::npos) << table;
}

TEST(HumanSeconds, PicksAUnit) {
  EXPECT_EQ(human_seconds(1.5), "1.50 s");
  EXPECT_EQ(human_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(human_seconds(456e-6), "456 us");
  EXPECT_EQ(human_seconds(2e-9), "2.00 ns");
  EXPECT_EQ(human_seconds(0), "0");
  EXPECT_EQ(human_seconds(INFINITY), "cannot run");
}

}  // namespace
}  // namespace tandem
