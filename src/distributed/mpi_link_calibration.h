#pragma once
#include <functional>
#include <string>
#include <vector>

#include "devices/link_profile.h"
#include "distributed/mpi_world.h"

namespace tandem::distributed {

struct LinkCalibrationOptions {
  bool quick = false;  // fewer sizes (to 8 MiB) and repetitions: well under a second a pair
  std::vector<std::string> host_of_rank;  // the host id each rank is named by, by rank
  std::string machine;  // this rank's machine, e.g. "AMD EPYC, 2 CPUs" (each rank gives its own)
  // A progress line for people (stderr), called on the rank that times a pair: its lower rank.
  std::function<void(const std::string&)> progress;
};

// The message sizes measured, ascending: 8 B, then powers of 4 to 32 MiB, and 64 MiB (quick: 8 B
// to 8 MiB in powers of 16).
std::vector<size_t> link_message_sizes(bool quick);

// Measures the links between the job's ranks: every pair of ranks (rank 0 with each other rank
// beyond 8 ranks), one pair at a time while the others wait without spinning. For each size the
// lower rank times exchanges with its peer, a message of that size out and the smallest back and
// the other way round, after two warm-up exchanges, as many as fit 80 ms (quick 5 ms)
// (at least 5, quick 3), and keeps the medians; the whole stays within a few seconds (the
// largest sizes are left out past it). Every rank calls it, in the same order as every other
// collective; returns the profile at rank 0 and an empty one elsewhere. Throws
// std::runtime_error when MPI fails.
LinkProfile calibrate_links(const MpiWorld& world, const LinkCalibrationOptions& options);

}  // namespace tandem::distributed
