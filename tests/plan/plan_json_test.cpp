#include "plan/plan_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "plan/evaluate.h"
#include "plan/sha256.h"
#include "plan/strategies.h"
#include "plan_test_util.h"

namespace tandem {
namespace {

using testing::compute_cluster;
using testing::GraphBuilder;

Graph branching_graph() {
  GraphBuilder builder;
  const int x = builder.input("x", DType::kFloat32, {64, 256});
  const int w = builder.constant("w", DType::kFloat32, {256, 256});
  const int a = builder.node("MatMul", {x, w});
  const int b = builder.node("Relu", {a});
  const int c = builder.node("Exp", {a});
  const int d = builder.node("Add", {b, c});
  return builder.infer({d});
}

void expect_same(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.objective, b.objective);
  EXPECT_EQ(a.device_of_node, b.device_of_node);
  EXPECT_EQ(a.order, b.order);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (size_t s = 0; s < a.segments.size(); ++s) {
    EXPECT_EQ(a.segments[s].device, b.segments[s].device);
    EXPECT_EQ(a.segments[s].nodes, b.segments[s].nodes);
  }
  ASSERT_EQ(a.transfers.size(), b.transfers.size());
  for (size_t t = 0; t < a.transfers.size(); ++t) {
    EXPECT_EQ(a.transfers[t].value, b.transfers[t].value);
    EXPECT_EQ(a.transfers[t].from_node, b.transfers[t].from_node);
    EXPECT_EQ(a.transfers[t].to_device, b.transfers[t].to_device);
    EXPECT_DOUBLE_EQ(a.transfers[t].bytes, b.transfers[t].bytes);
    EXPECT_DOUBLE_EQ(a.transfers[t].seconds, b.transfers[t].seconds);
    ASSERT_EQ(a.transfers[t].path.size(), b.transfers[t].path.size());
    for (size_t h = 0; h < a.transfers[t].path.size(); ++h) {
      EXPECT_EQ(a.transfers[t].path[h].link, b.transfers[t].path[h].link);
      EXPECT_EQ(a.transfers[t].path[h].forward, b.transfers[t].path[h].forward);
    }
  }
  EXPECT_EQ(a.microbatches, b.microbatches);
  EXPECT_EQ(a.batch_share, b.batch_share);
  EXPECT_DOUBLE_EQ(a.predicted.latency_seconds, b.predicted.latency_seconds);
  EXPECT_DOUBLE_EQ(a.predicted.throughput_samples_per_second,
                   b.predicted.throughput_samples_per_second);
  EXPECT_EQ(a.predicted.busy_seconds, b.predicted.busy_seconds);
  // Bytes are written as whole numbers.
  const auto expect_whole = [](const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.5);
  };
  expect_whole(a.predicted.memory_bytes, b.predicted.memory_bytes);
  expect_whole(a.predicted.link_bytes, b.predicted.link_bytes);
  EXPECT_EQ(a.chosen, b.chosen);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_DOUBLE_EQ(a.lower_bound, b.lower_bound);
  EXPECT_DOUBLE_EQ(a.efficiency, b.efficiency);
  EXPECT_DOUBLE_EQ(a.speedup_over_best_single, b.speedup_over_best_single);
  EXPECT_EQ(a.figure_sources, b.figure_sources);
}

PlanProvenance example_provenance() {
  PlanProvenance provenance;
  provenance.model = {"zoo/m.onnx", "/models/zoo/m.onnx", std::string(64, 'a')};
  provenance.cluster = {"c.yaml", "/models/c.yaml", std::string(64, 'b')};
  provenance.dims = {{"batch", 8}};
  provenance.shapes = {{"x", {64, 256}}};
  provenance.fused = false;
  return provenance;
}

struct Fixture {
  Graph graph = branching_graph();
  CostModel cost{compute_cluster()};
  PlanningProblem problem{graph, cost.cluster(), cost, {}};
  PlanProvenance provenance = example_provenance();

  nlohmann::json json_of(const Plan& plan) const { return plan_json(plan, problem, provenance); }

  // A plan across two devices, so that it has transfers and several segments.
  Plan split_plan() const {
    Plan plan;
    plan.strategy = "test";
    plan.device_of_node.assign(problem.node_count(), 0);
    plan.device_of_node[2] = 3;
    evaluate_plan(problem, plan);
    return plan;
  }
};

