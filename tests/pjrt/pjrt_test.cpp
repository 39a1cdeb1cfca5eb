// The PJRT backend against the xla-cpu-pjrt plugin that scripts/setup.sh installs: loading,
// version checks, bad plugins, the client's devices, and a StableHLO module run end to end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/pjrt/pjrt_client.h"
#include "ir/error.h"

namespace tandem::pjrt {
namespace {

std::shared_ptr<PjrtPlugin> cpu_plugin() { return PjrtPlugin::load(TANDEM_PJRT_CPU_PLUGIN); }

// The InputError's subject and message, for checking what a user would read.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.subject() + ": " + e.what();
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

TEST(PjrtPlugin, LoadsAndAcceptsTheVersion) {
  auto plugin = cpu_plugin();
  EXPECT_EQ(plugin->api_major(), PJRT_API_MAJOR);
  EXPECT_GE(plugin->api_minor(), PJRT_API_MINOR);
  EXPECT_EQ(cpu_plugin(), plugin) << "the same path gives the same plugin";
}

TEST(PjrtPlugin, MissingFileIsAnInputError) {
  std::string message = input_error([] { PjrtPlugin::load("/nonexistent/plugin.so"); });
  EXPECT_NE(message.find("/nonexistent/plugin.so"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot load PJRT plugin"), std::string::npos) << message;
}

TEST(PjrtPlugin, LibraryWithoutGetPjrtApiIsAnInputError) {
  std::string message = input_error([] { PjrtPlugin::load("libm.so.6"); });
  EXPECT_NE(message.find("libm.so.6: not a PJRT plugin: it exports no GetPjrtApi"),
            std::string::npos)
      << message;
}

TEST(PjrtPlugin, VersionMismatchNamesThePluginAndBothVersions) {
  EXPECT_NO_THROW(check_api_version("p.so", PJRT_API_MAJOR, PJRT_API_MINOR));
  EXPECT_NO_THROW(check_api_version("p.so", PJRT_API_MAJOR, PJRT_API_MINOR + 5));
  std::string major = input_error([] { check_api_version("p.so", PJRT_API_MAJOR + 1, 0); });
  EXPECT_NE(major.find("p.so: PJRT API version mismatch: the plugin implements " +
                       std::to_string(PJRT_API_MAJOR + 1) + ".0, Tandem was built against " +
                       std::to_string(PJRT_API_MAJOR) + "." + std::to_string(PJRT_API_MINOR)),
            std::string::npos)
      << major;
  std::string minor =
      input_error([] { check_api_version("p.so", PJRT_API_MAJOR, PJRT_API_MINOR - 1); });
  EXPECT_NE(minor.find("version mismatch"), std::string::npos) << minor;
}

TEST(PjrtPlugin, PathFromClusterThenEnvironmentThenPython) {
  EXPECT_EQ(plugin_path("/from/cluster.so", "cpu"), "/from/cluster.so");
  setenv("TANDEM_PJRT_PLUGIN", "/from/env.so", 1);
  EXPECT_EQ(plugin_path("", "cpu"), "/from/env.so");
  EXPECT_EQ(plugin_path("/from/cluster.so", "cpu"), "/from/cluster.so");
  unsetenv("TANDEM_PJRT_PLUGIN");

  // A virtual environment holding a CUDA plugin as jax-cuda*-pjrt lays it out.
  namespace fs = std::filesystem;
  const fs::path venv = fs::temp_directory_path() / ("tandem-venv-" + std::to_string(getpid()));
  const fs::path package = venv / "lib/python3.11/site-packages/jax_plugins/xla_cuda13";
  fs::create_directories(package);
  std::ofstream(package / "xla_cuda_plugin.so") << "not loaded by the search";
  setenv("VIRTUAL_ENV", venv.c_str(), 1);
  EXPECT_EQ(plugin_path("", "gpu"), (package / "xla_cuda_plugin.so").string());
  unsetenv("VIRTUAL_ENV");
  fs::remove_all(venv);
  // The CPU plugin that setup installed in the repository's .venv, found from the executable.
  EXPECT_EQ(fs::path(plugin_path("", "cpu")).filename(), "xla_cpu_pjrt.so");
  // No libtpu is installed here: the error names the ways to give one.
  EXPECT_NE(input_error([] { plugin_path("", "tpu"); }).find("TANDEM_PJRT_PLUGIN"),
            std::string::npos);
}

TEST(PjrtClient, ListsCpuDevices) {
  PjrtClient client(cpu_plugin());
  EXPECT_EQ(client.platform_name(), "cpu");
  auto devices = client.devices();
  ASSERT_GE(devices.size(), 1u);
  for (const auto& device : devices) {
    EXPECT_EQ(device.kind, "cpu");
    EXPECT_TRUE(device.addressable);
  }
}

constexpr const char* kAdd = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

TEST(PjrtClient, CompilesAndRunsAStableHloAdd) {
  PjrtClient client(cpu_plugin());
  PjrtExecutable add = client.compile_mlir(kAdd);
  ASSERT_EQ(add.num_outputs(), 1u);
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 1e30f};
  const std::vector<float> b = {0.25f, 2.0f, -8.0f, 1e30f};
  const std::vector<int64_t> dims = {4};
  PjrtBuffer da = client.to_device(a.data(), PJRT_Buffer_Type_F32, dims);
  PjrtBuffer db = client.to_device(b.data(), PJRT_Buffer_Type_F32, dims);
  const PjrtBuffer* arguments[] = {&da, &db};
  std::vector<PjrtBuffer> outputs = add.execute(arguments, client.addressable_device(0));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].dims(), dims);
  std::vector<float> sum(4);
  outputs[0].to_host(sum.data(), sum.size() * sizeof(float));
  for (size_t i = 0; i < sum.size(); ++i) EXPECT_EQ(sum[i], a[i] + b[i]) << i;
}

TEST(PjrtClient, OneCompilationRunsOnAnyDeviceAndCopiesBetweenDevices) {
  PjrtClient client(cpu_plugin());
  ASSERT_GE(client.addressable_device_count(), 2u);
  PjrtExecutable add = client.compile_mlir(kAdd);
  const std::vector<float> a = {1, 2, 3, 4};
  const std::vector<int64_t> dims = {4};
  PjrtBuffer on_first = client.to_device(a.data(), PJRT_Buffer_Type_F32, dims, 0);
  // Device to device within the plugin, then the program on the second device.
  PjrtBuffer on_second = on_first.copy_to_device(client.addressable_device(1));
  const PjrtBuffer* arguments[] = {&on_second, &on_second};
  std::vector<PjrtBuffer> outputs = add.execute(arguments, client.addressable_device(1));
  std::vector<float> sum(4);
  outputs[0].to_host(sum.data(), sum.size() * sizeof(float));
  EXPECT_EQ(sum, (std::vector<float>{2, 4, 6, 8}));
}

TEST(PjrtClient, SerializedExecutableLoadsAndRuns) {
  PjrtClient client(cpu_plugin());
  const std::string bytes = client.compile_mlir(kAdd).serialize();
  ASSERT_FALSE(bytes.empty());
  PjrtExecutable add = client.deserialize(bytes);
  const std::vector<float> a = {1, 2, 3, 4};
  const std::vector<int64_t> dims = {4};
  PjrtBuffer buffer = client.to_device(a.data(), PJRT_Buffer_Type_F32, dims);
  const PjrtBuffer* arguments[] = {&buffer, &buffer};
  std::vector<PjrtBuffer> outputs = add.execute(arguments, client.addressable_device(0));
  std::vector<float> sum(4);
  outputs[0].to_host(sum.data(), sum.size() * sizeof(float));
  EXPECT_EQ(sum, (std::vector<float>{2, 4, 6, 8}));
}

TEST(PjrtClient, BadModuleIsAPjrtErrorWithTheMessage) {
  PjrtClient client(cpu_plugin());
  try {
    client.compile_mlir("func.func @main( this is not mlir");
    FAIL() << "compiled";
  } catch (const PjrtError& e) {
    EXPECT_NE(std::string(e.what()).find("PJRT_Client_Compile: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::pjrt
