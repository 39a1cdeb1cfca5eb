// Presets: every one loads, every figure has a source; units; bad preset files.
#include "devices/presets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "devices/profile.h"
#include "devices/units.h"
#include "ir/error.h"

namespace tandem {
namespace {

// Every figure a preset sets, with a name for failure messages.
std::vector<std::pair<std::string, Figure>> figures_of(const DeviceFigures& figures) {
  std::vector<std::pair<std::string, Figure>> all;
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    const std::string name(precision_name(static_cast<Precision>(p)));
    all.push_back({"matrix." + name, figures.matrix_flops[p]});
    all.push_back({"vector." + name, figures.vector_flops[p]});
  }
  all.push_back({"memory", figures.memory_bytes});
  all.push_back({"memory_bandwidth", figures.memory_bandwidth});
  all.push_back({"launch_overhead", figures.launch_overhead});
  all.push_back({"step_overhead", figures.step_overhead});
  all.push_back({"price_per_hour", figures.price_per_hour});
  return all;
}

TEST(Presets, EveryAskedForDeviceExists) {
  const PresetLibrary& presets = PresetLibrary::instance();
  for (const char* name :
       {"nvidia-a100-80gb", "nvidia-h100-sxm", "nvidia-h100-pcie", "nvidia-h200", "nvidia-b200",
        "nvidia-l4", "google-tpu-v4", "google-tpu-v5e", "google-tpu-v5p", "google-tpu-v6e",
        "cpu-generic-avx2", "xla-cpu-plugin"}) {
    EXPECT_NE(presets.find_device(name), nullptr) << name;
  }
  for (const char* name :
       {"pcie-gen4-x16", "pcie-gen5-x16", "nvlink4", "nvlink5", "ici-v4", "ici-v5e", "ici-v5p",
        "ici-v6e", "network-100g", "network-200g", "network-400g"}) {
    EXPECT_NE(presets.find_link(name), nullptr) << name;
  }
}

TEST(Presets, EveryFigureHasASource) {
  const PresetLibrary& presets = PresetLibrary::instance();
  int figures = 0;
  for (const DevicePreset& preset : presets.devices()) {
    for (const auto& [name, figure] : figures_of(preset.figures)) {
      if (!figure.known()) continue;
      ++figures;
      EXPECT_FALSE(figure.source.empty()) << preset.name << "." << name;
    }
    if (preset.figures.matrix_tile != 1) {
      EXPECT_FALSE(preset.figures.matrix_tile_source.empty()) << preset.name;
    }
  }
  for (const LinkPreset& preset : presets.links()) {
    EXPECT_FALSE(preset.bandwidth.source.empty()) << preset.name;
    if (preset.latency.known()) {
      EXPECT_FALSE(preset.latency.source.empty()) << preset.name;
    }
  }
  EXPECT_GT(figures, 80);  // the loop saw the presets
}

TEST(Presets, AcceleratorsHaveTheCoreFigures) {
  for (const DevicePreset& preset : PresetLibrary::instance().devices()) {
    if (preset.kind == DeviceKind::kCpu) continue;
    const DeviceFigures& figures = preset.figures;
    EXPECT_TRUE(figures.matrix_flops[static_cast<int>(Precision::kBf16)].known()) << preset.name;
    EXPECT_TRUE(figures.matrix_flops[static_cast<int>(Precision::kFp32)].known()) << preset.name;
    EXPECT_TRUE(figures.memory_bytes.known()) << preset.name;
    EXPECT_TRUE(figures.memory_bandwidth.known()) << preset.name;
    EXPECT_TRUE(figures.launch_overhead.known() || figures.step_overhead.known()) << preset.name;
    EXPECT_GT(figures.matrix_tile, 1) << preset.name;
    EXPECT_NE(PresetLibrary::instance().find_link(preset.host_link), nullptr) << preset.name;
  }
}

TEST(Presets, FiguresMatchTheSources) {
  const PresetLibrary& presets = PresetLibrary::instance();
  const int bf16 = static_cast<int>(Precision::kBf16);
  EXPECT_DOUBLE_EQ(presets.find_device("nvidia-h100-sxm")->figures.matrix_flops[bf16].value,
                   989e12);
  EXPECT_DOUBLE_EQ(presets.find_device("google-tpu-v5e")->figures.matrix_flops[bf16].value, 197e12);
  EXPECT_DOUBLE_EQ(presets.find_device("google-tpu-v4")->figures.memory_bytes.value,
                   32.0 * 1024 * 1024 * 1024);  // Google labels it GiB
  EXPECT_EQ(presets.find_device("google-tpu-v5p")->figures.matrix_tile, 128);
  EXPECT_EQ(presets.find_device("google-tpu-v6e")->figures.matrix_tile, 256);
  EXPECT_DOUBLE_EQ(presets.find_link("network-200g")->bandwidth.value, 25e9);
  // Conflicting sources keep their note.
  EXPECT_TRUE(presets.find_device("nvidia-b200")->figures.memory_bandwidth.uncertain());
  EXPECT_FALSE(presets.find_device("nvidia-h100-sxm")->figures.memory_bandwidth.uncertain());
  // No price is published in the sources: none is invented.
  for (const DevicePreset& preset : presets.devices()) {
    EXPECT_FALSE(preset.figures.price_per_hour.known()) << preset.name;
  }
}

TEST(Presets, SourcesAreExpandedFromTags) {
  const Figure& bf16 = PresetLibrary::instance()
                           .find_device("google-tpu-v5e")
                           ->figures.matrix_flops[static_cast<int>(Precision::kBf16)];
  EXPECT_NE(bf16.source.find("https://docs.cloud.google.com/tpu/docs/v5e"), std::string::npos)
      << bf16.source;
}

TEST(Presets, DirectoryFromEnvironment) {
  setenv("TANDEM_PRESETS", "/somewhere/presets", 1);
  EXPECT_EQ(presets_directory(), "/somewhere/presets");
  unsetenv("TANDEM_PRESETS");
  EXPECT_NE(presets_directory(), "/somewhere/presets");
}

class BadPresets : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("tandem_presets_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::string error_of(const std::string& text) {
    std::ofstream(directory_ / "bad.yaml") << text;
    try {
      PresetLibrary::load(directory_.string());
    } catch (const InputError& e) {
      return e.subject() + ": " + e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }
  std::filesystem::path directory_;
};

TEST_F(BadPresets, FigureWithoutSource) {
  const std::string error = error_of(R"(devices:
  x:
    title: X
    kind: cpu
    memory_bandwidth: 10 GB/s
)");
  EXPECT_NE(error.find("line 5: devices.x.memory_bandwidth: a preset figure needs"),
            std::string::npos)
      << error;
}

TEST_F(BadPresets, ProfileMissingOrOfAnotherKind) {
  const std::string missing = error_of(R"(devices:
  x:
    title: X
    kind: cpu
    profile: profiles/none.json
)");
  EXPECT_NE(missing.find("profiles/none.json"), std::string::npos) << missing;
  CalibrationProfile gpu;
  gpu.kind = DeviceKind::kGpu;
  write_profile((directory_ / "gpu.json").string(), gpu);
  const std::string other = error_of(R"(devices:
  x:
    title: X
    kind: cpu
    profile: gpu.json
)");
  EXPECT_NE(other.find("devices.x.profile: the profile measured a gpu, not a cpu"),
            std::string::npos)
      << other;
}

TEST_F(BadPresets, UnknownCitation) {
  const std::string error = error_of(R"(sources: {A: "a page"}
devices:
  x:
    title: X
    kind: cpu
    memory_bandwidth: {value: 10 GB/s, source: "[B]"}
)");
  EXPECT_NE(error.find("line 6: devices.x.memory_bandwidth.source: cites [B]"), std::string::npos)
      << error;
}

TEST_F(BadPresets, UnknownHostLink) {
  const std::string error = error_of(R"(sources: {A: "a page"}
devices:
  x:
    title: X
    kind: gpu
    host_link: pcie-gen9
    memory: {value: 1 GB, source: "[A]"}
)");
  EXPECT_NE(error.find("devices.x.host_link: unknown link preset 'pcie-gen9'"), std::string::npos)
      << error;
}

TEST(Units, ReadsEveryQuantity) {
  std::string error;
  EXPECT_DOUBLE_EQ(*parse_quantity("200 Gb/s", Quantity::kBandwidth, error), 25e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("25 GB/s", Quantity::kBandwidth, error), 25e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("1 GiB/s", Quantity::kBandwidth, error), 1073741824.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("32 GiB", Quantity::kBytes, error), 32.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(*parse_quantity("80 GB", Quantity::kBytes, error), 80e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("989 TFLOP/s", Quantity::kFlops, error), 989e12);
  EXPECT_DOUBLE_EQ(*parse_quantity("624 TOPS", Quantity::kFlops, error), 624e12);
  EXPECT_DOUBLE_EQ(*parse_quantity("5 us", Quantity::kSeconds, error), 5e-6);
  EXPECT_DOUBLE_EQ(*parse_quantity("2.5 USD/h", Quantity::kPrice, error), 2.5);
  EXPECT_DOUBLE_EQ(*parse_quantity("1.5e9", Quantity::kBandwidth, error), 1.5e9);
  EXPECT_FALSE(parse_quantity("fast", Quantity::kBandwidth, error));
  EXPECT_NE(error.find("not a number"), std::string::npos);
  EXPECT_FALSE(parse_quantity("25 GB", Quantity::kBandwidth, error));
  EXPECT_NE(error.find("unknown unit 'GB'"), std::string::npos) << error;
  EXPECT_FALSE(parse_quantity("128 Gi", Quantity::kCount, error));
}

}  // namespace
}  // namespace tandem