TEST(PlanJson, RoundTrip) {
  const Fixture fixture;
  const Plan plan = fixture.split_plan();
  ASSERT_FALSE(plan.transfers.empty());
  const nlohmann::json json = fixture.json_of(plan);
  EXPECT_EQ(json["format"], "tandem-plan");
  EXPECT_EQ(json["version"], Plan::kFormatVersion);
  EXPECT_EQ(json["nodes"][0]["name"], fixture.graph.nodes[0].name);
  EXPECT_FALSE(json["transfers"][0]["value"].get<std::string>().empty());
  expect_same(plan, plan_from_json(json, fixture.problem, "plan.json"));
}

TEST(PlanJson, RoundTripThroughAFile) {
  const Fixture fixture;
  const std::optional<Plan> plan = make_heft_strategy()->plan(fixture.problem);
  ASSERT_TRUE(plan);
  const std::string path =
      (std::filesystem::temp_directory_path() / "tandem_plan_json_test.json").string();
  write_plan(path, *plan, fixture.problem, fixture.provenance);
  expect_same(*plan, read_plan(path, fixture.problem));
  std::filesystem::remove(path);
}

TEST(PlanJson, RoundTripOfPipelineAndDataParallelFields) {
  const Fixture fixture;
  Plan plan;
  plan.strategy = "pipeline";
  plan.device_of_node.assign(fixture.problem.node_count(), 0);
  plan.microbatches = 4;
  plan.stages = {{0, 0, 1, 0}, {3, 2, 3, 0}};
  evaluate_plan(fixture.problem, plan);
  expect_same(plan, plan_from_json(fixture.json_of(plan), fixture.problem, "p"));
  Plan shares;
  shares.strategy = "data-parallel";
  shares.device_of_node.assign(fixture.problem.node_count(), 0);
  shares.batch_share = {0.5, 0, 0, 0.5};
  evaluate_plan(fixture.problem, shares);
  expect_same(shares, plan_from_json(fixture.json_of(shares), fixture.problem, "p"));
}

std::string error_of(const nlohmann::json& json, const PlanningProblem& problem) {
  try {
    plan_from_json(json, problem, "plan.json");
  } catch (const InputError& e) {
    return e.subject() + ": " + e.what();
  }
  return "";
}

TEST(PlanJson, RecordsWhatThePlanWasMadeFrom) {
  const Fixture fixture;
  const nlohmann::json json = fixture.json_of(fixture.split_plan());
  EXPECT_EQ(json["model"]["path"], "zoo/m.onnx");
  EXPECT_EQ(json["cluster"]["absolute_path"], "/models/c.yaml");
  const PlanProvenance read = plan_provenance(json, "plan.json");
  EXPECT_EQ(read.model.sha256, fixture.provenance.model.sha256);
  EXPECT_EQ(read.cluster.path, "c.yaml");
  EXPECT_EQ(read.dims, fixture.provenance.dims);
  EXPECT_EQ(read.shapes, fixture.provenance.shapes);
  EXPECT_FALSE(read.fused);
  EXPECT_EQ(read.dim_arguments(), std::vector<std::string>{"batch=8"});
  EXPECT_EQ(read.shape_arguments(), std::vector<std::string>{"x=64x256"});
}

TEST(PlanJson, RecordsEveryObjectivesBoundAndReadsBackItsOwn) {
  const Fixture fixture;
  const Plan plan = fixture.split_plan();
  const nlohmann::json json = fixture.json_of(plan);
  EXPECT_DOUBLE_EQ(json["lower_bound"]["latency_s"].get<double>(), plan.lower_bound);
  EXPECT_GT(json["lower_bound"]["throughput_samples_per_s"].get<double>(), 0);
  for (const auto& bytes : json["predicted"]["memory_bytes"])
    EXPECT_TRUE(bytes.is_number_integer());
}

TEST(PlanJson, RejectsAMalformedRecordOfItsSources) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json["model"]["sha256"] = "abc";
  try {
    plan_provenance(json, "plan.json");
    FAIL() << "accepted a short hash";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'model.sha256'"), std::string::npos) << e.what();
  }
  json = fixture.json_of(fixture.split_plan());
  json["dims"]["batch"] = 0;
  EXPECT_THROW(plan_provenance(json, "plan.json"), InputError);
}

