// `tandem calibrate --mpi`: ping-pong between MPI ranks over message sizes, written as a link
// profile (devices/link_profile.h).
#include "distributed/mpi_link_calibration.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "devices/units.h"
#include "util/statistics.h"

namespace tandem::distributed {
namespace {

constexpr int kTagOut = 11;      // the timed message, lower rank -> peer
constexpr int kTagAck = 12;      // the smallest message back
constexpr int kTagGo = 13;       // the smallest message, lower rank -> peer
constexpr int kTagBack = 14;     // the timed message, peer -> lower rank
constexpr int kTagControl = 15;  // how many exchanges come next; 0 = the pair is done
constexpr int kWarmups = 2;

// How long each size is timed for, and the bounds on its repetitions and on the whole.
struct Budget {
  double seconds_per_size;  // exchanges of one size, after the warm-up
  int min_repetitions, max_repetitions;
  double seconds_per_pair;  // past it the larger sizes are left out
};

Budget budget(bool quick, size_t pairs) {
  const double total = quick ? 2.0 : 8.0, floor = quick ? 0.25 : 1.0;
  const double per_pair = std::max(floor, total / static_cast<double>(std::max<size_t>(1, pairs)));
  return quick ? Budget{0.005, 3, 200, per_pair} : Budget{0.08, 5, 2000, per_pair};
}

// A barrier the waiting ranks sit in without spinning a core (Open MPI's blocking calls poll):
// on a machine with few cores the pair measuring keeps them.
void quiet_barrier(MPI_Comm comm) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    usleep(200);
  }
}

// The medians measured of one pair, by size; times are exchanges (out and back), in seconds.
struct SizeResult {
  size_t bytes = 0;
  double forward_exchange = 0;   // the message to the peer, the smallest back
  double backward_exchange = 0;  // the smallest to the peer, the message back
  int repetitions = 0;
};

std::string microseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

class PairTimer {
 public:
  PairTimer(MPI_Comm comm, int peer, std::vector<char>& buffer)
      : comm_(comm), peer_(peer), buffer_(buffer) {}

