#include "distributed/rank_map.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "ir/error.h"

namespace tandem::distributed {
namespace {

int host_index(const Cluster& cluster, const std::string& id) {
  for (size_t h = 0; h < cluster.hosts.size(); ++h) {
    if (cluster.hosts[h].id == id) return static_cast<int>(h);
  }
  return -1;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(variable)) return true;
  }
  return false;
}

RankMap map_ranks(const Cluster& cluster, const std::vector<std::string>& processor_names,
                  const std::vector<std::string>& explicit_hosts, const std::string& cluster_file) {
  const int ranks = static_cast<int>(processor_names.size());
  std::vector<int> busy_hosts;  // hosts holding devices, in the file's order
  std::vector<std::string> busy_names;
  for (size_t h = 0; h < cluster.hosts.size(); ++h) {
    const bool used =
        std::any_of(cluster.devices.begin(), cluster.devices.end(),
                    [&](const DeviceSpec& d) { return d.host == cluster.hosts[h].id; });
    if (!used) continue;
    busy_hosts.push_back(static_cast<int>(h));
    busy_names.push_back(cluster.hosts[h].id);
  }
  RankMap map;
  if (!explicit_hosts.empty()) {
    if (static_cast<int>(explicit_hosts.size()) != ranks)
      throw InputError("--rank-hosts", "it names " + std::to_string(explicit_hosts.size()) +
                                           " hosts for " + std::to_string(ranks) + " ranks");
    for (const std::string& id : explicit_hosts) {
      const int h = host_index(cluster, id);
      if (h < 0)
        throw InputError("--rank-hosts", "host '" + id + "' is not in " + cluster_file +
                                             " (hosts: " + joined(busy_names) + ")");
      map.host_of_rank.push_back(h);
    }
    map.how = "as --rank-hosts says";
  } else {
    std::vector<int> by_name;
    for (const std::string& name : processor_names) by_name.push_back(host_index(cluster, name));
    const bool named = std::none_of(by_name.begin(), by_name.end(), [](int h) { return h < 0; }) &&
                       std::set<int>(by_name.begin(), by_name.end()).size() == by_name.size();
    if (named) {
      map.host_of_rank = by_name;
      map.how = "by host name";
    } else if (ranks == static_cast<int>(busy_hosts.size())) {
      map.host_of_rank = busy_hosts;
      map.how = "in order: rank i owns the i-th host of " + cluster_file;
    } else {
      throw InputError(cluster_file,
                       std::to_string(busy_hosts.size()) + " hosts hold devices (" +
                           joined(busy_names) + ") but the job has " + std::to_string(ranks) +
                           " ranks: start one rank per host (mpirun -np " +
                           std::to_string(busy_hosts.size()) + ") or name them with --rank-hosts");
    }
  }
  map.rank_of_host.assign(cluster.hosts.size(), -1);
  for (int r = 0; r < ranks; ++r) {
    const int h = map.host_of_rank[r];
    if (map.rank_of_host[h] >= 0)
      throw InputError("--rank-hosts", "host '" + cluster.hosts[h].id + "' is given to ranks " +
                                           std::to_string(map.rank_of_host[h]) + " and " +
                                           std::to_string(r));
    map.rank_of_host[h] = r;
  }
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    const int h = host_index(cluster, cluster.devices[d].host);
    const int rank = h < 0 ? -1 : map.rank_of_host[h];
    if (rank < 0)
      throw InputError(cluster_file, "device " + cluster.devices[d].id + " is in host '" +
                                         cluster.devices[d].host + "', which no rank runs");
    map.rank_of_device.push_back(rank);
  }
  return map;
}

}  // namespace tandem::distributed
