// Link profiles (docs/CLUSTERS.md, "Link profiles"): what `tandem calibrate --mpi` measured of
// the network between hosts, as YAML, read back with errors naming the file, line and field.
#include "devices/link_profile.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "devices/cluster.h"
#include "devices/units.h"
#include "devices/yaml_file.h"
#include "ir/error.h"

namespace tandem {
namespace {

constexpr const char* kFormat = "tandem-link-profile";
constexpr int kVersion = 1;

class LinkProfileReader {
 public:
  explicit LinkProfileReader(const YamlFile& file) : file_(file) {}

  LinkProfile read() {
    const YAML::Node& root = file_.root();
    if (!root.IsDefined() || root.IsNull()) file_.fail_at(0, "", "the file is empty");
    file_.expect_map(root, "");
    // The format first: another kind of file fails on what it is, not on its first key.
    if (!root["format"]) {
      file_.fail(root, "format",
                 std::string("missing: a link profile says format: ") + kFormat +
                     " (`tandem calibrate --mpi` writes one)");
    }
    const std::string format = file_.scalar(root["format"], "format");
    if (format != kFormat) {
      file_.fail(root["format"], "format",
                 "expected " + std::string(kFormat) + ", not '" + format + "'" +
                     (format == "tandem-profile"
                          ? " (a device profile: a device's profile: names it, not a link's)"
                          : ""));
    }
    file_.check_keys(root, "",
                     {"format", "version", "method", "machine", "mpi", "transport", "created",
                      "pairs_measured", "ranks", "links"});
    LinkProfile profile;
    if (!root["version"]) file_.fail(root, "version", "missing");
    profile.version = file_.integer(root["version"], "version", 0, 1000000);
    if (profile.version != kVersion) {
      file_.fail(root["version"], "version",
                 "version " + std::to_string(profile.version) +
                     " is not supported (this tandem reads version " + std::to_string(kVersion) +
                     ")");
    }
    for (auto [key, target] :
         {std::pair{"method", &profile.method}, std::pair{"machine", &profile.machine},
          std::pair{"mpi", &profile.mpi}, std::pair{"transport", &profile.transport},
          std::pair{"created", &profile.created},
          std::pair{"pairs_measured", &profile.pairs_measured}}) {
      if (root[key]) *target = file_.scalar(root[key], key);
    }
    if (root["ranks"]) read_ranks(root["ranks"], profile);
    if (!root["links"]) file_.fail(root, "links", "missing: list the links measured");
    read_links(root["links"], profile);
    return profile;
  }

 private:
  double number(const YAML::Node& node, const std::string& field, Quantity quantity,
                bool positive) const {
    std::string error;
    const auto value = parse_quantity(file_.scalar(node, field), quantity, error);
    if (!value) file_.fail(node, field, error);
    if (*value < 0 || (positive && *value == 0)) {
      file_.fail(node, field,
                 std::string("must be ") + (positive ? "positive" : "zero or positive") + ", not " +
                     node.Scalar());
    }
    return *value;
  }

  double required(const YAML::Node& map, const char* key, const std::string& field,
                  Quantity quantity) const {
    if (!map[key]) file_.fail(map, field, std::string("missing '") + key + "'");
    return number(map[key], field + "." + key, quantity, true);
  }

  std::string host(const YAML::Node& map, const char* key, const std::string& field) const {
    if (!map[key]) file_.fail(map, field, std::string("missing '") + key + "'");
    const std::string id = file_.scalar(map[key], field + "." + key);
    if (!valid_cluster_id(id)) {
      file_.fail(map[key], field + "." + key,
                 "'" + id + "' is not a host id (letters, digits, '_', '-', '.')");
    }
    return id;
  }

  void read_ranks(const YAML::Node& ranks, LinkProfile& profile) const {
    file_.expect_sequence(ranks, "ranks");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const std::string field = "ranks[" + std::to_string(i) + "]";
      file_.expect_map(ranks[i], field);
      file_.check_keys(ranks[i], field, {"rank", "host", "processor"});
      LinkProfile::Rank rank;
      if (!ranks[i]["rank"]) file_.fail(ranks[i], field, "missing 'rank'");
      rank.rank = file_.integer(ranks[i]["rank"], field + ".rank", 0, 1 << 24);
      rank.host = host(ranks[i], "host", field);
      if (ranks[i]["processor"]) {
        rank.processor = file_.scalar(ranks[i]["processor"], field + ".processor");
      }
      profile.ranks.push_back(rank);
    }
  }