  // Times one exchange each way with `bytes` (the timing rank's side).
  std::pair<double, double> exchange(size_t bytes) {
    const int count = static_cast<int>(bytes);
    const int small = static_cast<int>(kSmallest);
    const double start = MPI_Wtime();
    check_mpi(MPI_Send(buffer_.data(), count, MPI_BYTE, peer_, kTagOut, comm_), "MPI_Send");
    check_mpi(MPI_Recv(small_, small, MPI_BYTE, peer_, kTagAck, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    const double middle = MPI_Wtime();
    check_mpi(MPI_Send(small_, small, MPI_BYTE, peer_, kTagGo, comm_), "MPI_Send");
    check_mpi(MPI_Recv(buffer_.data(), count, MPI_BYTE, peer_, kTagBack, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    const double end = MPI_Wtime();
    return {middle - start, end - middle};
  }

  // The peer's side of `exchange`.
  void answer(size_t bytes) {
    const int count = static_cast<int>(bytes);
    const int small = static_cast<int>(kSmallest);
    check_mpi(MPI_Recv(buffer_.data(), count, MPI_BYTE, peer_, kTagOut, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    check_mpi(MPI_Send(small_, small, MPI_BYTE, peer_, kTagAck, comm_), "MPI_Send");
    check_mpi(MPI_Recv(small_, small, MPI_BYTE, peer_, kTagGo, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    check_mpi(MPI_Send(buffer_.data(), count, MPI_BYTE, peer_, kTagBack, comm_), "MPI_Send");
  }

  void send_control(int exchanges) {
    check_mpi(MPI_Send(&exchanges, 1, MPI_INT, peer_, kTagControl, comm_), "MPI_Send");
  }
  int receive_control() {
    int exchanges = 0;
    check_mpi(MPI_Recv(&exchanges, 1, MPI_INT, peer_, kTagControl, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    return exchanges;
  }

  static constexpr size_t kSmallest = 8;

 private:
  MPI_Comm comm_;
  int peer_;
  std::vector<char>& buffer_;
  char small_[kSmallest] = {};
};

// The lower rank of a pair: every size in turn, while the pair's time lasts.
std::vector<SizeResult> time_pair(PairTimer& timer, const std::vector<size_t>& sizes,
                                  const Budget& limits, const std::string& name,
                                  const LinkCalibrationOptions& options) {
  std::vector<SizeResult> results;
  const double started = MPI_Wtime();
  double last_exchange = 0;  // of the previous size, both ways
  size_t last_bytes = 0;
  for (size_t bytes : sizes) {
    // The next size's warm-up and fewest repetitions, were its time to grow with its bytes.
    const double estimate = last_bytes == 0 ? 0
                                            : last_exchange * static_cast<double>(bytes) /
                                                  static_cast<double>(last_bytes) *
                                                  (kWarmups + limits.min_repetitions);
    if (!results.empty() && MPI_Wtime() - started + estimate > limits.seconds_per_pair) {
      if (options.progress) {
        char limit[32];
        std::snprintf(limit, sizeof limit, "%.2g s", limits.seconds_per_pair);
        options.progress("  " + name + ": sizes from " + human_bytes(static_cast<double>(bytes)) +
                         " left out (each pair has " + limit + ")");
      }
      break;
    }
    timer.send_control(kWarmups);
    double warm = 0;
    for (int w = 0; w < kWarmups; ++w) {
      const auto [forward, backward] = timer.exchange(bytes);
      warm = forward + backward;
    }
    const int repetitions =
        std::clamp(static_cast<int>(limits.seconds_per_size / std::max(warm, 1e-9)),
                   limits.min_repetitions, limits.max_repetitions);
    timer.send_control(repetitions);
    std::vector<double> forward(repetitions), backward(repetitions);
    for (int r = 0; r < repetitions; ++r) {
      std::tie(forward[r], backward[r]) = timer.exchange(bytes);
    }
    SizeResult result{bytes, median(forward), median(backward), repetitions};
    last_exchange = result.forward_exchange + result.backward_exchange;
    last_bytes = bytes;
    results.push_back(result);
    if (options.progress) {
      options.progress("  " + name + " " + human_bytes(static_cast<double>(bytes)) + ": exchange " +
                       microseconds(result.forward_exchange) + " ->, " +
                       microseconds(result.backward_exchange) + " <- (median of " +
                       std::to_string(repetitions) + ")");
    }
  }
  timer.send_control(0);
  return results;
}

// The peer's side: as many exchanges as the lower rank says, size after size, until it says 0.
void answer_pair(PairTimer& timer, const std::vector<size_t>& sizes) {
  for (size_t bytes : sizes) {
    int exchanges = timer.receive_control();
    if (exchanges == 0) return;
    for (int w = 0; w < exchanges; ++w) timer.answer(bytes);
    exchanges = timer.receive_control();
    for (int r = 0; r < exchanges; ++r) timer.answer(bytes);
  }
  timer.receive_control();  // the closing 0 after the last size
}

// A pair's one-way figures from its exchanges: the latency is half the smallest message's round
// trip; a message's one-way time is its exchange less the smallest message's way back.
LinkProfile::Pair summarize(int from_rank, int to_rank, const std::vector<SizeResult>& results,
                            const LinkCalibrationOptions& options) {
  LinkProfile::Pair pair;
  pair.from_rank = from_rank;
  pair.to_rank = to_rank;
  pair.from = options.host_of_rank[from_rank];
  pair.to = options.host_of_rank[to_rank];
  if (results.empty()) return pair;
  const double latency = (results[0].forward_exchange + results[0].backward_exchange) / 4;
  pair.latency_seconds = latency;
  std::vector<double> bytes, forward, backward;
  for (const SizeResult& result : results) {
    // Noise could take a tiny message's exchange under two latencies; a time stays positive.
    const double floor = latency * 1e-3;
    LinkProfile::Point point{
        static_cast<double>(result.bytes), std::max(floor, result.forward_exchange - latency),
        std::max(floor, result.backward_exchange - latency), result.repetitions};
    pair.curve.push_back(point);
    bytes.push_back(point.bytes);
    forward.push_back(point.forward_seconds);
    backward.push_back(point.backward_seconds);
  }
  constexpr double kFitFrom = 64 * 1024;  // beyond the eager protocols' sizes
  // The smallest size fitted: the first from kFitFrom, or the largest alone when none is.
  const auto first = std::lower_bound(bytes.begin(), bytes.end(), kFitFrom);
  pair.fit_bytes = first == bytes.end() ? bytes.back() : *first;
  pair.bandwidth_forward = fit_bandwidth(bytes, forward, latency, kFitFrom);
  pair.bandwidth_backward = fit_bandwidth(bytes, backward, latency, kFitFrom);
  // A link where no message took longer than the smallest: take the largest's rate.
  if (pair.bandwidth_forward <= 0) pair.bandwidth_forward = bytes.back() / forward.back();
  if (pair.bandwidth_backward <= 0) pair.bandwidth_backward = bytes.back() / backward.back();
  for (const LinkProfile::Point& point : pair.curve) {
    for (const auto& [seconds, bandwidth] :
         {std::pair{point.forward_seconds, pair.bandwidth_forward},
          std::pair{point.backward_seconds, pair.bandwidth_backward}}) {
      const double model = latency + point.bytes / bandwidth;
      pair.model_error = std::max(pair.model_error, std::abs(model - seconds) / seconds);
    }
  }
  return pair;
}

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, length);
  version = version.substr(0, version.find('\n'));
  const size_t package = version.find(", package:");
  return package == std::string::npos ? version : version.substr(0, package);
}

std::string transport() {
  const char* btl = std::getenv("OMPI_MCA_btl");
  const char* pml = std::getenv("OMPI_MCA_pml");
  std::string text;
  if (btl && *btl) text = std::string("btl ") + btl;
  if (pml && *pml) text += (text.empty() ? "pml " : ", pml ") + std::string(pml);
  return text.empty() ? "the MPI library's default choice (Open MPI: shared memory within a "
                        "host, TCP between hosts)"
                      : text + " (OMPI_MCA_*)";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// "1 host (all ranks on it: loopback): node (AMD EPYC, 2 CPUs)", or "2 hosts: a: node0 (...), ...".
std::string describe_machine(const std::vector<std::string>& processors,
                             const std::vector<std::string>& machines) {
  std::map<std::string, std::string> by_processor;
  std::vector<std::string> order;
  for (size_t r = 0; r < processors.size(); ++r) {
    if (by_processor.emplace(processors[r], machines[r]).second) order.push_back(processors[r]);
  }
  std::string text = std::to_string(order.size()) + (order.size() == 1 ? " host" : " hosts");
  if (order.size() == 1 && processors.size() > 1) text += " (every rank on it: loopback)";
  text += ": ";
  for (size_t i = 0; i < order.size(); ++i) {
    text += (i ? "; " : "") + order[i] + " (" + by_processor[order[i]] + ")";
  }
  return text;
}

}  // namespace

std::vector<size_t> link_message_sizes(bool quick) {
  std::vector<size_t> sizes;
  for (size_t bytes = 8; bytes <= (quick ? 8u << 20 : 32u << 20); bytes *= quick ? 16 : 4) {
    sizes.push_back(bytes);
  }
  if (!quick) sizes.push_back(64u << 20);
  return sizes;
}

LinkProfile calibrate_links(const MpiWorld& world, const LinkCalibrationOptions& options) {
  const int ranks = world.size();
  if (static_cast<int>(options.host_of_rank.size()) != ranks) {
    throw std::logic_error("calibrate_links: a host name per rank is needed");
  }
  MPI_Comm comm;
  check_mpi(MPI_Comm_dup(world.comm(), &comm), "MPI_Comm_dup");
  const bool every_pair = ranks <= 8;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < ranks; ++a) {
    for (int b = a + 1; b < ranks; ++b) {
      if (every_pair || a == 0) pairs.emplace_back(a, b);
    }
  }
  const std::vector<size_t> sizes = link_message_sizes(options.quick);
  const Budget limits = budget(options.quick, pairs.size());
  std::vector<char> buffer(sizes.back(), 1);  // written: its pages are mapped before any timing
  const std::vector<std::string> machines = world.gather(options.machine);

  // This rank's pairs, as JSON text for rank 0: [from, to, [[bytes, forward, backward, runs]]].
  nlohmann::json measured = nlohmann::json::array();
  for (const auto& [a, b] : pairs) {
    quiet_barrier(comm);
    if (world.rank() == a) {
      PairTimer timer(comm, b, buffer);
      const std::string name = options.host_of_rank[a] + " <-> " + options.host_of_rank[b];
      if (options.progress) {
        options.progress("measuring " + name + " (ranks " + std::to_string(a) + " and " +
                         std::to_string(b) + ")");
      }
      nlohmann::json points = nlohmann::json::array();
      for (const SizeResult& result : time_pair(timer, sizes, limits, name, options)) {
        points.push_back(
            {result.bytes, result.forward_exchange, result.backward_exchange, result.repetitions});
      }
      measured.push_back({a, b, points});
    } else if (world.rank() == b) {
      PairTimer timer(comm, a, buffer);
      answer_pair(timer, sizes);
    }
  }
  quiet_barrier(comm);
  MPI_Comm_free(&comm);
  const std::vector<std::string> texts = world.gather(measured.dump());
  if (world.rank() != 0) return {};

  LinkProfile profile;
  profile.method =
      "MPI ping-pong (MPI_Send, MPI_Recv) between ranks, one pair at a time: for each message "
      "size, " +
      std::to_string(kWarmups) +
      " warm-up exchanges, then the median of timed exchanges each way (the message out, " +
      std::to_string(PairTimer::kSmallest) +
      " B back); one-way time = exchange - latency, latency = half the median round trip of " +
      std::to_string(PairTimer::kSmallest) + " B" + (options.quick ? "; quick" : "");
  profile.machine = describe_machine(world.processor_names(), machines);
  profile.mpi = mpi_library();
  profile.transport = transport();
  profile.created = utc_now();
  profile.pairs_measured = every_pair ? "every pair of ranks" : "rank 0 with each other rank";
  for (int r = 0; r < ranks; ++r) {
    profile.ranks.push_back({r, options.host_of_rank[r], world.processor_names()[r]});
  }
  std::map<std::pair<int, int>, LinkProfile::Pair> by_ranks;
  for (const std::string& text : texts) {
    for (const nlohmann::json& item : nlohmann::json::parse(text)) {
      std::vector<SizeResult> results;
      for (const nlohmann::json& point : item[2]) {
        results.push_back({point[0].get<size_t>(), point[1].get<double>(), point[2].get<double>(),
                           point[3].get<int>()});
      }
      const int a = item[0].get<int>(), b = item[1].get<int>();
      by_ranks[{a, b}] = summarize(a, b, results, options);
    }
  }
  for (const auto& [a, b] : pairs) profile.pairs.push_back(by_ranks.at({a, b}));
  return profile;
}

}  // namespace tandem::distributed
