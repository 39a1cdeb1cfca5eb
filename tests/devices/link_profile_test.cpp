// Link profiles (`tandem calibrate --mpi`): the file read back, every validation error with its
// file, line and field, the fit, and a cluster file's link taking its figures from one.
#include "devices/link_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "devices/cluster.h"
#include "ir/error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

class LinkProfiles : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ =
        fs::temp_directory_path() / ("tandem_link_profile_test_" + std::to_string(getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string write(const std::string& text, const std::string& name) {
    const std::string path = (directory_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // a -> b: 10 us, 1 GB/s forward, 0.5 GB/s backward.
  LinkProfile measured() {
    LinkProfile profile;
    profile.method = "test";
    profile.machine = "2 hosts: \"x\" and y";
    profile.mpi = "Open MPI v4.1.4";
    profile.transport = "btl self,tcp (OMPI_MCA_*)";
    profile.created = "2026-12-01T00:00:00Z";
    profile.pairs_measured = "every pair of ranks";
    profile.ranks = {{0, "a", "x"}, {1, "b", "y"}};
    LinkProfile::Pair pair;
    pair.from = "a";
    pair.to = "b";
    pair.from_rank = 0;
    pair.to_rank = 1;
    pair.latency_seconds = 10e-6;
    pair.bandwidth_forward = 1e9;
    pair.bandwidth_backward = 0.5e9;
    pair.fit_bytes = 65536;
    pair.model_error = 0.25;
    pair.curve = {{8, 10e-6, 10e-6, 1000}, {1 << 20, 1.06e-3, 2.1e-3, 5}};
    profile.pairs.push_back(pair);
    return profile;
  }

  std::string error_of_profile(const std::string& text) {
    const std::string path = write(text, "links.yaml");
    try {
      read_link_profile(path);
    } catch (const InputError& e) {
      EXPECT_EQ(e.subject(), path);
      return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }

  std::string error_of_cluster(const std::string& text) {
    const std::string path = write(text, "cluster.yaml");
    try {
      load_cluster(path);
    } catch (const InputError& e) {
      EXPECT_EQ(e.subject(), path);
      return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }

  fs::path directory_;
};

TEST_F(LinkProfiles, RoundTrip) {
  const std::string path = (directory_ / "links.yaml").string();
  write_link_profile(path, measured());
  const LinkProfile read = read_link_profile(path);
  EXPECT_EQ(read.version, 1);
  EXPECT_EQ(read.machine, "2 hosts: \"x\" and y");
  EXPECT_EQ(read.mpi, "Open MPI v4.1.4");
  EXPECT_EQ(read.pairs_measured, "every pair of ranks");
  ASSERT_EQ(read.ranks.size(), 2u);
  EXPECT_EQ(read.ranks[1].host, "b");
  EXPECT_EQ(read.ranks[1].processor, "y");
  ASSERT_EQ(read.pairs.size(), 1u);
  const LinkProfile::Pair& pair = read.pairs[0];
  EXPECT_EQ(pair.from, "a");
  EXPECT_EQ(pair.to_rank, 1);
  EXPECT_DOUBLE_EQ(pair.latency_seconds, 10e-6);
  EXPECT_DOUBLE_EQ(pair.bandwidth_forward, 1e9);
  EXPECT_DOUBLE_EQ(pair.bandwidth_backward, 0.5e9);
  EXPECT_DOUBLE_EQ(pair.fit_bytes, 65536);
  EXPECT_DOUBLE_EQ(pair.model_error, 0.25);
  ASSERT_EQ(pair.curve.size(), 2u);
  EXPECT_DOUBLE_EQ(pair.curve[1].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(pair.curve[1].backward_seconds, 2.1e-3);
  EXPECT_EQ(pair.curve[0].repetitions, 1000);
  EXPECT_GT(pair.line, 0);
  bool reversed = true;
  EXPECT_EQ(read.find("a", "b", reversed), &read.pairs[0]);
  EXPECT_FALSE(reversed);
  EXPECT_EQ(read.find("b", "a", reversed), &read.pairs[0]);
  EXPECT_TRUE(reversed);
  EXPECT_EQ(read.find("a", "c", reversed), nullptr);
}

TEST_F(LinkProfiles, HandWrittenWithUnitsReads) {
  const LinkProfile profile = read_link_profile(write(R"(format: tandem-link-profile
version: 1
links:
  - {from: a, to: b, latency: 2 us, bandwidth_forward: 100 Gb/s, bandwidth_backward: 12.5 GB/s}
)",
                                                      "links.yaml"));
  ASSERT_EQ(profile.pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(profile.pairs[0].latency_seconds, 2e-6);
  EXPECT_DOUBLE_EQ(profile.pairs[0].bandwidth_forward, 12.5e9);
  EXPECT_DOUBLE_EQ(profile.pairs[0].bandwidth_backward, 12.5e9);
}

TEST_F(LinkProfiles, ErrorsNameLineAndField) {
  EXPECT_NE(error_of_profile("format: tandem-profile\nversion: 1\nlinks: []\n")
                .find("line 1: format: expected tandem-link-profile, not 'tandem-profile'"),
            std::string::npos);
  EXPECT_NE(error_of_profile("format: tandem-link-profile\nversion: 2\nlinks: []\n")
                .find("line 2: version: version 2 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of_profile("format: tandem-link-profile\nversion: 1\n").find("links: missing"),
            std::string::npos);
  const std::string header = "format: tandem-link-profile\nversion: 1\nlinks:\n";
  std::string error =
      error_of_profile(header + "  - {from: a, to: b, latency: 1 us, bandwidth_forward: 1 GB/s}\n");
  EXPECT_NE(error.find("line 4: links[0]: missing 'bandwidth_backward'"), std::string::npos)
      << error;
  error = error_of_profile(header +
                           "  - from: a\n    to: b\n    latency: -1\n"
                           "    bandwidth_forward: 1\n    bandwidth_backward: 1\n");
  EXPECT_NE(error.find("line 6: links[0].latency: must be positive, not -1"), std::string::npos)
      << error;
  error = error_of_profile(header +
                           "  - {from: a, to: b, latency: 1 us, bandwidth_forward: 1 GB/s, "
                           "bandwidth_backward: 1 GB/s, latncy: 1}\n");
  EXPECT_NE(error.find("line 4: links[0].latncy: unknown key 'latncy' (did you mean 'latency'?)"),
            std::string::npos)
      << error;
  error = error_of_profile(header +
                           "  - {from: a, to: b, latency: 1 us, bandwidth_forward: 1 GB/s, "
                           "bandwidth_backward: 1 GB/s}\n"
                           "  - {from: b, to: a, latency: 1 us, bandwidth_forward: 1 GB/s, "
                           "bandwidth_backward: 1 GB/s}\n");
  EXPECT_NE(error.find("line 5: links[1]: a second measurement between b and a (first at line 4)"),
            std::string::npos)
      << error;
  error = error_of_profile(header +
                           "  - from: a\n    to: b\n    latency: 1 us\n"
                           "    bandwidth_forward: 1 GB/s\n    bandwidth_backward: 1 GB/s\n"
                           "    curve:\n      - {bytes: 64, forward: 1 us, backward: 1 us}\n"
                           "      - {bytes: 8, forward: 1 us, backward: 1 us}\n");
  EXPECT_NE(error.find("line 11: links[0].curve[1].bytes: sizes go up: 8 after 64"),
            std::string::npos)
      << error;
  error = error_of_profile("format: [tandem-link-profile\n");
  EXPECT_NE(error.find("not valid YAML"), std::string::npos) << error;
}

TEST_F(LinkProfiles, FitRecoversLatencyPlusBytesOverBandwidth) {
  const double latency = 5e-6, bandwidth = 2e9;
  std::vector<double> bytes, seconds;
  for (double n = 8; n <= 64 << 20; n *= 4) {
    bytes.push_back(n);
    seconds.push_back(latency + n / bandwidth);
  }
  EXPECT_NEAR(fit_bandwidth(bytes, seconds, latency, 65536), bandwidth, bandwidth * 1e-9);
  // Small messages slower than the model (an eager protocol's copies) do not move the fit.
  seconds[3] *= 3;
  EXPECT_NEAR(fit_bandwidth(bytes, seconds, latency, 65536), bandwidth, bandwidth * 1e-9);
  // No size reaches the fit's start: the largest alone.
  EXPECT_NEAR(fit_bandwidth({8, 4096}, {latency, latency + 4096 / bandwidth}, latency, 65536),
              bandwidth, bandwidth * 1e-6);
  // Nothing slower than the latency: no bandwidth to tell.
  EXPECT_EQ(fit_bandwidth({8, 1 << 20}, {latency, latency}, latency, 65536), 0);
}

constexpr const char* kTwoHosts = R"(hosts: [a, b]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: a}
  - {id: cpu1, preset: cpu-generic-avx2, host: b}
links:
)";

TEST_F(LinkProfiles, ClusterLinkTakesTheMeasuredFiguresEachWay) {
  write_link_profile((directory_ / "links.yaml").string(), measured());
  const std::string profile = (directory_ / "links.yaml").string();
  for (const auto& [link, forward, backward] :
       {std::tuple{"  - {from: a, to: b, profile: links.yaml}\n", 1e9, 0.5e9},
        std::tuple{"  - {from: b, to: a, profile: links.yaml}\n", 0.5e9, 1e9},
        std::tuple{"  - {between: [a, b], profile: links.yaml}\n", 1e9, 0.5e9}}) {
    const Cluster cluster = load_cluster(write(std::string(kTwoHosts) + link, "cluster.yaml"));
    const LinkSpec* network = nullptr;
    for (const LinkSpec& each : cluster.links) {
      if (each.kind == LinkKind::kNetwork) network = &each;
    }
    ASSERT_NE(network, nullptr) << link;
    EXPECT_EQ(network->profile, profile);
    EXPECT_DOUBLE_EQ(network->bandwidth_forward.value, forward) << link;
    EXPECT_DOUBLE_EQ(network->bandwidth_backward.value, backward) << link;
    EXPECT_DOUBLE_EQ(network->latency.value, 10e-6);
    EXPECT_EQ(network->latency.source.rfind("calibration " + profile + ": one-way", 0), 0u)
        << network->latency.source;
    EXPECT_NE(network->bandwidth_forward.source.find("fitted"), std::string::npos);
    EXPECT_NE(network->bandwidth_forward.source.find("within 25%"), std::string::npos);
  }
}

TEST_F(LinkProfiles, ClusterFileFiguresOverTheProfile) {
  write_link_profile((directory_ / "links.yaml").string(), measured());
  const Cluster cluster = load_cluster(
      write(std::string(kTwoHosts) +
                "  - {from: a, to: b, preset: network-100g, profile: links.yaml, latency: 3 us}\n",
            "cluster.yaml"));
  for (const LinkSpec& link : cluster.links) {
    if (link.kind != LinkKind::kNetwork) continue;
    EXPECT_EQ(link.preset, "network-100g");
    EXPECT_DOUBLE_EQ(link.bandwidth_forward.value, 1e9);  // measured over the preset
    EXPECT_DOUBLE_EQ(link.latency.value, 3e-6);           // the file's own over the measured
  }
}

TEST_F(LinkProfiles, ClusterErrorsNameTheLinkLine) {
  write_link_profile((directory_ / "links.yaml").string(), measured());
  std::string error =
      error_of_cluster(std::string(kTwoHosts) + "  - {from: a, to: b, profile: absent.yaml}\n");
  EXPECT_NE(error.find("line 6: links[0].profile: "), std::string::npos) << error;
  EXPECT_NE(error.find("absent.yaml: no such file"), std::string::npos) << error;
  error = error_of_cluster(R"(hosts: [a, c]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: a}
  - {id: cpu1, preset: cpu-generic-avx2, host: c}
links:
  - {from: a, to: c, profile: links.yaml}
)");
  EXPECT_NE(error.find("line 6: links[0].profile: "), std::string::npos) << error;
  EXPECT_NE(error.find("has no measurement between a and c (it measured a-b)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("tandem calibrate --mpi --cluster"), std::string::npos) << error;
  error =
      error_of_cluster(std::string(kTwoHosts) + "  - {from: cpu0, to: a, profile: links.yaml}\n");
  EXPECT_NE(error.find("line 6: links[0].profile: a link profile measures the network between "
                       "hosts"),
            std::string::npos)
      << error;
  // A device profile named as a link's.
  write("{\"format\": \"tandem-profile\"}\n", "cpu.json");
  error = error_of_cluster(std::string(kTwoHosts) + "  - {from: a, to: b, profile: cpu.json}\n");
  EXPECT_NE(error.find("expected tandem-link-profile, not 'tandem-profile'"), std::string::npos)
      << error;
  error = error_of_cluster(std::string(kTwoHosts) + "  - {from: a, to: b}\n");
  EXPECT_NE(
      error.find("line 6: links[0]: give a 'preset', a 'profile' or the 'bandwidth' each way"),
      std::string::npos)
      << error;
}

TEST_F(LinkProfiles, HostsLoadBeforeTheProfileExists) {
  const std::string path = write(
      std::string(kTwoHosts) + "  - {from: a, to: b, profile: not-yet.yaml}\n", "cluster.yaml");
  EXPECT_THROW(load_cluster(path), InputError);
  const Cluster cluster = load_cluster_hosts(path);
  ASSERT_EQ(cluster.hosts.size(), 2u);
  EXPECT_EQ(cluster.hosts[1].id, "b");
  ASSERT_EQ(cluster.devices.size(), 2u);
  EXPECT_EQ(cluster.devices[1].host, "b");
  EXPECT_TRUE(cluster.links.empty());
}

}  // namespace
}  // namespace tandem
