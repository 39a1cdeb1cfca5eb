#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "distributed/rank_map.h"  // launched_by_mpi

namespace tandem::distributed {

// MPI for this process: initialised on construction (threads: the runtime's transport thread
// calls MPI while the main thread waits; collectives only between runs), finalised on
// destruction. At most one per process. Every rank's processor (host) name is gathered at start.
// Throws std::runtime_error "MPI: <what>: <MPI's text for code>" unless code is MPI_SUCCESS.
void check_mpi(int code, const char* what);

class MpiWorld {
 public:
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }
  // MPI_Get_processor_name of each rank (the host it runs on), by rank.
  const std::vector<std::string>& processor_names() const { return names_; }
  // "rank 1 (host-b)": how messages name a rank.
  std::string describe(int rank) const;

  // Collectives on text, from the main thread, between runs: every rank calls them in the same
  // order. broadcast returns root's text on every rank; gather returns every rank's text at
  // root (empty elsewhere); all_gather returns every rank's text on every rank.
  std::string broadcast(const std::string& text, int root = 0) const;
  std::vector<std::string> gather(const std::string& text, int root = 0) const;
  std::vector<std::string> all_gather(const std::string& text) const;
  void barrier() const;
  // Every rank's steady clock less rank 0's, in seconds, by rank (at rank 0; empty elsewhere):
  // from ping-pongs of timestamps, each rank's exchange with the shortest round trip (the
  // clock is read halfway through it). Collective.
  std::vector<double> clock_offsets() const;
  // Ends every rank of the job with `code` (after a failure a clean finalize could wait forever
  // on a peer's unfinished messages).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1;
  std::vector<std::string> names_;
};

}  // namespace tandem::distributed
