// Every zoo model (both tiers) on one GPU through the native CUDA backend matches ONNX
// Runtime's outputs, as `tandem run --expect` compares them. Needs an NVIDIA GPU: skipped,
// with the reason, on a machine without one (scripts/gpu-check.sh runs it where there is).
#include <gtest/gtest.h>

#include "backends/cuda/cuda_device.h"
#include "runtime/executor.h"
#include "util/compare.h"
#include "zoo_cases.h"

namespace tandem {
namespace {

class ZooOnCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooOnCuda, MatchesOnnxRuntime) {
  if (const std::string absent = cuda::gpu_absence(); !absent.empty()) GTEST_SKIP() << absent;
  const testing::ZooCase c = testing::load_zoo_case(GetParam());
  cuda::CudaDevice gpu("gpu0", 0);
  GraphExecutor executor(c.graph, gpu);
  // Twice: the second run reuses the arena and must not see stale data.
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> outputs = executor.run(c.inputs);
    ASSERT_EQ(outputs.size(), c.expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_FALSE(outputs[i].on_host()) << "outputs stay in the GPU's memory";
      const Comparison comparison = compare_tensors(outputs[i].to_host(), c.expected[i]);
      EXPECT_TRUE(comparison.matches) << c.name << " output " << i << ": " << comparison.problem
                                      << " element " << comparison.worst_index << " got "
                                      << comparison.actual << ", expected " << comparison.expected;
    }
  }
  EXPECT_GT(gpu.account().peak(), 0u);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooOnCuda, ::testing::ValuesIn(testing::zoo_model_names()),
                         test_name);

}  // namespace
}  // namespace tandem
