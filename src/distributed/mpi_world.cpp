#include "distributed/mpi_world.h"

#include <chrono>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace tandem::distributed {
void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string("MPI: ") + what + ": " + std::string(text, length));
}

MpiWorld::MpiWorld() {
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  // Errors come back as codes, so that they can be reported, instead of ending the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw std::runtime_error("MPI: this MPI library does not allow calls from several threads");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(name, &length);
  names_ = all_gather(std::string(name, length));
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

std::string MpiWorld::describe(int rank) const {
  const std::string host = rank >= 0 && rank < static_cast<int>(names_.size()) ? names_[rank] : "?";
  return "rank " + std::to_string(rank) + " (" + host + ")";
}

std::string MpiWorld::broadcast(const std::string& text, int root) const {
  long long length = rank_ == root ? static_cast<long long>(text.size()) : 0;
  check_mpi(MPI_Bcast(&length, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
  std::string result = rank_ == root ? text : std::string(static_cast<size_t>(length), '\0');
  check_mpi(MPI_Bcast(result.data(), static_cast<int>(length), MPI_CHAR, root, MPI_COMM_WORLD),
            "MPI_Bcast");
  return result;
}

std::vector<std::string> MpiWorld::gather(const std::string& text, int root) const {
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank_ == root ? size_ : 0);
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, MPI_COMM_WORLD),
            "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  int total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        MPI_CHAR, root, MPI_COMM_WORLD),
            "MPI_Gatherv");
  std::vector<std::string> texts;
  for (size_t r = 0; r < lengths.size(); ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

std::vector<std::string> MpiWorld::all_gather(const std::string& text) const {
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(size_);
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD),
            "MPI_Allgather");
  std::vector<int> offsets(size_);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                           offsets.data(), MPI_CHAR, MPI_COMM_WORLD),
            "MPI_Allgatherv");
  std::vector<std::string> texts;
  for (int r = 0; r < size_; ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

std::vector<double> MpiWorld::clock_offsets() const {
  constexpr int kExchanges = 16;
  const auto now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  std::vector<double> offsets(rank_ == 0 ? size_ : 0, 0.0);
  for (int r = 1; r < size_; ++r) {
    if (rank_ == 0) {
      double best_round_trip = std::numeric_limits<double>::infinity();
      for (int k = 0; k < kExchanges; ++k) {
        const double sent = now();
        double theirs = 0;
        MPI_Send(&sent, 1, MPI_DOUBLE, r, 0, MPI_COMM_WORLD);
        MPI_Recv(&theirs, 1, MPI_DOUBLE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double back = now();
        if (back - sent < best_round_trip) {
          best_round_trip = back - sent;
          offsets[r] = theirs - (sent + back) / 2;
        }
      }
    } else if (rank_ == r) {
      for (int k = 0; k < kExchanges; ++k) {
        double sent = 0;
        MPI_Recv(&sent, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double mine = now();
        MPI_Send(&mine, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
      }
    }
  }
  return offsets;
}

void MpiWorld::barrier() const { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void MpiWorld::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

}  // namespace tandem::distributed
