#pragma once
#include <string>
#include <vector>

#include "devices/cluster.h"

namespace tandem {

// Paths are chosen for this transfer size: latency and bandwidth both count.
inline constexpr double kReferenceTransferBytes = 1024.0 * 1024.0;

// The routes between a cluster's devices (Cluster::path's rules), its routing graph built once:
// each search is one Dijkstra over devices, hosts and switches, so that a cluster of thousands
// of devices pays for the pairs it asks about, not for every pair. Holds no reference to the
// cluster.
class Router {
 public:
  explicit Router(const Cluster& cluster);

  int device_count() const { return devices_; }
  // The links from one device to another (Cluster::path). Throws when there is none.
  std::vector<Cluster::Hop> path(int from_device, int to_device) const;
  // Every device's path from one device, in one search: entry `to` is path(from_device, to)
  // (empty for the device itself). Throws when some device cannot be reached.
  std::vector<std::vector<Cluster::Hop>> paths_from(int from_device) const;

  // The paths from one device to all as one tree: each state of the search (a node, and whether
  // it was reached over a device-to-device link) with the state and hop it was reached from.
  // The path to a device is the chain from `reached[device]` back to `start`; `settled` lists
  // the states in the order the search fixed them, so a state's predecessor comes before it.
  struct Tree {
    int start = 0;
    std::vector<int> settled;
    std::vector<int> previous_state;
    std::vector<Cluster::Hop> previous_hop;
    std::vector<int> reached;  // per device: its state, -1 when unreachable
  };
  // Throws when some device cannot be reached.
  Tree tree_from(int from_device) const;

 private:
  struct Edge {
    int link;
    int to;
    bool forward;
    bool between_devices;
    double seconds;  // for the reference transfer
  };
  static int state(int node, bool fabric) { return 2 * node + fabric; }
  bool may_take(int node, bool fabric, int source, const Edge& edge) const;
  // Dijkstra from a device; stops once `to_device` is reached (-1: every device).
  Tree search(int from_device, int to_device) const;
  std::vector<Cluster::Hop> hops_to(const Tree& tree, int from_device, int to_device) const;
  [[noreturn]] void no_path(int from_device, int to_device) const;

  int devices_ = 0;
  std::vector<std::string> device_ids_;   // for errors
  std::vector<std::vector<Edge>> edges_;  // per node: devices, then hosts (switches included)
};

// Whether crossing `hop` arrives at a switch (a host marked `switch: true`): the transfer goes
// on to the next link without being staged in memory.
bool arrives_at_switch(const Cluster& cluster, const Cluster::Hop& hop);

// The devices a device can reach, by index (routing rules as for Cluster::path).
std::vector<bool> reachable_devices(const Cluster& cluster, int from_device);

// A pair of devices with no path between them, or {-1, -1} when every pair has one. The first
// such pair in the order (from, to) of the devices' indices.
std::pair<int, int> first_unconnected_pair(const Cluster& cluster);

}  // namespace tandem
