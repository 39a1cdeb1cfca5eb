#include "distributed/mpi_transport.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "ir/shape.h"

namespace tandem::distributed {
namespace {

constexpr int kFailureTag = 0;              // message tags are the plan's + 1
constexpr int kMaxRank = 16;                // dims a header carries
constexpr int kHeaderWords = 3 + kMaxRank;  // dtype, rank, bytes, dims
constexpr int kFailureChars = 4096;

using Clock = std::chrono::steady_clock;
using Header = std::array<int64_t, kHeaderWords>;

int chunks_of(size_t bytes) {
  return static_cast<int>((bytes + MpiTransport::kChunkBytes - 1) / MpiTransport::kChunkBytes);
}

}  // namespace

struct MpiTransport::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, ranks = 1;

  // Shared with the other threads, under `mutex`.
  std::mutex mutex;
  std::condition_variable wake;     // the MPI thread: work handed over
  std::condition_variable settled;  // end_run, fail: the run is over or the notice went out
  std::condition_variable posted;   // send: the MPI thread has taken its message in hand
  bool stop = false;
  bool in_run = false;
  bool run_over = false;  // failed here or on a peer: nothing more is waited for
  bool broken = false;    // after a failure: no further run
  std::string broken_why;
  std::vector<Receive> new_receives;
  struct Outgoing {
    int to = 0, tag = 0;
    Tensor tensor;
  };
  std::deque<Outgoing> new_sends;
  std::optional<std::string> failure_to_tell;
  bool failure_told = false;
  std::function<void(int, const std::string&)> on_peer_failure;
  int outstanding = 0;  // receives not arrived and sends not completed, this run
  uint64_t sends_handed = 0, sends_taken = 0;  // by send(), by the MPI thread (posted or dropped)
  int calling = 0;  // callbacks into the run now running: end_run waits for them

  // The MPI thread's own.
  struct SendSlot {
    Outgoing message;
    Header header{};
    int parts_left = 0;
  };
  struct ReceiveSlot {
    Receive receive;
    Header header{};
    Tensor tensor;
    int chunks_left = 0;
    Clock::time_point first;
  };
  enum class Kind { kSend, kHeader, kChunk, kFailureIn };
  struct Op {
    Kind kind;
    size_t slot;
  };
  std::deque<SendSlot> sends;  // stable addresses: MPI reads the header and data in place
  std::deque<ReceiveSlot> receives;
  std::vector<MPI_Request> requests;
  std::vector<Op> ops;
  std::array<char, kFailureChars> failure_in{};
  std::thread thread;

  void post(MPI_Request request, Kind kind, size_t slot) {
    requests.push_back(request);
    ops.push_back({kind, slot});
  }

  void post_send(Outgoing message) {
    SendSlot& slot = sends.emplace_back();
    slot.message = std::move(message);
    const Tensor& tensor = slot.message.tensor;
    if (tensor.rank() > kMaxRank)
      throw std::runtime_error("a tensor of rank " + std::to_string(tensor.rank()) +
                               " cannot travel between ranks (at most " + std::to_string(kMaxRank) +
                               ")");
    slot.header[0] = static_cast<int64_t>(tensor.dtype());
    slot.header[1] = tensor.rank();
    slot.header[2] = static_cast<int64_t>(tensor.nbytes());
    for (int64_t axis = 0; axis < tensor.rank(); ++axis) slot.header[3 + axis] = tensor.dim(axis);
    const size_t index = sends.size() - 1;
    const int tag = slot.message.tag + 1;
    MPI_Request request;
    check_mpi(MPI_Isend(slot.header.data(), static_cast<int>(3 + tensor.rank()), MPI_INT64_T,
                        slot.message.to, tag, comm, &request),
              "MPI_Isend");
    post(request, Kind::kSend, index);
    slot.parts_left = 1 + chunks_of(tensor.nbytes());
    const auto* bytes = static_cast<const char*>(tensor.raw());
    for (size_t offset = 0; offset < tensor.nbytes(); offset += kChunkBytes) {
      const size_t length = std::min(kChunkBytes, tensor.nbytes() - offset);
      check_mpi(MPI_Isend(bytes + offset, static_cast<int>(length), MPI_BYTE, slot.message.to, tag,
                          comm, &request),
                "MPI_Isend");
      post(request, Kind::kSend, index);
    }
  }

