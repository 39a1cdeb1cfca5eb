// Cluster files: what loads, and every validation error with its file, line and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "devices/cluster.h"
#include "devices/profile.h"
#include "ir/error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

class ClusterFile : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("tandem_cluster_test_" + std::to_string(getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string write(const std::string& text, const std::string& name = "cluster.yaml") {
    const std::string path = (directory_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // The whole message as the CLI prints it: "<file>: line N: field: what".
  std::string error_of(const std::string& text) {
    const std::string path = write(text);
    try {
      load_cluster(path);
    } catch (const InputError& e) {
      EXPECT_EQ(e.subject(), path);
      return e.subject() + ": " + e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }

  fs::path directory_;
};

constexpr const char* kOneGpu = R"(hosts: [node0]
devices:
  - id: gpu0
    preset: nvidia-h100-sxm
    host: node0
)";

TEST_F(ClusterFile, LoadsPresetDeviceWithImplicitHostLink) {
  const Cluster cluster = load_cluster(write(kOneGpu));
  ASSERT_EQ(cluster.devices.size(), 1u);
  const DeviceSpec& gpu = cluster.devices[0];
  EXPECT_EQ(gpu.kind, DeviceKind::kGpu);
  EXPECT_EQ(gpu.backend, BackendKind::kNone);
  EXPECT_EQ(gpu.line, 3);
  EXPECT_DOUBLE_EQ(gpu.figures.matrix_flops[static_cast<int>(Precision::kBf16)].value, 989e12);
  ASSERT_EQ(cluster.links.size(), 1u);
  EXPECT_TRUE(cluster.links[0].implicit);
  EXPECT_EQ(cluster.links[0].preset, "pcie-gen5-x16");
  EXPECT_EQ(cluster.links[0].from, "gpu0");
  EXPECT_EQ(cluster.links[0].to, "node0");
}

TEST_F(ClusterFile, ExplicitFiguresOverridePresetWithFileAsSource) {
  const Cluster cluster = load_cluster(write(R"(hosts: [node0]
devices:
  - id: gpu0
    preset: nvidia-h100-sxm
    host: node0
    figures:
      memory: 94 GB
      matrix: {bf16: 800 TFLOP/s}
)"));
  const DeviceFigures& figures = cluster.devices[0].figures;
  EXPECT_DOUBLE_EQ(figures.memory_bytes.value, 94e9);
  EXPECT_NE(figures.memory_bytes.source.find("line 7"), std::string::npos)
      << figures.memory_bytes.source;
  EXPECT_DOUBLE_EQ(figures.matrix_flops[static_cast<int>(Precision::kBf16)].value, 800e12);
  EXPECT_DOUBLE_EQ(figures.memory_bandwidth.value, 3350e9);  // still the preset's
}

TEST_F(ClusterFile, CountExpandsIds) {
  const Cluster cluster = load_cluster(write(R"(hosts: [h]
devices:
  - {id: gpu, count: 3, preset: nvidia-l4, host: h}
)"));
  ASSERT_EQ(cluster.devices.size(), 3u);
  EXPECT_EQ(cluster.device_index("gpu0"), 0);
  EXPECT_EQ(cluster.device_index("gpu2"), 2);
  EXPECT_EQ(cluster.device_index("gpu3"), -1);
}

TEST_F(ClusterFile, LinkBandwidthUnitsAndDirections) {
  const Cluster cluster = load_cluster(write(R"(hosts: [a, b]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: a}
  - {id: cpu1, preset: cpu-generic-avx2, host: b}
links:
  - {from: a, to: b, bandwidth_forward: 200 Gb/s, bandwidth_backward: 12.5e9, latency: 5 us}
)"));
  const LinkSpec& network = cluster.links[0];
  EXPECT_EQ(network.kind, LinkKind::kNetwork);
  EXPECT_DOUBLE_EQ(network.bandwidth_forward.value, 25e9);
  EXPECT_DOUBLE_EQ(network.bandwidth_backward.value, 12.5e9);
  EXPECT_DOUBLE_EQ(network.latency.value, 5e-6);
}

TEST_F(ClusterFile, CpuCoresScaleComputeNotBandwidth) {
  const Cluster cluster = load_cluster(write(R"(hosts: [h]
devices:
  - {id: one, preset: cpu-generic-avx2, host: h, cores: 1}
  - {id: four, preset: cpu-generic-avx2, host: h, cores: 4}
)"));
  const int fp32 = static_cast<int>(Precision::kFp32);
  EXPECT_DOUBLE_EQ(cluster.devices[1].figures.matrix_flops[fp32].value,
                   4 * cluster.devices[0].figures.matrix_flops[fp32].value);
  EXPECT_DOUBLE_EQ(cluster.devices[1].figures.memory_bandwidth.value,
                   cluster.devices[0].figures.memory_bandwidth.value);
}

TEST_F(ClusterFile, ProfileFiguresReplacePresetOnes) {
  CalibrationProfile profile;
  profile.kind = DeviceKind::kCpu;
  profile.figures.memory_bandwidth = {12e9, "stream copy", ""};
  profile.figures.matrix_flops[static_cast<int>(Precision::kFp32)] = {150e9, "sgemm", ""};
  write_profile((directory_ / "cpu.json").string(), profile);
  const Cluster cluster = load_cluster(write(R"(hosts: [h]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: h, profile: cpu.json}
)"));
  const DeviceFigures& figures = cluster.devices[0].figures;
  EXPECT_DOUBLE_EQ(figures.memory_bandwidth.value, 12e9);
  EXPECT_EQ(figures.memory_bandwidth.source,
            "calibration " + (directory_ / "cpu.json").string() + ": stream copy");
  EXPECT_DOUBLE_EQ(figures.matrix_flops[static_cast<int>(Precision::kFp32)].value, 150e9);
  EXPECT_DOUBLE_EQ(figures.launch_overhead.value, 1e-6);  // not measured: the preset's
  // The implicit host-memory link follows the measured bandwidth.
  EXPECT_DOUBLE_EQ(cluster.links[0].bandwidth_forward.value, 12e9);
}

TEST_F(ClusterFile, LocalClusterIsThisCpu) {
  const Cluster cluster = local_cluster();
  ASSERT_EQ(cluster.devices.size(), 1u);
  EXPECT_EQ(cluster.devices[0].backend, BackendKind::kCpu);
  EXPECT_EQ(cluster.devices[0].preset, "cpu-generic-avx2");
  EXPECT_TRUE(cluster.devices[0].figures.memory_bytes.known());
  ASSERT_EQ(cluster.links.size(), 1u);
  EXPECT_EQ(cluster.links[0].kind, LinkKind::kHostMemory);
}

// Every validation error names the file (checked in error_of), the line and the field.
TEST_F(ClusterFile, ErrorUnknownPreset) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - id: gpu0
    preset: nvidia-h1000
    host: h
)");
  EXPECT_NE(error.find("line 4: devices[0].preset: unknown preset 'nvidia-h1000'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("nvidia-h100-sxm"), std::string::npos) << "lists the known presets";
}

TEST_F(ClusterFile, ErrorZeroBandwidth) {
  const std::string error = error_of(R"(hosts: [a, b]
devices:
  - {id: c0, preset: cpu-generic-avx2, host: a}
  - {id: c1, preset: cpu-generic-avx2, host: b}
links:
  - from: a
    to: b
    bandwidth: 0 GB/s
)");
  EXPECT_NE(error.find("line 8: links[0].bandwidth: must be positive"), std::string::npos) << error;
}

TEST_F(ClusterFile, ErrorNegativeBandwidth) {
  const std::string error = error_of(R"(hosts: [a, b]
devices:
  - {id: c0, preset: cpu-generic-avx2, host: a}
  - {id: c1, preset: cpu-generic-avx2, host: b}
links:
  - {from: a, to: b, bandwidth_forward: -25 GB/s, bandwidth_backward: 25 GB/s}
)");
  EXPECT_NE(error.find("line 6: links[0].bandwidth_forward: must be positive"), std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorDeviceOnNoHost) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - id: gpu0
    preset: nvidia-l4
)");
  EXPECT_NE(error.find("line 3: devices[0].host: missing"), std::string::npos) << error;
}

TEST_F(ClusterFile, ErrorUnknownHost) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - id: gpu0
    preset: nvidia-l4
    host: elsewhere
)");
  EXPECT_NE(error.find("line 5: devices[0].host: unknown host 'elsewhere'"), std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorLinkToUnknownDevice) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - {id: gpu, count: 2, preset: nvidia-h100-sxm, host: h}
links:
  - from: gpu0
    to: gpu9
    preset: nvlink4
)");
  EXPECT_NE(error.find("line 6: links[0]: unknown device or host 'gpu9'"), std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorDuplicateId) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - {id: gpu, count: 2, preset: nvidia-l4, host: h}
  - {id: gpu1, preset: nvidia-l4, host: h}
)");
  EXPECT_NE(error.find("line 4: devices[1].id: duplicate id 'gpu1' (first at line 3)"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorHostAndDeviceShareAnId) {
  const std::string error = error_of(R"(hosts: [node]
devices:
  - {id: node, preset: nvidia-l4, host: node}
)");
  EXPECT_NE(error.find("line 3: devices[0].id: duplicate id 'node' (first at line 1)"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorNoPathBetweenDevices) {
  const std::string error = error_of(R"(hosts: [gpu-host, tpu-host]
devices:
  - {id: gpu0, preset: nvidia-h100-sxm, host: gpu-host}
  - {id: tpu0, preset: google-tpu-v5e, host: tpu-host}
)");
  EXPECT_NE(error.find("line 4: links: no path between gpu0 (host gpu-host) and tpu0"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorNoPathThroughADeviceReachedOverPcie) {
  // tpu0 and tpu1 share ICI, but gpu0 may not enter tpu0 over PCIe and leave it over ICI.
  const std::string error = error_of(R"(hosts: [a, b]
devices:
  - {id: gpu0, preset: nvidia-h100-sxm, host: a}
  - {id: tpu0, preset: google-tpu-v5e, host: a}
  - {id: tpu1, preset: google-tpu-v5e, host: b}
links:
  - {from: tpu0, to: tpu1, preset: ici-v5e}
)");
  EXPECT_NE(error.find("no path between gpu0 (host a) and tpu1 (host b)"), std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorUnknownKeySuggestsTheRightOne) {
  const std::string error = error_of(R"(hosts: [a, b]
devices:
  - {id: c0, preset: cpu-generic-avx2, host: a}
  - {id: c1, preset: cpu-generic-avx2, host: b}
links:
  - from: a
    to: b
    bandwdith: 25 GB/s
)");
  EXPECT_NE(error.find("line 8: links[0].bandwdith: unknown key 'bandwdith' (did you mean "
                       "'bandwidth'?)"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorUnknownTopLevelKey) {
  const std::string error = error_of("hosts: [h]\ndevice:\n  - {id: c0}\n");
  EXPECT_NE(error.find("line 2: device: unknown key 'device' (did you mean 'devices'?)"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorSyntaxNamesTheLine) {
  const std::string error = error_of("hosts: [h]\ndevices:\n  - id: [unclosed\n    host: h\n");
  EXPECT_NE(error.find("not valid YAML"), std::string::npos) << error;
  EXPECT_NE(error.find("line "), std::string::npos) << error;
}

TEST_F(ClusterFile, ErrorWrongShapesNeverCrash) {
  for (const char* text : {"just a string\n", "[1, 2, 3]\n", "hosts: {a: 1}\ndevices: []\n",
                           "hosts: [h]\ndevices: {id: x}\n", "hosts: [h]\ndevices:\n  - 42\n",
                           "hosts: [[nested]]\ndevices: []\n", "", "hosts: [h]\ndevices: []\n",
                           "hosts: [h]\ndevices:\n  - {id: c, preset: [x], host: h}\n"}) {
    const std::string error = error_of(text);
    EXPECT_FALSE(error.empty()) << text;
  }
}

TEST_F(ClusterFile, ErrorBadUnit) {
  const std::string error = error_of(R"(hosts: [a, b]
devices:
  - {id: c0, preset: cpu-generic-avx2, host: a}
  - {id: c1, preset: cpu-generic-avx2, host: b}
links:
  - {from: a, to: b, bandwidth: 25 GB/h}
)");
  EXPECT_NE(error.find("line 6: links[0].bandwidth: '25 GB/h': unknown unit 'GB/h'"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorLinkKindDoesNotFitEndpoints) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - {id: gpu, count: 2, preset: nvidia-h100-sxm, host: h}
links:
  - {from: gpu0, to: gpu1, preset: ici-v5e}
)");
  EXPECT_NE(error.find("line 5: links[0]: an ici link joins two TPUs"), std::string::npos) << error;
}

TEST_F(ClusterFile, ErrorDeviceLinkedToAnotherHost) {
  const std::string error = error_of(R"(hosts: [a, b]
devices:
  - {id: gpu0, preset: nvidia-l4, host: a}
links:
  - {from: gpu0, to: b, preset: pcie-gen4-x16}
)");
  EXPECT_NE(error.find("line 5: links[0]: gpu0 sits in host a, not in b"), std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorDuplicateLink) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - {id: gpu, count: 2, preset: nvidia-h100-sxm, host: h}
links:
  - {from: gpu0, to: gpu1, preset: nvlink4}
  - {from: gpu1, to: gpu0, preset: nvlink4}
)");
  EXPECT_NE(error.find("line 6: links[1]: a second link between gpu1 and gpu0 (first at line 5)"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, PjrtPluginPathIsRelativeToTheFileOrLeftToTheEnvironment) {
  const Cluster cluster = load_cluster(write(R"(hosts: [h]
devices:
  - {id: tpu0, preset: google-tpu-v5e, host: h, backend: pjrt, plugin: plugins/libtpu.so}
  - {id: tpu1, preset: google-tpu-v5e, host: h, backend: pjrt, plugin: libtpu.so}
  - {id: tpu2, preset: google-tpu-v5e, host: h, backend: pjrt}
)"));
  EXPECT_EQ(cluster.devices[0].plugin, (directory_ / "plugins" / "libtpu.so").string());
  EXPECT_EQ(cluster.devices[1].plugin, "libtpu.so");
  EXPECT_EQ(cluster.devices[2].plugin, "");
}

TEST_F(ClusterFile, ErrorBackendDoesNotFitKind) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - {id: tpu0, preset: google-tpu-v5e, host: h, backend: cuda}
)");
  EXPECT_NE(error.find("line 3: devices[0].backend: the cuda backend runs GPU devices only"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorDeviceWithoutFiguresOrPreset) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - {id: gpu0, kind: gpu, host: h}
)");
  EXPECT_NE(error.find("line 3: devices[0]: give a 'preset' or the device's 'figures'"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, ErrorExplicitGpuWithoutHostLink) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - id: gpu0
    kind: gpu
    host: h
    figures: {matrix: {fp32: 10 TFLOP/s}, memory_bandwidth: 1 TB/s}
)");
  EXPECT_NE(error.find("line 3: devices[0]: no link to its host"), std::string::npos) << error;
}

TEST_F(ClusterFile, ErrorMissingProfileNamesTheClusterLine) {
  const std::string error = error_of(R"(hosts: [h]
devices:
  - id: cpu0
    preset: cpu-generic-avx2
    host: h
    profile: missing.json
)");
  EXPECT_NE(error.find("line 6: devices[0].profile: "), std::string::npos) << error;
  EXPECT_NE(error.find("missing.json"), std::string::npos) << error;
}

TEST_F(ClusterFile, ErrorMissingFile) {
  try {
    load_cluster((directory_ / "absent.yaml").string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.subject()).find("absent.yaml"), std::string::npos);
  }
}

// The whole machine as one device: a host's CPU devices merged into `<host>.cpu`.
constexpr const char* kSplitHost = R"(hosts: [local, remote]
devices:
  - {id: cpu, count: 2, preset: cpu-generic-avx2, host: local, cores: 1}
  - {id: gpu0, preset: nvidia-h100-sxm, host: local}
  - {id: far, preset: cpu-generic-avx2, host: remote, cores: 4}
links:
  - {from: local, to: remote, kind: network, bandwidth: 10 GB/s, latency: 10 us}
)";

TEST_F(ClusterFile, WholeMachineViewMergesAHostsCpuDevices) {
  const Cluster cluster = load_cluster(write(kSplitHost));
  const WholeMachineView view = whole_machine_view(cluster);
  ASSERT_TRUE(view.cluster) << view.why_not;
  ASSERT_EQ(view.merged, std::vector<std::string>{"local.cpu (cpu0 + cpu1)"});
  const Cluster& whole = *view.cluster;
  // The merged device takes its first member's place; a host with one CPU device keeps it.
  ASSERT_EQ(whole.devices.size(), 3u);
  EXPECT_EQ(whole.devices[0].id, "local.cpu");
  EXPECT_EQ(whole.devices[1].id, "gpu0");
  EXPECT_EQ(whole.devices[2].id, "far");
  const DeviceSpec& cpu = whole.devices[0];
  EXPECT_EQ(cpu.cores, 2);
  EXPECT_EQ(cpu.backend, BackendKind::kCpu);
  // Compute scales with the cores, from the same preset.
  const auto fp32 = static_cast<size_t>(Precision::kFp32);
  EXPECT_DOUBLE_EQ(cpu.figures.matrix_flops[fp32].value,
                   2 * cluster.devices[0].figures.matrix_flops[fp32].value);
  // Its own link to host memory, none of the members'; routes still reach every device.
  for (const LinkSpec& link : whole.links) {
    EXPECT_NE(link.from, "cpu0");
    EXPECT_NE(link.from, "cpu1");
  }
  EXPECT_FALSE(whole.path(0, 2).empty());
  EXPECT_FALSE(whole.path(0, 1).empty());
}

TEST_F(ClusterFile, WholeMachineViewOfDevicesOnEveryCoreTakesEveryCore) {
  const Cluster cluster = load_cluster(write(R"(hosts: [local]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu, cores: 1}
  - {id: pjrt0, preset: cpu-generic-avx2, host: local, backend: pjrt}
)"));
  const WholeMachineView view = whole_machine_view(cluster);
  ASSERT_TRUE(view.cluster) << view.why_not;
  ASSERT_EQ(view.cluster->devices.size(), 1u);
  EXPECT_EQ(view.cluster->devices[0].cores, 0);  // the PJRT CPU plugin runs on every core
  EXPECT_EQ(view.cluster->devices[0].backend, BackendKind::kCpu);
}

TEST_F(ClusterFile, APresetsCalibrationGivesTheFiguresOfADeviceThatNamesNoProfile) {
  const std::string devices = R"(hosts: [local]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu, cores: 1}
  - {id: pjrt0, preset: xla-cpu-plugin, host: local, backend: pjrt}
)";
  const Cluster cluster = load_cluster(write(devices));
  const DeviceSpec& pjrt = cluster.devices[1];
  // Not the device's own profile: a run's --calibrate-from-run folds nothing into the preset.
  EXPECT_TRUE(pjrt.profile.empty());
  ASSERT_TRUE(pjrt.figures.step_overhead.known());  // a figure only a compiled device has
  EXPECT_NE(pjrt.figures.step_overhead.source.find("profiles/xla-cpu-plugin.json"),
            std::string::npos)
      << pjrt.figures.step_overhead.source;
  EXPECT_FALSE(pjrt.figures.memory_bytes.known());  // the machine's own, not the VM's
  // The whole machine is the CPU backend on every core: the CPU backend's preset prices it.
  const WholeMachineView view = whole_machine_view(cluster);
  ASSERT_TRUE(view.cluster) << view.why_not;
  EXPECT_EQ(view.cluster->devices[0].preset, "cpu-generic-avx2");
  EXPECT_FALSE(view.cluster->devices[0].figures.step_overhead.known());
  // A profile of the device's own wins over its preset's.
  CalibrationProfile own;
  own.kind = DeviceKind::kCpu;
  own.figures.step_overhead = {42e-6, "a program of one Add", ""};
  write_profile((directory_ / "own.json").string(), own);
  const Cluster profiled = load_cluster(write(R"(hosts: [local]
devices:
  - {id: pjrt0, preset: xla-cpu-plugin, host: local, backend: pjrt, profile: own.json}
)"));
  EXPECT_DOUBLE_EQ(profiled.devices[0].figures.step_overhead.value, 42e-6);
  EXPECT_EQ(profiled.devices[0].profile, (directory_ / "own.json").string());
}

TEST_F(ClusterFile, NoWholeMachineViewWithoutSharedCores) {
  const WholeMachineView one = whole_machine_view(load_cluster(write(kOneGpu)));
  EXPECT_FALSE(one.cluster);
  EXPECT_EQ(one.why_not, "");
  // PJRT CPU devices alone each plan on every core already.
  const WholeMachineView pjrt = whole_machine_view(load_cluster(write(R"(hosts: [h]
devices:
  - {id: p, count: 2, preset: cpu-generic-avx2, host: h, backend: pjrt}
)")));
  EXPECT_FALSE(pjrt.cluster);
}

TEST_F(ClusterFile, WholeMachineViewNeedsAHostProfileWhereDevicesNameProfiles) {
  CalibrationProfile profile;
  profile.kind = DeviceKind::kCpu;
  profile.threads = 1;
  profile.figures.memory_bandwidth = {12e9, "stream copy", ""};
  write_profile((directory_ / "one.json").string(), profile);
  profile.threads = 2;
  profile.figures.memory_bandwidth = {20e9, "stream copy", ""};
  write_profile((directory_ / "all.json").string(), profile);
  const std::string devices = R"(devices:
  - {id: cpu, count: 2, preset: cpu-generic-avx2, host: local, cores: 1, profile: one.json}
)";
  // A calibrated split against a whole machine priced by the preset would favour the guess.
  const WholeMachineView without =
      whole_machine_view(load_cluster(write("hosts: [local]\n" + devices)));
  EXPECT_FALSE(without.cluster);
  EXPECT_NE(without.why_not.find("host local: its CPU devices name profiles and the host none"),
            std::string::npos)
      << without.why_not;
  const WholeMachineView with = whole_machine_view(
      load_cluster(write("hosts: [{id: local, profile: all.json}]\n" + devices)));
  ASSERT_TRUE(with.cluster) << with.why_not;
  const DeviceSpec& whole = with.cluster->devices[0];
  EXPECT_EQ(whole.profile, (directory_ / "all.json").string());
  EXPECT_DOUBLE_EQ(whole.figures.memory_bandwidth.value, 20e9);
}

TEST_F(ClusterFile, HostProfileErrors) {
  EXPECT_NE(error_of("hosts: [{id: s, switch: true, profile: p.json}]\ndevices: []\n")
                .find("hosts[0].profile: a switch has no CPU to profile"),
            std::string::npos);
  EXPECT_NE(error_of(R"(hosts: [{id: h, profile: missing.json}]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: h}
)")
                .find("line 1: hosts[0].profile: "),
            std::string::npos);
}

}  // namespace
}  // namespace tandem
