#pragma once
// Zoo models as the runtime tests load them: at a batch size, fused as `tandem run` runs them,
// with how their batch splits; seeded random inputs.
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ir/fuse.h"
#include "onnx/batch_split.h"
#include "onnx/importer.h"
#include "plan/problem.h"
#include "util/random_tensor.h"

namespace tandem {

inline const std::string kSource = TANDEM_SOURCE_DIR;

inline std::vector<std::string> zoo_models() {
  std::ifstream file(kSource + "/zoo/manifest.json");
  std::vector<std::string> names;
  if (!file) return names;
  for (const auto& entry : nlohmann::json::parse(file)) names.push_back(entry["name"]);
  return names;
}

// A zoo model at a batch size, fused as `tandem run` runs it, and how its batch splits (the
// model re-bound at other batch sizes, for plans that split the batch).
struct Model {
  std::string path;
  ImportOptions options;
  Graph graph;
  BatchSplit split;

  Model(const std::string& name, int64_t batch_dim) {
    path = kSource + "/zoo/" + name + "/model.onnx";
    options.dims["batch"] = batch_dim;
    ImportedModel model = import_onnx(path, options);
    fuse_for_inference(model.graph);
    split = find_batch_split(model, options, [](Graph& piece) { fuse_for_inference(piece); });
    graph = std::move(model.graph);
  }
  PlanOptions plan_options() const {
    PlanOptions plan;
    plan.batch = split.batch;
    plan.batch_unsplittable = split.refusal;
    return plan;
  }
};

inline std::vector<Tensor> random_inputs(const Graph& graph) {
  std::mt19937_64 rng(7);
  std::vector<Tensor> inputs;
  for (int id : graph.inputs)
    inputs.push_back(random_tensor(graph.values[id].type.dtype, graph.values[id].type.shape, rng));
  return inputs;
}

}  // namespace tandem
