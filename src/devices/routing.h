#pragma once
#include <vector>

#include "devices/cluster.h"

namespace tandem {

// Paths are chosen for this transfer size: latency and bandwidth both count.
inline constexpr double kReferenceTransferBytes = 1024.0 * 1024.0;

// The devices a device can reach, by index (routing rules as for Cluster::path).
std::vector<bool> reachable_devices(const Cluster& cluster, int from_device);

// A pair of devices with no path between them, or {-1, -1} when every pair has one.
std::pair<int, int> first_unconnected_pair(const Cluster& cluster);

}  // namespace tandem