TEST(PlanJson, RefusesFilesThatChangedSinceThePlan) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tandem_plan_source_test.onnx").string();
  std::ofstream(path) << "model bytes";
  const PlanSource source = plan_source(path);
  EXPECT_EQ(source.path, path);
  EXPECT_EQ(source.sha256, sha256_hex("model bytes"));
  EXPECT_NO_THROW(check_unchanged(source, "model", "plan.json"));
  std::ofstream(path) << "other bytes";
  try {
    check_unchanged(source, "model", "plan.json");
    FAIL() << "accepted a changed model";
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), "plan.json");
    EXPECT_NE(std::string(e.what()).find("the model " + path + " changed since the plan was made"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(check_unchanged(source, "model", "plan.json"), InputError);
}

TEST(Sha256, MatchesTheStandardsExamples) {
  // FIPS 180-4's examples (one block, two blocks) and the empty and million-'a' messages.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(PlanJson, RefusesVersionOneWithWhatToDo) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json["version"] = 1;
  const std::string error = error_of(json, fixture.problem);
  EXPECT_NE(error.find("a version 1 plan"), std::string::npos) << error;
  EXPECT_NE(error.find("tandem plan"), std::string::npos) << error;
}

TEST(PlanJson, RejectsAnotherVersion) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json["version"] = 99;
  EXPECT_NE(error_of(json, fixture.problem).find("plan.json: field 'version'"), std::string::npos);
}

TEST(PlanJson, RejectsAFormatThatIsNotAString) {
  // A number there escaped as nlohmann's type_error (exit status 3); also a fuzz regression seed.
  const Fixture fixture;
  const std::string error = error_of({{"format", 1}}, fixture.problem);
  EXPECT_NE(error.find("plan.json: field 'format'"), std::string::npos) << error;
}

TEST(PlanJson, RejectsAPlanOfAnotherModel) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json["nodes"][1]["name"] = "Conv_7";
  const std::string error = error_of(json, fixture.problem);
  EXPECT_NE(error.find("nodes[1].name"), std::string::npos) << error;
  EXPECT_NE(error.find("Conv_7"), std::string::npos) << error;
}

TEST(PlanJson, RejectsUnknownDevices) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json["nodes"][0]["device"] = "tpu9";
  const std::string error = error_of(json, fixture.problem);
  EXPECT_NE(error.find("nodes[0].device"), std::string::npos) << error;
  EXPECT_NE(error.find("tpu9"), std::string::npos) << error;
}

TEST(PlanJson, RejectsAMissingField) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json.erase("order");
  EXPECT_NE(error_of(json, fixture.problem).find("field 'order': missing"), std::string::npos);
}

TEST(PlanJson, RejectsAnOrderMissingNodes) {
  const Fixture fixture;
  nlohmann::json json = fixture.json_of(fixture.split_plan());
  json["order"].erase(json["order"].size() - 1);
  EXPECT_NE(error_of(json, fixture.problem).find("field 'order'"), std::string::npos);
}

TEST(PlanJson, RejectsFilesThatAreNotJson) {
  const Fixture fixture;
  const std::string path =
      (std::filesystem::temp_directory_path() / "tandem_plan_not_json.json").string();
  std::ofstream(path) << "nodes: [";
  try {
    read_plan(path, fixture.problem);
    FAIL() << "accepted a file that is not JSON";
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), path);
  }
  std::filesystem::remove(path);
}

TEST(PlanJson, RejectsNumbersBeyondADouble) {
  // nlohmann's parser throws out_of_range, not parse_error, for these (found by tests/fuzz).
  const Fixture fixture;
  const std::string path =
      (std::filesystem::temp_directory_path() / "tandem_plan_overflow.json").string();
  std::ofstream(path) << R"({"format": "tandem-plan", "version": 1e400})";
  try {
    read_plan(path, fixture.problem);
    FAIL() << "accepted a number beyond a double";
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), path);
    EXPECT_NE(std::string(e.what()).find("not JSON"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tandem
