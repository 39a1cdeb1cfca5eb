// Clusters of many hosts: switches in cluster files, the Router's one-search paths against its
// pair-by-pair ones, and the linear-time connectivity check against a search from every device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "devices/cluster.h"
#include "devices/routing.h"
#include "ir/error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

std::string example(const std::string& name) {
  return std::string(TANDEM_SOURCE_DIR) + "/examples/clusters/" + name;
}

class LargeCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("tandem_large_cluster_" + std::to_string(getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string write(const std::string& text) {
    const std::string path = (directory_ / "cluster.yaml").string();
    std::ofstream(path) << text;
    return path;
  }
  std::string error_of(const std::string& text) {
    try {
      load_cluster(write(text));
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }

  fs::path directory_;
};

// Three hosts of two GPUs on one switch, as tools/make_cluster.py writes them.
constexpr const char* kSwitched = R"(hosts:
  - {id: fabric, switch: true}
  - h0
  - h1
  - h2
devices:
  - {id: h0-gpu, count: 2, preset: nvidia-h100-sxm, host: h0, backend: none}
  - {id: h1-gpu, count: 2, preset: nvidia-h100-sxm, host: h1, backend: none}
  - {id: h2-gpu, count: 2, preset: nvidia-h100-sxm, host: h2, backend: none}
links:
  - {between: [h0-gpu0, h0-gpu1], preset: nvlink4}
  - {between: [h1-gpu0, h1-gpu1], preset: nvlink4}
  - {between: [h2-gpu0, h2-gpu1], preset: nvlink4}
  - {from: h0, to: fabric, preset: network-200g}
  - {from: h1, to: fabric, preset: network-200g}
  - {from: h2, to: fabric, preset: network-200g}
)";

std::vector<std::string> endpoints_along(const Cluster& cluster, int from, int to) {
  std::vector<std::string> nodes = {cluster.devices[from].id};
  for (const Cluster::Hop& hop : cluster.path(from, to)) {
    const LinkSpec& link = cluster.links[hop.link];
    EXPECT_EQ(hop.forward ? link.from : link.to, nodes.back()) << "the path is not continuous";
    nodes.push_back(hop.forward ? link.to : link.from);
  }
  return nodes;
}

TEST_F(LargeCluster, HostsMeetAtASwitch) {
  const Cluster cluster = load_cluster(write(kSwitched));
  ASSERT_EQ(cluster.hosts.size(), 4u);
  EXPECT_TRUE(cluster.hosts[0].is_switch);
  EXPECT_FALSE(cluster.hosts[1].is_switch);
  EXPECT_EQ(
      endpoints_along(cluster, cluster.device_index("h0-gpu1"), cluster.device_index("h2-gpu0")),
      (std::vector<std::string>{"h0-gpu1", "h0", "fabric", "h2", "h2-gpu0"}));
  // Within a host, NVLink.
  EXPECT_EQ(
      endpoints_along(cluster, cluster.device_index("h1-gpu0"), cluster.device_index("h1-gpu1")),
      (std::vector<std::string>{"h1-gpu0", "h1-gpu1"}));
  EXPECT_TRUE(arrives_at_switch(cluster, {cluster.path(0, 4)[1]}));
  EXPECT_FALSE(arrives_at_switch(cluster, {cluster.path(0, 4)[0]}));
}

TEST_F(LargeCluster, SwitchErrorsNameTheField) {
  EXPECT_NE(error_of("hosts: [{id: s, switch: true}, h]\ndevices:\n"
                     "  - {id: gpu0, preset: nvidia-h100-sxm, host: s}\n")
                .find("devices[0].host: 's' is a switch: devices sit in hosts"),
            std::string::npos);
  EXPECT_NE(error_of("hosts: [{id: s, switch: yes}, h]\ndevices:\n"
                     "  - {id: gpu0, preset: nvidia-h100-sxm, host: h}\n")
                .find("hosts[0].switch: expected true or false"),
            std::string::npos);
  EXPECT_NE(error_of("hosts: [{id: s, swich: true}, h]\ndevices:\n"
                     "  - {id: gpu0, preset: nvidia-h100-sxm, host: h}\n")
                .find("did you mean 'switch'"),
            std::string::npos);
  // A device's link goes to its own host, never to a switch.
  EXPECT_NE(error_of("hosts: [{id: s, switch: true}, h]\ndevices:\n"
                     "  - {id: gpu0, preset: nvidia-h100-sxm, host: h}\n"
                     "links:\n  - {from: gpu0, to: s, preset: pcie-gen5-x16}\n")
                .find("gpu0 sits in host h, not in s"),
            std::string::npos);
}

// A cluster of `hosts` hosts of `per_host` devices joined pairwise, the hosts on one switch.
Cluster switched_cluster(int hosts, int per_host) {
  Cluster cluster;
  HostSpec fabric;
  fabric.id = "fabric";
  fabric.is_switch = true;
  cluster.hosts.push_back(fabric);
  auto link = [](const std::string& from, const std::string& to, LinkKind kind, double bandwidth,
                 double latency) {
    LinkSpec spec;
    spec.from = from;
    spec.to = to;
    spec.kind = kind;
    spec.bandwidth_forward.value = spec.bandwidth_backward.value = bandwidth;
    spec.latency.value = latency;
    return spec;
  };
  for (int h = 0; h < hosts; ++h) {
    const std::string host = "h" + std::to_string(h);
    cluster.hosts.push_back({host, 0, false});
    for (int d = 0; d < per_host; ++d) {
      DeviceSpec device;
      device.id = host + "-gpu" + std::to_string(d);
      device.kind = DeviceKind::kGpu;
      device.host = host;
      cluster.devices.push_back(device);
      cluster.links.push_back(link(device.id, host, LinkKind::kPcie, 63e9, 10e-6));
      for (int e = 0; e < d; ++e) {
        cluster.links.push_back(
            link(host + "-gpu" + std::to_string(e), device.id, LinkKind::kNvlink, 450e9, 0));
      }
    }
    cluster.links.push_back(link(host, "fabric", LinkKind::kNetwork, 25e9, 0.6e-6));
  }
  return cluster;
}

void expect_one_search_paths_match(const Cluster& cluster, const std::string& name) {
  const Router router(cluster);
  const int devices = static_cast<int>(cluster.devices.size());
  for (int from = 0; from < devices; ++from) {
    const std::vector<std::vector<Cluster::Hop>> all = router.paths_from(from);
    const Router::Tree tree = router.tree_from(from);
    for (int to = 0; to < devices; ++to) {
      const std::vector<Cluster::Hop> one = router.path(from, to);
      ASSERT_EQ(all[to].size(), one.size()) << name << " " << from << " -> " << to;
      for (size_t h = 0; h < one.size(); ++h) {
        EXPECT_EQ(all[to][h].link, one[h].link) << name << " " << from << " -> " << to;
        EXPECT_EQ(all[to][h].forward, one[h].forward) << name << " " << from << " -> " << to;
      }
      EXPECT_GE(tree.reached[to], 0);
    }
  }
}

TEST_F(LargeCluster, OneSearchFromADeviceGivesEveryPairsPath) {
  for (const char* name : {"two-hosts.yaml", "h100-4xv5e.yaml", "8xh100-nvlink.yaml",
                           "2xa100-v6e.yaml", "gpu-cpu.yaml", "cpu-split.yaml"}) {
    expect_one_search_paths_match(load_cluster(example(name)), name);
  }
  expect_one_search_paths_match(load_cluster(write(kSwitched)), "switched");
  expect_one_search_paths_match(switched_cluster(5, 4), "5 hosts of 4");
}

// Random small clusters, some of them disconnected: the first unconnected pair as a search from
// every device finds it.
TEST_F(LargeCluster, ConnectivityCheckAgreesWithSearchingFromEveryDevice) {
  std::mt19937 random(7);
  int disconnected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Cluster cluster;
    const int hosts = 1 + static_cast<int>(random() % 4);
    const int devices = 1 + static_cast<int>(random() % 6);
    for (int h = 0; h < hosts; ++h) cluster.hosts.push_back({"h" + std::to_string(h), 0, false});
    auto add_link = [&](const std::string& from, const std::string& to, LinkKind kind) {
      LinkSpec spec;
      spec.from = from;
      spec.to = to;
      spec.kind = kind;
      spec.bandwidth_forward.value = spec.bandwidth_backward.value = 1e9;
      cluster.links.push_back(spec);
    };
    for (int d = 0; d < devices; ++d) {
      DeviceSpec device;
      device.id = "d" + std::to_string(d);
      device.kind = DeviceKind::kTpu;
      device.host = "h" + std::to_string(random() % hosts);
      cluster.devices.push_back(device);
      if (random() % 4 != 0) add_link(device.id, device.host, LinkKind::kPcie);
    }
    for (int d = 0; d < devices; ++d) {
      for (int e = d + 1; e < devices; ++e) {
        if (random() % 5 == 0)
          add_link("d" + std::to_string(d), "d" + std::to_string(e), LinkKind::kIci);
      }
    }
    for (int h = 0; h < hosts; ++h) {
      for (int g = h + 1; g < hosts; ++g) {
        if (random() % 3 == 0)
          add_link("h" + std::to_string(h), "h" + std::to_string(g), LinkKind::kNetwork);
      }
    }
    std::pair<int, int> expected = {-1, -1};
    for (int from = 0; from < devices && expected.first < 0; ++from) {
      const std::vector<bool> reachable = reachable_devices(cluster, from);
      for (int to = 0; to < devices; ++to) {
        if (!reachable[to]) {
          expected = {from, to};
          break;
        }
      }
    }
    disconnected += expected.first >= 0;
    EXPECT_EQ(first_unconnected_pair(cluster), expected) << "trial " << trial;
  }
  EXPECT_GT(disconnected, 50);  // the trials cover both answers
  EXPECT_LT(disconnected, 350);
}

TEST_F(LargeCluster, ThousandsOfDevicesRouteWithoutSearchingEveryPair) {
  const Cluster cluster = switched_cluster(1024, 8);
  EXPECT_EQ(first_unconnected_pair(cluster), std::make_pair(-1, -1));
  const Router router(cluster);
  const std::vector<std::vector<Cluster::Hop>> paths = router.paths_from(0);
  ASSERT_EQ(paths.size(), 8192u);
  EXPECT_EQ(paths[1].size(), 1u);     // NVLink within the host
  EXPECT_EQ(paths[8191].size(), 4u);  // PCIe, network to the switch, network, PCIe
}

}  // namespace
}  // namespace tandem