  void post_receive(Receive receive) {
    ReceiveSlot& slot = receives.emplace_back();
    slot.receive = std::move(receive);
    MPI_Request request;
    check_mpi(MPI_Irecv(slot.header.data(), kHeaderWords, MPI_INT64_T, slot.receive.from,
                        slot.receive.tag + 1, comm, &request),
              "MPI_Irecv");
    post(request, Kind::kHeader, receives.size() - 1);
  }

  // The header names what arrives: checked before anything is allocated from it.
  void header_arrived(size_t index) {
    ReceiveSlot& slot = receives[index];
    slot.first = Clock::now();
    const Header& h = slot.header;
    const std::string from = "a message from rank " + std::to_string(slot.receive.from);
    if (h[0] <= static_cast<int64_t>(DType::kUndefined) ||
        h[0] > static_cast<int64_t>(DType::kBool) || h[1] < 0 || h[1] > kMaxRank)
      throw std::runtime_error(from + " has a bad header");
    Shape shape;
    int64_t elements = 1;
    for (int64_t axis = 0; axis < h[1]; ++axis) {
      if (h[3 + axis] < 0 || (h[3 + axis] > 0 && elements > kMaxElements / h[3 + axis]))
        throw std::runtime_error(from + " has a bad shape");
      elements *= h[3 + axis];
      shape.push_back(h[3 + axis]);
    }
    const auto dtype = static_cast<DType>(h[0]);
    if (static_cast<int64_t>(elements * dtype_size(dtype)) != h[2])
      throw std::runtime_error(from + " has a size that does not match its shape");
    slot.tensor = Tensor::allocate(dtype, shape);
    slot.chunks_left = chunks_of(slot.tensor.nbytes());
    auto* bytes = static_cast<char*>(slot.tensor.raw());
    for (size_t offset = 0; offset < slot.tensor.nbytes(); offset += kChunkBytes) {
      const size_t length = std::min(kChunkBytes, slot.tensor.nbytes() - offset);
      MPI_Request request;
      check_mpi(MPI_Irecv(bytes + offset, static_cast<int>(length), MPI_BYTE, slot.receive.from,
                          slot.receive.tag + 1, comm, &request),
                "MPI_Irecv");
      post(request, Kind::kChunk, index);
    }
    if (slot.chunks_left == 0) arrived(index);
  }

  void arrived(size_t index) {
    ReceiveSlot& slot = receives[index];
    {
      std::lock_guard lock(mutex);
      if (run_over) return;  // the run ended in a failure: nobody waits for it
      ++calling;
    }
    slot.receive.on_arrival(std::move(slot.tensor), slot.first, Clock::now());
    slot.receive.on_arrival = nullptr;
    std::lock_guard lock(mutex);
    --calling;
    if (--outstanding == 0 || calling == 0) settled.notify_all();
  }

  void settle_one() {
    std::lock_guard lock(mutex);
    if (--outstanding == 0) settled.notify_all();
  }

