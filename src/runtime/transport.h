#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tandem {

// How a PlanExecutor that runs one rank's devices reaches the executors of the other ranks (one
// process per host, docs/MPI.md). Values read on another rank travel as messages of host
// tensors; both sides derive each message's tag from the plan, so none carries a name. Used by
// one run at a time: begin_run, any number of send, then end_run.
class Transport {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // "rank 1 (host-b)", for messages.
  virtual std::string describe(int rank) const = 0;

  struct Receive {
    int from = 0;
    int tag = 0;
    // Called once, from the transport's thread, with the tensor (host memory) and when its
    // first and last bytes arrived.
    std::function<void(Tensor, Clock::time_point first, Clock::time_point last)> on_arrival;
  };
  // Starts a run that expects `receives`; `on_peer_failure(rank, what)` is called, from the
  // transport's thread, when another rank fails (fail() there) or is lost.
  virtual void begin_run(
      std::vector<Receive> receives,
      std::function<void(int rank, const std::string& what)> on_peer_failure) = 0;
  // Sends a host tensor; returns once the transport has taken it in hand (started sending it,
  // not waiting for it to arrive), keeping the tensor until it is sent. Never called from the
  // transport's own thread.
  virtual void send(int to, int tag, Tensor tensor) = 0;
  // This rank's run failed: tells every other rank (`what` names the device and op) and stops
  // waiting for messages. The transport takes no further run.
  virtual void fail(const std::string& what) = 0;
  // Waits until every receive has arrived and every send has completed, or the run failed here
  // or on a peer. Throws when the transport cannot take another run.
  virtual void end_run() = 0;
};

}  // namespace tandem
