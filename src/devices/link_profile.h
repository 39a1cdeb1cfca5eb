#pragma once
#include <string>
#include <vector>

namespace tandem {

// What `tandem calibrate --mpi` measured of the network between hosts: one MPI rank per host,
// each pair of hosts ping-ponged over message sizes from bytes to tens of MiB. A cluster file's
// link between two hosts names it with `profile:` (docs/CLUSTERS.md, "Link profiles"); the
// link's latency and bandwidth each way then come from the measurement.
struct LinkProfile {
  int version = 1;
  std::string method;     // how it was measured, for people
  std::string machine;    // the hosts and their CPUs
  std::string mpi;        // the MPI library (MPI_Get_library_version's first line)
  std::string transport;  // what carried the messages: Open MPI's btl selection, or "default"
  std::string created;    // UTC time, ISO 8601
  struct Rank {
    int rank = 0;
    std::string host;       // the host id the profile names it by (a cluster's, or its processor)
    std::string processor;  // MPI_Get_processor_name
  };
  std::vector<Rank> ranks;
  // One-way time of a message of `bytes`, each way: the median exchange (that message out, the
  // smallest message back) less the smallest message's one-way latency.
  struct Point {
    double bytes = 0;
    double forward_seconds = 0;   // from -> to
    double backward_seconds = 0;  // to -> from
    int repetitions = 0;          // timed exchanges each way (0: not recorded)
  };
  struct Pair {
    std::string from, to;  // host ids
    int from_rank = -1, to_rank = -1;
    double latency_seconds = 0;  // one-way: half the median round trip of the smallest message
    // Bytes per second each way: 1/slope of latency + bytes / bandwidth fitted to the large
    // messages' one-way times (least relative squares, the latency held at its measured value).
    double bandwidth_forward = 0;
    double bandwidth_backward = 0;
    double fit_bytes = 0;      // the smallest message size the fit used
    double model_error = 0;    // largest |model - measured| / measured over every size (ratio)
    std::vector<Point> curve;  // ascending bytes
    int line = 0;              // where the file lists it (0 when not read from a file)
  };
  std::vector<Pair> pairs;
  std::string pairs_measured;  // "every pair of ranks", or "rank 0 with each other rank"

  // The pair between hosts a and b in either order, with `reversed` set when the profile lists
  // it as b -> a; null when not measured.
  const Pair* find(const std::string& a, const std::string& b, bool& reversed) const;
};

// The fitted bandwidth (bytes/s) of one-way times `seconds` of messages `bytes` (ascending, the
// same length), the latency held at `latency`: the least relative squares fit over the points of
// at least `fit_from` bytes (the largest point when none is that large). 0 when no point is
// slower than the latency.
double fit_bandwidth(const std::vector<double>& bytes, const std::vector<double>& seconds,
                     double latency, double fit_from);

// YAML files (a JSON file reads too), versioned; read_link_profile throws InputError (subject:
// the file) naming the line and field of anything it rejects.
LinkProfile read_link_profile(const std::string& path);
void write_link_profile(const std::string& path, const LinkProfile& profile);

}  // namespace tandem