  // Cancels what this rank still waits for: after a failure nothing more arrives.
  void cancel_receives() {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (ops[i].kind == Kind::kHeader || ops[i].kind == Kind::kChunk) {
        MPI_Cancel(&requests[i]);
        MPI_Request_free(&requests[i]);
        requests[i] = MPI_REQUEST_NULL;
      }
    }
  }

  void end_in_failure(int rank, const std::string& what, bool tell_owner) {
    std::function<void(int, const std::string&)> callback;
    {
      std::lock_guard lock(mutex);
      if (in_run && !run_over && tell_owner) {
        callback = on_peer_failure;
        ++calling;
      }
      run_over = true;
      broken = true;
      if (broken_why.empty()) broken_why = what;
      settled.notify_all();
    }
    if (!callback) return;
    callback(rank, what);
    std::lock_guard lock(mutex);
    --calling;
    settled.notify_all();
  }

  // Sends the failure notice to every other rank; waits for it at most `patience` (a dead peer
  // never takes it).
  void tell_failure(const std::string& what) {
    const std::string text = what.substr(0, kFailureChars);
    std::vector<MPI_Request> notices;
    for (int r = 0; r < ranks; ++r) {
      if (r == rank) continue;
      MPI_Request request;
      if (MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, kFailureTag, comm,
                    &request) == MPI_SUCCESS)
        notices.push_back(request);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    int done = 0;
    while (!done && Clock::now() < deadline) {
      MPI_Testall(static_cast<int>(notices.size()), notices.data(), &done, MPI_STATUSES_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    cancel_receives();
    end_in_failure(rank, what, false);
  }

  void loop() {
    MPI_Request failure_request;
    MPI_Irecv(failure_in.data(), kFailureChars, MPI_CHAR, MPI_ANY_SOURCE, kFailureTag, comm,
              &failure_request);
    post(failure_request, Kind::kFailureIn, 0);
    auto idle = std::chrono::microseconds(0);
    for (;;) {
      std::vector<Receive> receiving;
      std::deque<Outgoing> sending;
      std::optional<std::string> failing;
      {
        std::unique_lock lock(mutex);
        // Polls while messages are on the way, more slowly the longer nothing happens (each
        // poll also lets MPI move data along); wakes at once for new work.
        const auto pause = outstanding > 0 ? std::min(idle, std::chrono::microseconds(100))
                           : in_run        ? idle
                                           : std::chrono::microseconds(10000);
        wake.wait_for(lock, pause, [&] {
          return stop || !new_receives.empty() || !new_sends.empty() || failure_to_tell;
        });
        if (stop) return;
        receiving.swap(new_receives);
        sending.swap(new_sends);
        std::swap(failing, failure_to_tell);
      }
      bool busy = !receiving.empty() || !sending.empty();
      // However this pass ends, its sends are taken: their senders may go on.
      struct TakeSends {
        State& state;
        size_t count;
        ~TakeSends() {
          if (count == 0) return;
          std::lock_guard lock(state.mutex);
          state.sends_taken += count;
          state.posted.notify_all();
        }
      } take_sends{*this, sending.size()};
      try {
        if (failing) {
          tell_failure(*failing);
          std::lock_guard lock(mutex);
          failure_told = true;
          settled.notify_all();
          continue;
        }
        {
          std::lock_guard lock(mutex);
          if (broken) continue;  // a late send after a failure: dropped with the run
        }
        // A new run: the last one's slots are done with once no request of theirs is left.
        const bool slots_done = std::all_of(
            ops.begin(), ops.end(), [](const Op& op) { return op.kind == Kind::kFailureIn; });
        if (busy && slots_done) {
          sends.clear();
          receives.clear();
        }
        for (Receive& receive : receiving) post_receive(std::move(receive));
        for (Outgoing& message : sending) post_send(std::move(message));
        busy = poll() || busy;
      } catch (const std::exception& error) {
        cancel_receives();
        end_in_failure(rank, describe_self() + ": the network failed: " + error.what(), true);
      }
      idle = busy ? std::chrono::microseconds(0)
                  : std::min(std::chrono::microseconds(1000),
                             std::max(std::chrono::microseconds(20), idle * 2));
    }
  }

  std::string describe_self() const { return "rank " + std::to_string(rank); }

  // Completes what has finished; true when anything did.
  bool poll() {
    if (requests.empty()) return false;
    std::vector<int> indices(requests.size());
    std::vector<MPI_Status> statuses(requests.size());
    int count = 0;
    check_mpi(MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count,
                           indices.data(), statuses.data()),
              "MPI_Testsome");
    if (count == MPI_UNDEFINED || count == 0) return false;
    for (int k = 0; k < count; ++k) {
      const Op op = ops[indices[k]];
      switch (op.kind) {
        case Kind::kSend:
          if (--sends[op.slot].parts_left == 0) {
            sends[op.slot].message.tensor = Tensor();
            settle_one();
          }
          break;
        case Kind::kHeader: header_arrived(op.slot); break;
        case Kind::kChunk:
          if (--receives[op.slot].chunks_left == 0) arrived(op.slot);
          break;
        case Kind::kFailureIn: {
          int chars = 0;
          MPI_Get_count(&statuses[k], MPI_CHAR, &chars);
          const std::string what(failure_in.data(), static_cast<size_t>(std::max(chars, 0)));
          cancel_receives();
          end_in_failure(statuses[k].MPI_SOURCE, what, true);
          break;
        }
      }
    }
    // Drop the completed requests (MPI set them to MPI_REQUEST_NULL).
    size_t kept = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      requests[kept] = requests[i];
      ops[kept] = ops[i];
      ++kept;
    }
    requests.resize(kept);
    ops.resize(kept);
    return true;
  }
};

