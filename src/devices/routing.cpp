// Routing between devices. Nodes are devices and hosts (switches among them); links are edges
// crossed in either direction. A path may pass through hosts (staging in host memory), through
// switches (forwarding without staging), and through devices only from one device-to-device
// link to another (ICI routes through TPU chips, NVLink through switches); a device reached
// over its host link is a destination, never a relay. Of the possible paths, the one with the
// least time for the reference transfer is taken: every link its latency and the bytes at its
// bandwidth, except a link out of a switch, which adds only its latency (the transfer is
// already on the wire: a switch cuts through).
#include "devices/routing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace tandem {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Node indices of every device and host id: devices first, in the cluster's order, then hosts.
std::unordered_map<std::string, int> node_indices(const Cluster& cluster) {
  std::unordered_map<std::string, int> nodes;
  nodes.reserve(cluster.devices.size() + cluster.hosts.size());
  const int devices = static_cast<int>(cluster.devices.size());
  for (int d = 0; d < devices; ++d) nodes.emplace(cluster.devices[d].id, d);
  for (size_t h = 0; h < cluster.hosts.size(); ++h) {
    nodes.emplace(cluster.hosts[h].id, devices + static_cast<int>(h));
  }
  return nodes;
}

}  // namespace

Router::Router(const Cluster& cluster)
    : devices_(static_cast<int>(cluster.devices.size())),
      edges_(cluster.devices.size() + cluster.hosts.size()) {
  device_ids_.reserve(cluster.devices.size());
  for (const DeviceSpec& device : cluster.devices) device_ids_.push_back(device.id);
  const std::unordered_map<std::string, int> nodes = node_indices(cluster);
  std::vector<bool> is_switch(edges_.size(), false);
  for (size_t h = 0; h < cluster.hosts.size(); ++h)
    is_switch[devices_ + h] = cluster.hosts[h].is_switch;
  for (size_t l = 0; l < cluster.links.size(); ++l) {
    const LinkSpec& link = cluster.links[l];
    const auto from = nodes.find(link.from), to = nodes.find(link.to);
    if (from == nodes.end() || to == nodes.end()) continue;  // validated when loaded
    const bool between_devices = from->second < devices_ && to->second < devices_;
    auto seconds = [&](const Figure& bandwidth, int leaving) {
      if (!bandwidth.known()) return kInfinity;
      if (is_switch[leaving]) return link.latency.value;
      return link.latency.value + kReferenceTransferBytes / bandwidth.value;
    };
    const int index = static_cast<int>(l);
    edges_[from->second].push_back(
        {index, to->second, true, between_devices, seconds(link.bandwidth_forward, from->second)});
    edges_[to->second].push_back({index, from->second, false, between_devices,
                                  seconds(link.bandwidth_backward, to->second)});
  }
}

// States are (node, arrived over a device-to-device link).
bool Router::may_take(int node, bool fabric, int source, const Edge& edge) const {
  if (node == source || node >= devices_) return true;
  return fabric && edge.between_devices;
}

Router::Tree Router::search(int from_device, int to_device) const {
  const int states = 2 * static_cast<int>(edges_.size());
  std::vector<double> best(states, kInfinity);
  Tree result;
  result.previous_state.assign(states, -1);
  result.previous_hop.assign(states, Cluster::Hop{-1, true});
  result.reached.assign(devices_, -1);
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  const int start = state(from_device, false);
  result.start = start;
  best[start] = 0;
  queue.push({0, start});
  int unreached = devices_;
  while (!queue.empty()) {
    const auto [seconds, current] = queue.top();
    queue.pop();
    if (seconds > best[current]) continue;
    result.settled.push_back(current);
    const int node = current / 2;
    if (node < devices_ && result.reached[node] < 0) {
      // The first state of a device taken off the queue is its path (as a search that stops
      // there finds it); what the search does afterwards never changes it.
      result.reached[node] = current;
      if (node == to_device || --unreached == 0) break;
    }
    for (const Edge& edge : edges_[node]) {
      if (!may_take(node, current % 2, from_device, edge)) continue;
      const int next = state(edge.to, edge.between_devices);
      if (seconds + edge.seconds < best[next]) {
        best[next] = seconds + edge.seconds;
        result.previous_state[next] = current;
        result.previous_hop[next] = {edge.link, edge.forward};
        queue.push({best[next], next});
      }
    }
  }
  return result;
}

std::vector<Cluster::Hop> Router::hops_to(const Tree& tree, int from_device, int to_device) const {
  const int reached = tree.reached[to_device];
  if (reached < 0) no_path(from_device, to_device);
  std::vector<Cluster::Hop> hops;
  for (int current = reached; current != tree.start; current = tree.previous_state[current]) {
    hops.push_back(tree.previous_hop[current]);
  }
  std::reverse(hops.begin(), hops.end());
  return hops;
}

void Router::no_path(int from_device, int to_device) const {
  throw std::runtime_error("no path from " + device_ids_[from_device] + " to " +
                           device_ids_[to_device]);
}

std::vector<Cluster::Hop> Router::path(int from_device, int to_device) const {
  if (from_device < 0 || from_device >= devices_ || to_device < 0 || to_device >= devices_) {
    throw std::out_of_range(
        "Cluster::path: no device " +
        std::to_string(from_device < 0 || from_device >= devices_ ? from_device : to_device));
  }
  if (from_device == to_device) return {};
  return hops_to(search(from_device, to_device), from_device, to_device);
}

