// The plan-file reader on arbitrary bytes, for one fixed problem built as `tandem plan` builds
// it: tests/fuzz/data/plan_model.onnx (a small MLP with a branch, batch 2, fused for inference)
// on examples/clusters/two-hosts.yaml (GPUs and TPUs in two hosts: multi-hop paths). The seeds
// in corpus/plan are that command's plans with each strategy (tests/fuzz/make_corpus.py).
#include <memory>

#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "fuzz_support.h"
#include "ir/fuse.h"
#include "onnx/importer.h"
#include "plan/plan_json.h"

namespace {

struct Fixture {
  tandem::ImportedModel model;
  std::unique_ptr<tandem::CostModel> cost;
  std::unique_ptr<tandem::PlanningProblem> problem;
};

Fixture* fixture = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string source = TANDEM_SOURCE_DIR;
  fixture = new Fixture;
  tandem::ImportOptions options;
  options.dims["batch"] = 2;
  fixture->model = tandem::import_onnx(source + "/tests/fuzz/data/plan_model.onnx", options);
  tandem::fuse_for_inference(fixture->model.graph);
  const tandem::Graph& graph = fixture->model.graph;
  fixture->cost = std::make_unique<tandem::CostModel>(
      tandem::load_cluster(source + "/examples/clusters/two-hosts.yaml"));
  tandem::PlanOptions plan_options;
  plan_options.batch = graph.values[graph.inputs[0]].type.shape[0];
  fixture->problem = std::make_unique<tandem::PlanningProblem>(graph, fixture->cost->cluster(),
                                                               *fixture->cost, plan_options);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::write_scratch("plan.json", data, size);
  return tandem::fuzz::expect_clean([&] { tandem::read_plan(path, *fixture->problem); });
}