  void read_links(const YAML::Node& links, LinkProfile& profile) const {
    file_.expect_sequence(links, "links");
    if (links.size() == 0) file_.fail(links, "links", "list at least one link");
    std::map<std::pair<std::string, std::string>, int> seen;  // host pair -> line
    for (size_t i = 0; i < links.size(); ++i) {
      const YAML::Node& node = links[i];
      const std::string field = "links[" + std::to_string(i) + "]";
      file_.expect_map(node, field);
      file_.check_keys(node, field,
                       {"from", "to", "ranks", "latency", "bandwidth_forward", "bandwidth_backward",
                        "fit_bytes", "model_error", "curve"});
      LinkProfile::Pair pair;
      pair.line = YamlFile::line(node);
      pair.from = host(node, "from", field);
      pair.to = host(node, "to", field);
      if (pair.from == pair.to) {
        file_.fail(node["to"], field + ".to", "a link joins two different hosts");
      }
      const auto [existing, added] = seen.emplace(std::minmax(pair.from, pair.to), pair.line);
      if (!added) {
        file_.fail(node, field,
                   "a second measurement between " + pair.from + " and " + pair.to +
                       " (first at line " + std::to_string(existing->second) + ")");
      }
      if (node["ranks"]) {
        const YAML::Node& ranks = node["ranks"];
        if (!ranks.IsSequence() || ranks.size() != 2) {
          file_.fail(ranks, field + ".ranks", "expected [from rank, to rank]");
        }
        pair.from_rank = file_.integer(ranks[0], field + ".ranks[0]", 0, 1 << 24);
        pair.to_rank = file_.integer(ranks[1], field + ".ranks[1]", 0, 1 << 24);
      }
      pair.latency_seconds = required(node, "latency", field, Quantity::kSeconds);
      pair.bandwidth_forward = required(node, "bandwidth_forward", field, Quantity::kBandwidth);
      pair.bandwidth_backward = required(node, "bandwidth_backward", field, Quantity::kBandwidth);
      if (node["fit_bytes"]) {
        pair.fit_bytes = number(node["fit_bytes"], field + ".fit_bytes", Quantity::kBytes, true);
      }
      if (node["model_error"]) {
        pair.model_error =
            number(node["model_error"], field + ".model_error", Quantity::kCount, false);
      }
      if (node["curve"]) read_curve(node["curve"], field + ".curve", pair);
      profile.pairs.push_back(std::move(pair));
    }
  }

  void read_curve(const YAML::Node& curve, const std::string& field,
                  LinkProfile::Pair& pair) const {
    file_.expect_sequence(curve, field);
    for (size_t i = 0; i < curve.size(); ++i) {
      const std::string where = field + "[" + std::to_string(i) + "]";
      file_.expect_map(curve[i], where);
      file_.check_keys(curve[i], where, {"bytes", "forward", "backward", "repetitions"});
      LinkProfile::Point point;
      point.bytes = required(curve[i], "bytes", where, Quantity::kBytes);
      point.forward_seconds = required(curve[i], "forward", where, Quantity::kSeconds);
      point.backward_seconds = required(curve[i], "backward", where, Quantity::kSeconds);
      if (curve[i]["repetitions"]) {
        point.repetitions =
            file_.integer(curve[i]["repetitions"], where + ".repetitions", 0, 1 << 30);
      }
      if (!pair.curve.empty() && point.bytes <= pair.curve.back().bytes) {
        file_.fail(curve[i]["bytes"], where + ".bytes",
                   "sizes go up: " + curve[i]["bytes"].Scalar() + " after " +
                       curve[i - 1]["bytes"].Scalar());
      }
      pair.curve.push_back(point);
    }
  }

