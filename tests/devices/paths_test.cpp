// Paths between devices: host staging, fabrics, the fastest route for a 1 MiB transfer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "devices/cluster.h"

namespace tandem {
namespace {

std::string example(const char* name) {
  return std::string(TANDEM_SOURCE_DIR) + "/examples/clusters/" + name;
}

// The kinds of the links crossed, and a check that each hop starts where the last one ended.
std::vector<LinkKind> kinds_along(const Cluster& cluster, int from, int to) {
  std::vector<LinkKind> kinds;
  std::string at = cluster.devices[from].id;
  for (const Cluster::Hop& hop : cluster.path(from, to)) {
    const LinkSpec& link = cluster.links[hop.link];
    const std::string& start = hop.forward ? link.from : link.to;
    EXPECT_EQ(start, at) << "the path is not continuous";
    at = hop.forward ? link.to : link.from;
    kinds.push_back(link.kind);
  }
  EXPECT_EQ(at, cluster.devices[to].id) << "the path does not end at the destination";
  return kinds;
}

TEST(Paths, GpuToTpuInAnotherHostCrossesPcieNetworkPcie) {
  const Cluster cluster = load_cluster(example("two-hosts.yaml"));
  const int gpu = cluster.device_index("gpu0"), tpu = cluster.device_index("tpu3");
  EXPECT_EQ(kinds_along(cluster, gpu, tpu),
            (std::vector{LinkKind::kPcie, LinkKind::kNetwork, LinkKind::kPcie}));
  EXPECT_EQ(kinds_along(cluster, tpu, gpu),
            (std::vector{LinkKind::kPcie, LinkKind::kNetwork, LinkKind::kPcie}));
}

TEST(Paths, GpuToTpuInOneHostIsStagedInHostMemory) {
  const Cluster cluster = load_cluster(example("h100-4xv5e.yaml"));
  EXPECT_EQ(kinds_along(cluster, cluster.device_index("gpu0"), cluster.device_index("tpu2")),
            (std::vector{LinkKind::kPcie, LinkKind::kPcie}));
}

TEST(Paths, FabricBeatsHostStaging) {
  const Cluster cluster = load_cluster(example("h100-4xv5e.yaml"));
  // tpu0 -> tpu3 has no direct link: two ICI hops (45 GB/s) beat PCIe twice (15 GB/s).
  EXPECT_EQ(kinds_along(cluster, cluster.device_index("tpu0"), cluster.device_index("tpu3")),
            (std::vector{LinkKind::kIci, LinkKind::kIci}));
  const Cluster nvlink = load_cluster(example("8xh100-nvlink.yaml"));
  EXPECT_EQ(kinds_along(nvlink, nvlink.device_index("gpu2"), nvlink.device_index("gpu7")),
            (std::vector{LinkKind::kNvlink}));
}

TEST(Paths, EveryPairHasAContinuousPath) {
  const Cluster cluster = load_cluster(example("two-hosts.yaml"));
  for (size_t from = 0; from < cluster.devices.size(); ++from) {
    for (size_t to = 0; to < cluster.devices.size(); ++to) {
      const auto kinds = kinds_along(cluster, static_cast<int>(from), static_cast<int>(to));
      EXPECT_EQ(kinds.empty(), from == to);
    }
  }
}

TEST(Paths, SplitCpuGoesThroughHostMemory) {
  const Cluster cluster = load_cluster(example("cpu-split.yaml"));
  EXPECT_EQ(kinds_along(cluster, 0, 1),
            (std::vector{LinkKind::kHostMemory, LinkKind::kHostMemory}));
}

TEST(Paths, SameDeviceIsEmptyAndBadIndexThrows) {
  const Cluster cluster = load_cluster(example("two-hosts.yaml"));
  EXPECT_TRUE(cluster.path(1, 1).empty());
  EXPECT_THROW(cluster.path(0, 99), std::out_of_range);
  EXPECT_THROW(cluster.path(-1, 0), std::out_of_range);
}

TEST(Examples, EveryExampleLoads) {
  int loaded = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TANDEM_SOURCE_DIR) + "/examples/clusters")) {
    if (entry.path().extension() != ".yaml") continue;
    const Cluster cluster = load_cluster(entry.path().string());
    EXPECT_FALSE(cluster.devices.empty()) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 6);
}

TEST(Examples, ShapesAreAsDescribed) {
  const Cluster hybrid = load_cluster(example("h100-4xv5e.yaml"));
  ASSERT_EQ(hybrid.devices.size(), 5u);
  EXPECT_EQ(hybrid.devices[0].backend, BackendKind::kCuda);
  EXPECT_EQ(hybrid.devices[4].backend, BackendKind::kPjrt);
  EXPECT_EQ(hybrid.devices[4].id, "tpu3");

  const Cluster node = load_cluster(example("8xh100-nvlink.yaml"));
  const auto nvlinks = std::count_if(node.links.begin(), node.links.end(),
                                     [](const LinkSpec& l) { return l.kind == LinkKind::kNvlink; });
  EXPECT_EQ(nvlinks, 28);  // every pair of 8

  const Cluster split = load_cluster(example("cpu-split.yaml"));
  ASSERT_EQ(split.devices.size(), 2u);
  for (const DeviceSpec& cpu : split.devices) {
    EXPECT_EQ(cpu.cores, 1);
    EXPECT_EQ(cpu.backend, BackendKind::kCpu);
  }

  const Cluster two = load_cluster(example("two-hosts.yaml"));
  EXPECT_EQ(two.hosts.size(), 2u);
  const auto network = std::find_if(two.links.begin(), two.links.end(),
                                    [](const LinkSpec& l) { return l.kind == LinkKind::kNetwork; });
  ASSERT_NE(network, two.links.end());
  EXPECT_DOUBLE_EQ(network->bandwidth_forward.value, 200e9 / 8);
}

}  // namespace
}  // namespace tandem
