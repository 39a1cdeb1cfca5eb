#pragma once
#include <string>
#include <vector>

#include "devices/cluster.h"

namespace tandem::distributed {

// True when this process is one of several started by mpirun/mpiexec (Open MPI's or PMIx's
// environment says so): `tandem run` then runs as one rank of a multi-host plan.
bool launched_by_mpi();

// Which rank of an MPI job owns each host of a cluster, and so each device: a rank runs the
// devices of one host.
struct RankMap {
  std::vector<int> rank_of_host;    // by cluster.hosts; -1 for a host without devices
  std::vector<int> rank_of_device;  // by cluster.devices
  std::vector<int> host_of_rank;    // by rank: index into cluster.hosts
  std::string how;                  // how the mapping was made, for the report
};

// `processor_names` are the ranks' host names, by rank. `explicit_hosts` (--rank-hosts) names
// the host of each rank in rank order. Without it: by name when every rank runs on a distinct
// host of the cluster's, else in order (rank i owns the i-th host that holds devices) when the
// job has one rank per such host. Throws InputError, naming `cluster_file`, when the ranks do
// not match the hosts (too few, too many, an unknown or repeated host).
RankMap map_ranks(const Cluster& cluster, const std::vector<std::string>& processor_names,
                  const std::vector<std::string>& explicit_hosts, const std::string& cluster_file);

}  // namespace tandem::distributed
