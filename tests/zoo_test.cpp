// Every zoo model, run on the CPU backend, matches ONNX Runtime's outputs (the zoo generator
// stores them): floats within rtol 1e-3, atol 1e-4 x max|reference|; integers and booleans exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_device.h"
#include "ir/fuse.h"
#include "onnx/importer.h"
#include "runtime/executor.h"
#include "util/compare.h"
#include "util/npy.h"

namespace tandem {
namespace {

std::string zoo_dir() {
  const char* dir = std::getenv("TANDEM_ZOO");
  return dir ? dir : TANDEM_DEFAULT_ZOO;
}

nlohmann::json manifest() {
  std::ifstream file(zoo_dir() + "/manifest.json");
  if (!file) return nlohmann::json::array();
  return nlohmann::json::parse(file);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& entry : manifest()) names.push_back(entry["name"]);
  return names;
}

// Parameters: model name, and whether the graph is fused for inference first (as `run` does).
class ZooModel : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(ZooModel, MatchesOnnxRuntime) {
  const auto& [name, fused] = GetParam();
  nlohmann::json entry;
  for (const auto& candidate : manifest()) {
    if (candidate["name"] == name) entry = candidate;
  }
  ASSERT_FALSE(entry.is_null());
  ImportOptions options;
  for (const auto& [name, size] : entry["dims"].items()) options.dims[name] = size.get<int64_t>();
  ImportedModel model = import_onnx(zoo_dir() + "/" + entry["path"].get<std::string>(), options);
  if (fused) fuse_for_inference(model.graph);
  ASSERT_EQ(model.graph.inputs.size(), entry["inputs"].size());

  std::vector<Tensor> inputs;
  for (int id : model.graph.inputs) {
    for (const auto& input : entry["inputs"]) {
      if (input["name"] == model.graph.values[id].name)
        inputs.push_back(read_npy(zoo_dir() + "/" + input["file"].get<std::string>()));
    }
  }
  ASSERT_EQ(inputs.size(), model.graph.inputs.size());

  cpu::CpuDevice device;
  GraphExecutor executor(model.graph, device);
  // Twice: the second run reuses the arena and must not see stale data.
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> outputs = executor.run(inputs);
    ASSERT_EQ(outputs.size(), entry["outputs"].size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto& expected_entry = entry["outputs"][i];
      ASSERT_EQ(model.graph.values[model.graph.outputs[i]].name, expected_entry["name"]);
      const Tensor expected = read_npy(zoo_dir() + "/" + expected_entry["file"].get<std::string>());
      const Comparison comparison = compare_tensors(outputs[i], expected);
      EXPECT_TRUE(comparison.matches)
          << name << " output " << expected_entry["name"] << ": " << comparison.problem
          << " element " << comparison.worst_index << " got " << comparison.actual << ", expected "
          << comparison.expected;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModel,
                         ::testing::Combine(::testing::ValuesIn(model_names()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) ? "_fused" : "_as_imported");
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooModel);

TEST(Zoo, ManifestIsPresent) {
  ASSERT_GE(model_names().size(), 10u)
      << "run scripts/setup.sh to generate the zoo in " << zoo_dir();
}

}  // namespace
}  // namespace tandem
