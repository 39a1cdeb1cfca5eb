#include <gtest/gtest.h>

#include <cmath>

#include "cost/cost_model.h"
#include "test_cluster.h"

namespace tandem {
namespace {

using testing::gpu;
using testing::link;
using testing::tpu;

constexpr int kGpu0 = 0, kGpu1 = 1, kTpu = 2;
constexpr double kBytes = 64e6;

// Two GPUs in host h0, a TPU in host h1, hosts joined by a network; every link asymmetric so
// that the direction crossed shows.
Cluster two_hosts() {
  Cluster cluster;
  cluster.hosts = {testing::host("h0"), testing::host("h1")};
  cluster.devices = {gpu("gpu0", "h0"), gpu("gpu1", "h0"), tpu("tpu0", "h1", 128)};
  cluster.links = {link("gpu0", "h0", LinkKind::kPcie, 32e9, 16e9, 1e-6),
                   link("gpu1", "h0", LinkKind::kPcie, 30e9, 20e9, 2e-6),
                   link("h0", "h1", LinkKind::kNetwork, 25e9, 12.5e9, 10e-6),
                   link("tpu0", "h1", LinkKind::kPcie, 8e9, 4e9, 3e-6)};
  return cluster;
}

TEST(Transfer, SameDeviceIsFree) {
  const CostModel model(two_hosts());
  EXPECT_EQ(model.transfer_seconds(kBytes, kGpu0, kGpu0), 0);
}

TEST(Transfer, SameHostCrossesBothHostLinks) {
  const CostModel model(two_hosts());
  // gpu0 -> h0 forward, then h0 -> gpu1 against gpu1's link.
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, kGpu0, kGpu1),
                   1e-6 + kBytes / 32e9 + 2e-6 + kBytes / 20e9);
}

TEST(Transfer, AcrossHostsPaysEveryHop) {
  const CostModel model(two_hosts());
  ASSERT_EQ(model.cluster().path(kGpu0, kTpu).size(), 3u);
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, kGpu0, kTpu),
                   (1e-6 + kBytes / 32e9) + (10e-6 + kBytes / 25e9) + (3e-6 + kBytes / 4e9));
}

TEST(Transfer, ReverseDirectionUsesBackwardBandwidth) {
  const CostModel model(two_hosts());
  EXPECT_DOUBLE_EQ(model.transfer_seconds(kBytes, kTpu, kGpu0),
                   (3e-6 + kBytes / 8e9) + (10e-6 + kBytes / 12.5e9) + (1e-6 + kBytes / 16e9));
}

TEST(Transfer, LatencyDominatesSmallTransfers) {
  const CostModel model(two_hosts());
  const double latencies = 1e-6 + 10e-6 + 3e-6;
  EXPECT_NEAR(model.transfer_seconds(8, kGpu0, kTpu), latencies, 0.01 * latencies);
}

TEST(Transfer, DirectionWithoutBandwidthCarriesNothing) {
  Cluster cluster = two_hosts();
  cluster.links[0].bandwidth_backward = {};
  const CostModel model(cluster);
  EXPECT_TRUE(std::isinf(model.hop_seconds(kBytes, {0, false})));
  EXPECT_DOUBLE_EQ(model.hop_seconds(kBytes, {0, true}), 1e-6 + kBytes / 32e9);
}

TEST(Transfer, ProfileHostCopyBandwidthReplacesTheHostLink) {
  Cluster cluster = two_hosts();
  cluster.devices[kGpu0].profile = "gpu0.json";
  CalibrationProfile profile;
  profile.host_link_bandwidth = testing::figure(10e9, "calibration gpu0.json");
  const CostModel model(cluster, {{kGpu0, profile}});
  EXPECT_DOUBLE_EQ(model.hop_seconds(kBytes, {0, true}), 1e-6 + kBytes / 10e9);
  EXPECT_DOUBLE_EQ(model.hop_seconds(kBytes, {0, false}), 1e-6 + kBytes / 10e9);
  EXPECT_DOUBLE_EQ(model.hop_seconds(kBytes, {1, true}), 2e-6 + kBytes / 30e9);  // gpu1's own
}

}  // namespace
}  // namespace tandem