  const YamlFile& file_;
};

// A number as the profile writes it: enough digits to read back what was measured.
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

const LinkProfile::Pair* LinkProfile::find(const std::string& a, const std::string& b,
                                           bool& reversed) const {
  for (const Pair& pair : pairs) {
    if (pair.from == a && pair.to == b) {
      reversed = false;
      return &pair;
    }
    if (pair.from == b && pair.to == a) {
      reversed = true;
      return &pair;
    }
  }
  return nullptr;
}

double fit_bandwidth(const std::vector<double>& bytes, const std::vector<double>& seconds,
                     double latency, double fit_from) {
  // t = latency + bytes * x; minimise sum(((latency + n x - t) / t)^2) over x = 1 / bandwidth:
  // x = sum(n (t - latency) / t^2) / sum(n^2 / t^2).
  double numerator = 0, denominator = 0;
  auto add = [&](size_t i) {
    if (!(seconds[i] > 0)) return;
    const double weight = 1 / (seconds[i] * seconds[i]);
    numerator += weight * bytes[i] * (seconds[i] - latency);
    denominator += weight * bytes[i] * bytes[i];
  };
  for (size_t i = 0; i < bytes.size() && i < seconds.size(); ++i) {
    if (bytes[i] >= fit_from) add(i);
  }
  if (denominator == 0 && !bytes.empty() && seconds.size() == bytes.size()) add(bytes.size() - 1);
  if (denominator == 0 || numerator <= 0) return 0;
  return denominator / numerator;
}

LinkProfile read_link_profile(const std::string& path) {
  const YamlFile file(path);
  try {
    return LinkProfileReader(file).read();
  } catch (const YAML::Exception& e) {
    file.fail_at(e.mark.is_null() ? 0 : e.mark.line + 1, "", e.msg);
  }
}

void write_link_profile(const std::string& path, const LinkProfile& profile) {
  YAML::Emitter out;
  out << YAML::Comment(
      "Tandem link profile, written by `tandem calibrate --mpi`. A cluster file's link between\n"
      "two hosts names it with `profile:` (docs/CLUSTERS.md). Plain numbers are in base units:\n"
      "seconds (one-way), bytes, bytes/s.");
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormat;
  out << YAML::Key << "version" << YAML::Value << profile.version;
  for (auto [key, text] :
       {std::pair{"method", &profile.method}, std::pair{"machine", &profile.machine},
        std::pair{"mpi", &profile.mpi}, std::pair{"transport", &profile.transport},
        std::pair{"created", &profile.created},
        std::pair{"pairs_measured", &profile.pairs_measured}}) {
    if (!text->empty()) out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << *text;
  }
  if (!profile.ranks.empty()) {
    out << YAML::Key << "ranks" << YAML::Value << YAML::BeginSeq;
    for (const LinkProfile::Rank& rank : profile.ranks) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "rank" << YAML::Value << rank.rank
          << YAML::Key << "host" << YAML::Value << rank.host;
      if (!rank.processor.empty()) {
        out << YAML::Key << "processor" << YAML::Value << YAML::DoubleQuoted << rank.processor;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
  for (const LinkProfile::Pair& pair : profile.pairs) {
    out << YAML::BeginMap;
    out << YAML::Key << "from" << YAML::Value << pair.from;
    out << YAML::Key << "to" << YAML::Value << pair.to;
    if (pair.from_rank >= 0 && pair.to_rank >= 0) {
      out << YAML::Key << "ranks" << YAML::Value << YAML::Flow << YAML::BeginSeq << pair.from_rank
          << pair.to_rank << YAML::EndSeq;
    }
    out << YAML::Key << "latency" << YAML::Value << number_text(pair.latency_seconds);
    out << YAML::Key << "bandwidth_forward" << YAML::Value << number_text(pair.bandwidth_forward);
    out << YAML::Key << "bandwidth_backward" << YAML::Value << number_text(pair.bandwidth_backward);
    if (pair.fit_bytes > 0) {
      out << YAML::Key << "fit_bytes" << YAML::Value << std::llround(pair.fit_bytes);
    }
    out << YAML::Key << "model_error" << YAML::Value << number_text(pair.model_error);
    if (!pair.curve.empty()) {
      out << YAML::Key << "curve" << YAML::Value << YAML::BeginSeq;
      for (const LinkProfile::Point& point : pair.curve) {
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "bytes" << YAML::Value
            << std::llround(point.bytes) << YAML::Key << "forward" << YAML::Value
            << number_text(point.forward_seconds) << YAML::Key << "backward" << YAML::Value
            << number_text(point.backward_seconds);
        if (point.repetitions > 0) {
          out << YAML::Key << "repetitions" << YAML::Value << point.repetitions;
        }
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  if (!out.good()) throw std::runtime_error("link profile: " + out.GetLastError());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw InputError(path, "cannot write the link profile");
  file << out.c_str() << "\n";
  if (!file.flush()) throw InputError(path, "cannot write the link profile");
}

}  // namespace tandem
