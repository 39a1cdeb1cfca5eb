#pragma once
#include <memory>

#include "distributed/mpi_world.h"
#include "runtime/transport.h"

namespace tandem::distributed {

// The runtime's Transport over MPI (docs/MPI.md). One thread per process makes every MPI call
// of a run: it posts the non-blocking sends the compute workers hand it and the receives the
// run expects, and polls them, so that messages travel while the devices compute. A tensor goes
// as a header (dtype, shape) then chunks of at most kChunkBytes, on its own communicator (a
// duplicate of the world's, so tags never meet the collectives'). A failure is told to every
// rank on tag 0. MPI's non-overtaking order per sender and tag keeps one run's messages apart
// from the next's.
class MpiTransport : public Transport {
 public:
  static constexpr size_t kChunkBytes = size_t{4} << 20;

  explicit MpiTransport(const MpiWorld& world);
  ~MpiTransport() override;

  int rank() const override { return world_.rank(); }
  int ranks() const override { return world_.size(); }
  std::string describe(int rank) const override { return world_.describe(rank); }
  void begin_run(std::vector<Receive> receives,
                 std::function<void(int rank, const std::string& what)> on_peer_failure) override;
  void send(int to, int tag, Tensor tensor) override;
  void fail(const std::string& what) override;
  void end_run() override;

 private:
  struct State;
  const MpiWorld& world_;
  std::unique_ptr<State> state_;
};

}  // namespace tandem::distributed