MpiTransport::MpiTransport(const MpiWorld& world)
    : world_(world), state_(std::make_unique<State>()) {
  State& state = *state_;
  if (MPI_Comm_dup(world.comm(), &state.comm) != MPI_SUCCESS)
    throw std::runtime_error("MPI: MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(state.comm, MPI_ERRORS_RETURN);
  state.rank = world.rank();
  state.ranks = world.size();
  state.thread = std::thread([&state] { state.loop(); });
}

MpiTransport::~MpiTransport() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  state_->posted.notify_all();
  state_->thread.join();
  // After a failure, requests may be left that no peer will ever complete: the communicator
  // is then left to the process's end rather than freed.
  if (!state_->broken) MPI_Comm_free(&state_->comm);
}

void MpiTransport::begin_run(
    std::vector<Receive> receives,
    std::function<void(int rank, const std::string& what)> on_peer_failure) {
  std::lock_guard lock(state_->mutex);
  if (state_->broken)
    throw std::runtime_error("the ranks stopped after a failure: " + state_->broken_why);
  state_->in_run = true;
  state_->run_over = false;
  state_->on_peer_failure = std::move(on_peer_failure);
  state_->outstanding = static_cast<int>(receives.size());
  for (Receive& receive : receives) state_->new_receives.push_back(std::move(receive));
  state_->wake.notify_all();
}

void MpiTransport::send(int to, int tag, Tensor tensor) {
  if (!tensor.on_host()) throw std::runtime_error("MpiTransport sends host tensors only");
  std::unique_lock lock(state_->mutex);
  if (state_->run_over) return;  // the run failed: nothing more is sent
  ++state_->outstanding;
  state_->new_sends.push_back({to, tag, std::move(tensor)});
  const uint64_t ticket = ++state_->sends_handed;
  state_->wake.notify_all();
  // Waits for the MPI thread to post it (and poll once): where a rank's threads share a core,
  // a thread that went straight on to its next segment could hold the message back for a whole
  // scheduler slice, and a pipeline's stages would take turns instead of overlapping.
  state_->posted.wait(lock, [&] { return state_->sends_taken >= ticket || state_->stop; });
}

void MpiTransport::fail(const std::string& what) {
  std::unique_lock lock(state_->mutex);
  state_->failure_to_tell = what;
  state_->failure_told = false;
  state_->wake.notify_all();
  state_->settled.wait(lock, [&] { return state_->failure_told && state_->calling == 0; });
  state_->in_run = false;
  state_->on_peer_failure = nullptr;
}

void MpiTransport::end_run() {
  std::unique_lock lock(state_->mutex);
  state_->settled.wait(
      lock, [&] { return (state_->outstanding == 0 || state_->run_over) && state_->calling == 0; });
  state_->in_run = false;
  state_->on_peer_failure = nullptr;
}

}  // namespace tandem::distributed
