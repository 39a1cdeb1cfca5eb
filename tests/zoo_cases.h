#pragma once
// The zoo (both tiers) as the backend tests load it: each model at its manifest's dims, fused as
// `tandem run` runs it, with its reference inputs and ONNX Runtime's outputs.
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/fuse.h"
#include "onnx/importer.h"
#include "util/npy.h"

namespace tandem::testing {

struct ZooCase {
  std::string name;  // "mlp", "real/resnet18"
  Graph graph;
  std::vector<Tensor> inputs;    // follow graph.inputs
  std::vector<Tensor> expected;  // follow graph.outputs
};

// The source tree: $TANDEM_SOURCE where the tests run away from where they were built (a GPU
// machine, scripts/gpu-check.sh), else the tree they were built from.
inline std::string source_dir() {
  const char* moved = std::getenv("TANDEM_SOURCE");
  return moved ? moved : TANDEM_SOURCE_DIR;
}

inline std::vector<std::string> zoo_model_names() {
  std::vector<std::string> names;
  for (const std::string tier : {"", "real/"}) {
    std::ifstream file(source_dir() + "/zoo/" + tier + "manifest.json");
    if (!file) continue;
    for (const auto& entry : nlohmann::json::parse(file)) {
      names.push_back(tier + entry["name"].get<std::string>());
    }
  }
  return names;
}

inline ZooCase load_zoo_case(const std::string& name) {
  const size_t slash = name.find('/');
  const std::string tier = slash == std::string::npos ? "" : name.substr(0, slash + 1);
  const std::string model = name.substr(tier.size());
  const std::string dir = source_dir() + "/zoo/" + tier;
  std::ifstream file(dir + "manifest.json");
  for (const auto& entry : nlohmann::json::parse(file)) {
    if (entry["name"] != model) continue;
    ImportOptions options;
    for (const auto& [dim, size] : entry["dims"].items()) options.dims[dim] = size.get<int64_t>();
    ZooCase c{name, {}, {}, {}};
    ImportedModel imported = import_onnx(dir + entry["path"].get<std::string>(), options);
    fuse_for_inference(imported.graph);
    c.graph = std::move(imported.graph);
    for (int id : c.graph.inputs) {
      for (const auto& input : entry["inputs"]) {
        if (input["name"] == c.graph.values[id].name) {
          c.inputs.push_back(read_npy(dir + input["file"].get<std::string>()));
        }
      }
    }
    for (const auto& output : entry["outputs"]) {
      c.expected.push_back(read_npy(dir + output["file"].get<std::string>()));
    }
    return c;
  }
  throw std::runtime_error("no zoo model " + name);
}

}  // namespace tandem::testing
