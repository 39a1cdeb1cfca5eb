// Routing between devices. Nodes are devices and hosts; links are edges crossed in either
// direction. A path may pass through hosts (staging in host memory) and through devices only
// from one device-to-device link to another (ICI routes through TPU chips, NVLink through
// switches); a device reached over its host link is a destination, never a relay.
#include "devices/routing.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>

#include "devices/cluster.h"

namespace tandem {
namespace {

struct Edge {
  int link;
  int to;
  bool forward;
  bool between_devices;
  double seconds;  // for the reference transfer
};

class RoutingGraph {
 public:
  explicit RoutingGraph(const Cluster& cluster)
      : devices_(static_cast<int>(cluster.devices.size())),
        edges_(cluster.devices.size() + cluster.hosts.size()) {
    std::map<std::string, int, std::less<>> nodes;
    for (int d = 0; d < devices_; ++d) nodes[cluster.devices[d].id] = d;
    for (size_t h = 0; h < cluster.hosts.size(); ++h) {
      nodes[cluster.hosts[h].id] = devices_ + static_cast<int>(h);
    }
    for (size_t l = 0; l < cluster.links.size(); ++l) {
      const LinkSpec& link = cluster.links[l];
      const auto from = nodes.find(link.from), to = nodes.find(link.to);
      if (from == nodes.end() || to == nodes.end()) continue;  // validated when loaded
      const bool between_devices = from->second < devices_ && to->second < devices_;
      auto seconds = [&](const Figure& bandwidth) {
        if (!bandwidth.known()) return std::numeric_limits<double>::infinity();
        return link.latency.value + kReferenceTransferBytes / bandwidth.value;
      };
      const int index = static_cast<int>(l);
      edges_[from->second].push_back(
          {index, to->second, true, between_devices, seconds(link.bandwidth_forward)});
      edges_[to->second].push_back(
          {index, from->second, false, between_devices, seconds(link.bandwidth_backward)});
    }
  }

  int nodes() const { return static_cast<int>(edges_.size()); }
  // States are (node, arrived over a device-to-device link).
  static int state(int node, bool fabric) { return 2 * node + fabric; }
  bool may_take(int node, bool fabric, int source, const Edge& edge) const {
    if (node == source || node >= devices_) return true;
    return fabric && edge.between_devices;
  }
  const std::vector<Edge>& edges(int node) const { return edges_[node]; }

 private:
  int devices_;
  std::vector<std::vector<Edge>> edges_;
};

}  // namespace

std::vector<Cluster::Hop> Cluster::path(int from_device, int to_device) const {
  const int count = static_cast<int>(devices.size());
  if (from_device < 0 || from_device >= count || to_device < 0 || to_device >= count) {
    throw std::out_of_range(
        "Cluster::path: no device " +
        std::to_string(from_device < 0 || from_device >= count ? from_device : to_device));
  }
  if (from_device == to_device) return {};
  const RoutingGraph graph(*this);
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<double> best(2 * graph.nodes(), infinity);
  struct Previous {
    int state = -1;
    Hop hop{-1, true};
  };
  std::vector<Previous> previous(best.size());
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  const int start = RoutingGraph::state(from_device, false);
  best[start] = 0;
  queue.push({0, start});
  int reached = -1;
  while (!queue.empty()) {
    const auto [seconds, current] = queue.top();
    queue.pop();
    if (seconds > best[current]) continue;
    const int node = current / 2;
    if (node == to_device) {
      reached = current;
      break;
    }
    for (const Edge& edge : graph.edges(node)) {
      if (!graph.may_take(node, current % 2, from_device, edge)) continue;
      const int next = RoutingGraph::state(edge.to, edge.between_devices);
      if (seconds + edge.seconds < best[next]) {
        best[next] = seconds + edge.seconds;
        previous[next] = {current, {edge.link, edge.forward}};
        queue.push({best[next], next});
      }
    }
  }
  if (reached < 0) {
    throw std::runtime_error("no path from " + devices[from_device].id + " to " +
                             devices[to_device].id);
  }
  std::vector<Hop> hops;
  for (int state = reached; state != start; state = previous[state].state) {
    hops.push_back(previous[state].hop);
  }
  std::reverse(hops.begin(), hops.end());
  return hops;
}

namespace {

std::vector<bool> reachable_in(const RoutingGraph& graph, int devices, int from_device) {
  std::vector<bool> seen(2 * graph.nodes(), false);
  std::vector<int> stack = {RoutingGraph::state(from_device, false)};
  seen[stack.back()] = true;
  while (!stack.empty()) {
    const int current = stack.back();
    stack.pop_back();
    const int node = current / 2;
    for (const Edge& edge : graph.edges(node)) {
      if (!graph.may_take(node, current % 2, from_device, edge)) continue;
      const int next = RoutingGraph::state(edge.to, edge.between_devices);
      if (!seen[next]) seen[next] = true, stack.push_back(next);
    }
  }
  std::vector<bool> reachable(devices);
  for (int d = 0; d < devices; ++d) reachable[d] = seen[2 * d] || seen[2 * d + 1];
  return reachable;
}

}  // namespace

std::vector<bool> reachable_devices(const Cluster& cluster, int from_device) {
  return reachable_in(RoutingGraph(cluster), static_cast<int>(cluster.devices.size()), from_device);
}

std::pair<int, int> first_unconnected_pair(const Cluster& cluster) {
  const RoutingGraph graph(cluster);
  const int devices = static_cast<int>(cluster.devices.size());
  for (int from = 0; from < devices; ++from) {
    const std::vector<bool> reachable = reachable_in(graph, devices, from);
    for (int to = 0; to < devices; ++to) {
      if (!reachable[to]) return {from, to};
    }
  }
  return {-1, -1};
}

}  // namespace tandem
