// `tandem calibrate --mpi`: the links between the ranks of an MPI job (one rank per host),
// measured and written as a link profile that a cluster file's links name (docs/CLUSTERS.md).
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "calibrate/host.h"
#include "cli/commands.h"
#include "devices/cluster.h"
#include "devices/link_profile.h"
#include "ir/error.h"
#include "report/json_schema.h"
#include "report/table.h"
#ifdef TANDEM_WITH_MPI
#include "distributed/mpi_link_calibration.h"
#include "distributed/mpi_world.h"
#include "distributed/rank_map.h"
#endif

namespace tandem::cli {
#ifdef TANDEM_WITH_MPI
namespace {

// "1.23 GB/s": decimal, as `tandem devices` shows links.
std::string rate(double bytes_per_second) {
  std::string text = si(bytes_per_second);
  if (std::isdigit(static_cast<unsigned char>(text.back()))) text += " ";
  return text + "B/s";
}

std::string percent(double ratio) { return format("%.0f%%", ratio * 100); }

std::string render(const LinkProfile& profile, const std::string& path, double seconds) {
  std::string text = "links between " + std::to_string(profile.ranks.size()) + " MPI ranks on " +
                     profile.machine + "\n" + profile.mpi + "; transport: " + profile.transport +
                     "\n\n";
  Table links({"link", "ranks", "latency", "bandwidth ->", "bandwidth <-", "model error"});
  for (const LinkProfile::Pair& pair : profile.pairs) {
    links.add_row({pair.from + " - " + pair.to, format("%d - %d", pair.from_rank, pair.to_rank),
                   seconds_text(pair.latency_seconds), rate(pair.bandwidth_forward),
                   rate(pair.bandwidth_backward), percent(pair.model_error)});
  }
  text += links.render();
  text +=
      "latency: one-way, half the smallest message's round trip; bandwidth: latency + bytes / "
      "bandwidth fitted to the messages of 64 KiB and more; model error: its worst miss "
      "over every size\n";
  for (const LinkProfile::Pair& pair : profile.pairs) {
    text += "\n" + pair.from + " <-> " + pair.to + " by message size (one-way, median; -> is " +
            pair.from + " to " + pair.to + ")\n";
    Table curve({"size", "time ->", "rate ->", "time <-", "rate <-", "runs"});
    for (const LinkProfile::Point& point : pair.curve) {
      curve.add_row(
          {human_bytes(point.bytes), seconds_text(point.forward_seconds),
           rate(point.bytes / point.forward_seconds), seconds_text(point.backward_seconds),
           rate(point.bytes / point.backward_seconds), std::to_string(point.repetitions)});
    }
    text += curve.render();
  }
  return text + format("\nwrote %s in %.1f s (%s)\n", path.c_str(), seconds,
                       profile.pairs_measured.c_str());
}

nlohmann::json to_json(const LinkProfile& profile, const std::string& path, bool quick,
                       double seconds) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const LinkProfile::Rank& rank : profile.ranks) {
    ranks.push_back({{"rank", rank.rank}, {"host", rank.host}, {"processor", rank.processor}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (const LinkProfile::Pair& pair : profile.pairs) {
    nlohmann::json curve = nlohmann::json::array();
    for (const LinkProfile::Point& point : pair.curve) {
      curve.push_back({{"bytes", static_cast<int64_t>(point.bytes)},
                       {"forward_s", point.forward_seconds},
                       {"backward_s", point.backward_seconds},
                       {"forward_bytes_per_s", point.bytes / point.forward_seconds},
                       {"backward_bytes_per_s", point.bytes / point.backward_seconds},
                       {"repetitions", point.repetitions}});
    }
    links.push_back({{"from", pair.from},
                     {"to", pair.to},
                     {"from_rank", pair.from_rank},
                     {"to_rank", pair.to_rank},
                     {"latency_s", pair.latency_seconds},
                     {"bandwidth_forward_bytes_per_s", pair.bandwidth_forward},
                     {"bandwidth_backward_bytes_per_s", pair.bandwidth_backward},
                     {"fit_bytes", static_cast<int64_t>(pair.fit_bytes)},
                     {"model_error", pair.model_error},
                     {"curve", curve}});
  }
  return {{"schema_version", kJsonSchemaVersion},
          {"profile", path},
          {"machine", profile.machine},
          {"mpi", profile.mpi},
          {"transport", profile.transport},
          {"pairs_measured", profile.pairs_measured},
          {"quick", quick},
          {"ranks", ranks},
          {"links", links},
          {"elapsed_s", seconds}};
}

// The host id each rank is named by: the cluster file's host it maps to (as `tandem run` maps
// ranks), the --rank-hosts given, or its processor name (made an id; ranks sharing a machine
// are told apart by their rank).
std::vector<std::string> host_names(const CalibrateOptions& options,
                                    const std::vector<std::string>& processors) {
  const size_t ranks = processors.size();
  std::vector<std::string> names;
  if (!options.cluster.empty()) {
    const Cluster cluster = load_cluster_hosts(options.cluster);
    const distributed::RankMap map =
        distributed::map_ranks(cluster, processors, options.rank_hosts, options.cluster);
    for (int host : map.host_of_rank) names.push_back(cluster.hosts[host].id);
    return names;
  }
  if (!options.rank_hosts.empty()) {
    if (options.rank_hosts.size() != ranks) {
      throw InputError("--rank-hosts", "it names " + std::to_string(options.rank_hosts.size()) +
                                           " hosts for " + std::to_string(ranks) + " ranks");
    }
    std::map<std::string, size_t> seen;
    for (size_t r = 0; r < ranks; ++r) {
      const std::string& id = options.rank_hosts[r];
      if (!valid_cluster_id(id)) {
        throw InputError("--rank-hosts",
                         "'" + id + "' is not a host id (letters, digits, '_', '-', '.')");
      }
      const auto [first, added] = seen.emplace(id, r);
      if (!added) {
        throw InputError("--rank-hosts", "host '" + id + "' is given to ranks " +
                                             std::to_string(first->second) + " and " +
                                             std::to_string(r));
      }
    }
    return options.rank_hosts;
  }
  std::map<std::string, int> sharing;
  for (std::string name : processors) {
    for (char& c : name) {
      if (!valid_cluster_id(std::string(1, c))) c = '-';
    }
    if (name.empty()) name = "host";
    names.push_back(name);
    ++sharing[name];
  }
  for (size_t r = 0; r < ranks; ++r) {
    if (sharing[names[r]] > 1) names[r] += "-rank" + std::to_string(r);
  }
  return names;
}

void check_output(const std::string& path) {
  const std::filesystem::path file(path);
  if (std::filesystem::is_directory(file)) {
    throw InputError(path, "cannot write the link profile: it is a folder");
  }
  const std::filesystem::path folder = file.parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    throw InputError(path, "cannot write the link profile: no folder " + folder.string());
  }
}

// Rank 0's InputError, as every rank learns of it: "subject\x1fmessage", or "" for none.
std::string failure_text(const InputError& error) {
  return error.subject() + '\x1f' + error.what();
}

// Every rank returns the same: kExitOk when `failure` is empty; else rank 0 throws the error
// for main to print and the others exit as quietly with its status.
int agree(const distributed::MpiWorld& world, const std::string& failure) {
  const std::string shared = world.broadcast(failure);
  if (shared.empty()) return kExitOk;
  if (world.rank() != 0) return kExitBadInput;
  const size_t split = shared.find('\x1f');
  throw InputError(shared.substr(0, split), shared.substr(split + 1));
}

}  // namespace
#endif

int calibrate_links_command(const CalibrateOptions& options) {
#ifndef TANDEM_WITH_MPI
  (void)options;
  throw InputError("--mpi",
                   "this tandem was built without MPI (CMake found no MPI library when the "
                   "build was configured): install Open MPI (scripts/setup.sh) and configure "
                   "the build again");
#else
  if (!distributed::launched_by_mpi()) {
    throw InputError("--mpi",
                     "start it under mpirun with 2 or more ranks, one per host: mpirun -np 2 "
                     "tandem calibrate --mpi");
  }
  const auto started = std::chrono::steady_clock::now();
  distributed::MpiWorld world;
  if (world.size() < 2) {
    throw InputError("--mpi",
                     "the job has one rank: start it under mpirun with 2 or more ranks, one per "
                     "host (mpirun -np 2 tandem calibrate --mpi)");
  }
  // Rank 0 alone reads the cluster file and checks the output: the other hosts need neither.
  std::string failure, names;
  if (world.rank() == 0) {
    try {
      check_output(options.output);
      for (const std::string& name : host_names(options, world.processor_names())) {
        names += name + "\n";
      }
    } catch (const InputError& error) {
      failure = failure_text(error);
    }
  }
  if (const int status = agree(world, failure); status != kExitOk) return status;
  distributed::LinkCalibrationOptions calibration;
  calibration.quick = options.quick;
  const std::string shared_names = world.broadcast(names);
  for (size_t at = 0; at < shared_names.size();) {
    const size_t end = shared_names.find('\n', at);
    calibration.host_of_rank.push_back(shared_names.substr(at, end - at));
    at = end + 1;
  }
  calibration.machine = calibrate::cpu_model_name() + ", " +
                        std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " CPUs";
  calibration.progress = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  if (world.rank() == 0) {
    std::fprintf(stderr, "calibrating the links between %d MPI ranks%s\n", world.size(),
                 options.quick ? ", quick" : "");
  }
  LinkProfile profile;
  try {
    profile = distributed::calibrate_links(world, calibration);
  } catch (const std::exception& error) {
    // A peer may be waiting on a message that never comes: end the job rather than hang.
    std::fprintf(stderr, "tandem: internal error: %s: %s\n", world.describe(world.rank()).c_str(),
                 error.what());
    world.abort(kExitInternal);
  }
  if (world.rank() == 0) {
    try {
      write_link_profile(options.output, profile);
    } catch (const InputError& error) {
      failure = failure_text(error);
    }
  }
  if (const int status = agree(world, failure); status != kExitOk) return status;
  if (world.rank() != 0) return kExitOk;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.json) {
    std::printf("%s\n", to_json(profile, options.output, options.quick, seconds).dump(2).c_str());
  } else {
    std::printf("%s", render(profile, options.output, seconds).c_str());
  }
  std::fflush(stdout);
  return kExitOk;
#endif
}

}  // namespace tandem::cli