std::vector<std::vector<Cluster::Hop>> Router::paths_from(int from_device) const {
  const Tree found = tree_from(from_device);
  std::vector<std::vector<Cluster::Hop>> paths(devices_);
  for (int to = 0; to < devices_; ++to) {
    if (to != from_device) paths[to] = hops_to(found, from_device, to);
  }
  return paths;
}

Router::Tree Router::tree_from(int from_device) const {
  if (from_device < 0 || from_device >= devices_)
    throw std::out_of_range("Cluster::path: no device " + std::to_string(from_device));
  Tree tree = search(from_device, -1);
  for (int to = 0; to < devices_; ++to) {
    if (tree.reached[to] < 0) no_path(from_device, to);
  }
  return tree;
}

std::vector<Cluster::Hop> Cluster::path(int from_device, int to_device) const {
  return Router(*this).path(from_device, to_device);
}

bool arrives_at_switch(const Cluster& cluster, const Cluster::Hop& hop) {
  const LinkSpec& link = cluster.links.at(hop.link);
  const std::string& end = hop.forward ? link.to : link.from;
  return std::any_of(cluster.hosts.begin(), cluster.hosts.end(),
                     [&](const HostSpec& host) { return host.is_switch && host.id == end; });
}

namespace {

// The routing rules without figures: states (node, arrived over a device-to-device link).
struct Reach {
  struct Edge {
    int to;
    bool between_devices;
  };
  int devices = 0;
  std::vector<std::vector<Edge>> edges;

  explicit Reach(const Cluster& cluster)
      : devices(static_cast<int>(cluster.devices.size())),
        edges(cluster.devices.size() + cluster.hosts.size()) {
    const std::unordered_map<std::string, int> nodes = node_indices(cluster);
    for (const LinkSpec& link : cluster.links) {
      const auto from = nodes.find(link.from), to = nodes.find(link.to);
      if (from == nodes.end() || to == nodes.end()) continue;
      const bool between = from->second < devices && to->second < devices;
      edges[from->second].push_back({to->second, between});
      edges[to->second].push_back({from->second, between});
    }
  }

  std::vector<bool> from(int from_device) const {
    std::vector<bool> seen(2 * edges.size(), false);
    std::vector<int> stack = {2 * from_device};
    seen[stack.back()] = true;
    while (!stack.empty()) {
      const int current = stack.back();
      stack.pop_back();
      const int node = current / 2;
      for (const Edge& edge : edges[node]) {
        if (node != from_device && node < devices && !(current % 2 && edge.between_devices))
          continue;
        const int next = 2 * edge.to + edge.between_devices;
        if (!seen[next]) seen[next] = true, stack.push_back(next);
      }
    }
    std::vector<bool> reachable(devices);
    for (int d = 0; d < devices; ++d) reachable[d] = seen[2 * d] || seen[2 * d + 1];
    return reachable;
  }
};

struct DisjointSets {
  std::vector<int> parent;
  explicit DisjointSets(int count) : parent(count) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

}  // namespace

std::vector<bool> reachable_devices(const Cluster& cluster, int from_device) {
  return Reach(cluster).from(from_device);
}

// Under the routing rules a device reaches (a) the devices of its component of device-to-device
// links, and (b) every device linked to a host of the components of host-to-host links that
// its own host links join; nothing else (a device reached over a host link relays nothing, one
// reached over device links relays only over device links). So a pair is connected when the
// two share a device component or a host component; with one host component that every device
// reaches, every pair is, which is decided in time linear in the links.
std::pair<int, int> first_unconnected_pair(const Cluster& cluster) {
  const int devices = static_cast<int>(cluster.devices.size());
  const int hosts = static_cast<int>(cluster.hosts.size());
  const std::unordered_map<std::string, int> nodes = node_indices(cluster);
  DisjointSets fabric(devices), network(hosts);
  std::vector<std::vector<int>> host_links(devices);  // per device: hosts its links reach
  for (const LinkSpec& link : cluster.links) {
    const auto from = nodes.find(link.from), to = nodes.find(link.to);
    if (from == nodes.end() || to == nodes.end()) continue;
    const int a = from->second, b = to->second;
    if (a < devices && b < devices) {
      fabric.join(a, b);
    } else if (a >= devices && b >= devices) {
      network.join(a - devices, b - devices);
    } else {
      host_links[std::min(a, b)].push_back(std::max(a, b) - devices);
    }
  }
  std::vector<std::vector<int>> components(devices);  // per device: host components, sorted
  std::vector<int> reaching(hosts, 0);                // per host component: devices reaching it
  for (int d = 0; d < devices; ++d) {
    for (int host : host_links[d]) components[d].push_back(network.find(host));
    std::sort(components[d].begin(), components[d].end());
    components[d].erase(std::unique(components[d].begin(), components[d].end()),
                        components[d].end());
    for (int component : components[d]) ++reaching[component];
  }
  if (devices == 0 || std::find(reaching.begin(), reaching.end(), devices) != reaching.end())
    return {-1, -1};
  auto share_component = [&](int a, int b) {
    const std::vector<int>&x = components[a], &y = components[b];
    for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
      if (x[i] == y[j]) return true;
      x[i] < y[j] ? ++i : ++j;
    }
    return false;
  };
  for (int from = 0; from < devices; ++from) {
    for (int to = 0; to < devices; ++to) {
      if (to == from || fabric.find(from) == fabric.find(to) || share_component(from, to)) continue;
      return {from, to};
    }
  }
  return {-1, -1};
}

}  // namespace tandem
