#include "plan/plan_json.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "ir/error.h"
#include "plan/sha256.h"

namespace tandem {
namespace {

constexpr const char* kFormat = "tandem-plan";

std::string node_name(const PlanningProblem& problem, int node) {
  return problem.graph() ? problem.graph()->nodes[node].name : "n" + std::to_string(node);
}

std::string value_name(const PlanningProblem& problem, int value) {
  return problem.graph() && value >= 0 ? problem.graph()->values[value].name : "";
}

const std::string& device_id(const PlanningProblem& problem, int device) {
  return problem.cluster().devices[device].id;
}

std::string link_name(const LinkSpec& link) { return link.from + "-" + link.to; }

// Per-device figures as an object keyed by device id.
nlohmann::json by_device(const PlanningProblem& problem, const std::vector<double>& values) {
  nlohmann::json json = nlohmann::json::object();
  for (size_t d = 0; d < values.size(); ++d)
    json[device_id(problem, static_cast<int>(d))] = values[d];
  return json;
}

// Bytes as a JSON integer: counts of bytes are whole, whatever arithmetic made them.
nlohmann::json whole_bytes(double bytes) { return static_cast<int64_t>(std::llround(bytes)); }

nlohmann::json bytes_by_device(const PlanningProblem& problem, const std::vector<double>& values) {
  nlohmann::json json = nlohmann::json::object();
  for (size_t d = 0; d < values.size(); ++d)
    json[device_id(problem, static_cast<int>(d))] = whole_bytes(values[d]);
  return json;
}

nlohmann::json source_json(const PlanSource& source) {
  return {
      {"path", source.path}, {"absolute_path", source.absolute_path}, {"sha256", source.sha256}};
}

// A bound that may be +infinity (no work) is null: JSON has no infinity.
nlohmann::json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

const char* bound_key(Objective objective) {
  switch (objective) {
    case Objective::kLatency: return "latency_s";
    case Objective::kThroughput: return "throughput_samples_per_s";
    case Objective::kCost: return "cost_per_million_samples_usd";
  }
  return "latency_s";
}

[[noreturn]] void fail_field(const std::string& file, const std::string& field,
                             const std::string& what) {
  throw InputError(file, "field '" + field + "': " + what);
}

// The format and version, before anything else is read.
void check_format(const nlohmann::json& json, const std::string& file) {
  // (json.value would throw nlohmann's type_error for a format that is not a string.)
  if (!json.is_object() || !json.contains("format") || json.at("format") != nlohmann::json(kFormat))
    fail_field(file, "format", std::string("expected \"") + kFormat + "\"");
  if (!json.contains("version")) fail_field(file, "version", "missing");
  const nlohmann::json& version = json.at("version");
  if (!version.is_number_integer()) fail_field(file, "version", "expected an integer");
  if (version.get<int64_t>() == 1)
    throw InputError(file,
                     "a version 1 plan, which does not record the model and cluster it was made "
                     "from: make it again with `tandem plan ... -o` (this is version " +
                         std::to_string(Plan::kFormatVersion) + ")");
  if (version.get<int64_t>() != Plan::kFormatVersion)
    fail_field(file, "version",
               "version " + version.dump() + " is not supported (this is " +
                   std::to_string(Plan::kFormatVersion) + ")");
}

// Reads fields with errors that name the file and the field.
class Reader {
 public:
  Reader(const PlanningProblem& problem, std::string file)
      : problem_(problem), file_(std::move(file)) {
    const auto& devices = problem.cluster().devices;
    device_index_.reserve(devices.size());
    for (size_t d = 0; d < devices.size(); ++d)
      device_index_.emplace(devices[d].id, static_cast<int>(d));
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(file_, "field '" + field + "': " + what);
  }
  const nlohmann::json& at(const nlohmann::json& json, const std::string& key,
                           const std::string& field) const {
    if (!json.is_object() || !json.contains(key)) fail(field, "missing");
    return json.at(key);
  }
  double number(const nlohmann::json& json, const std::string& field) const {
    if (!json.is_number()) fail(field, "expected a number");
    return json.get<double>();
  }
  int integer(const nlohmann::json& json, const std::string& field, int low, int high) const {
    if (!json.is_number_integer()) fail(field, "expected an integer");
    const int64_t value = json.get<int64_t>();
    if (value < low || value > high)
      fail(field, std::to_string(value) + " is outside " + std::to_string(low) + ".." +
                      std::to_string(high));
    return static_cast<int>(value);
  }
  std::string text(const nlohmann::json& json, const std::string& field) const {
    if (!json.is_string()) fail(field, "expected a string");
    return json.get<std::string>();
  }
  const nlohmann::json& array(const nlohmann::json& json, const std::string& field) const {
    if (!json.is_array()) fail(field, "expected an array");
    return json;
  }
  int device(const nlohmann::json& json, const std::string& field) const {
    const std::string id = text(json, field);
    const int index = device_index(id);
    if (index < 0) fail(field, "no device '" + id + "' in the cluster");
    return index;
  }
  int node(const nlohmann::json& json, const std::string& field) const {
    return integer(json, field, 0, problem_.node_count() - 1);
  }
  std::vector<double> per_device(const nlohmann::json& json, const std::string& field) const {
    if (!json.is_object()) fail(field, "expected an object keyed by device id");
    std::vector<double> values(problem_.device_count(), 0);
    for (const auto& [id, value] : json.items()) {
      const int index = device_index(id);
      if (index < 0) fail(field + "." + id, "no device '" + id + "' in the cluster");
      values[index] = number(value, field + "." + id);
    }
    return values;
  }

 private:
  int device_index(const std::string& id) const {  // the cluster's; -1 when unknown
    const auto found = device_index_.find(id);
    return found == device_index_.end() ? -1 : found->second;
  }

  const PlanningProblem& problem_;
  std::string file_;
  std::unordered_map<std::string, int> device_index_;
};

}  // namespace

std::string PlanSource::resolved() const {
  std::error_code error;
  return !absolute_path.empty() && std::filesystem::is_regular_file(absolute_path, error)
             ? absolute_path
             : path;
}

PlanSource plan_source(const std::string& path) {
  PlanSource source;
  source.path = path;
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  source.absolute_path = error ? path : absolute.lexically_normal().string();
  source.sha256 = sha256_of_file(path);
  return source;
}

std::vector<std::string> PlanProvenance::dim_arguments() const {
  std::vector<std::string> arguments;
  for (const auto& [name, size] : dims) arguments.push_back(name + "=" + std::to_string(size));
  return arguments;
}

std::vector<std::string> PlanProvenance::shape_arguments() const {
  std::vector<std::string> arguments;
  for (const auto& [name, shape] : shapes) {
    std::string text;
    for (int64_t dim : shape) text += (text.empty() ? "" : "x") + std::to_string(dim);
    arguments.push_back(name + "=" + text);
  }
  return arguments;
}

nlohmann::json plan_json(const Plan& plan, const PlanningProblem& problem,
                         const PlanProvenance& provenance) {
  const Cluster& cluster = problem.cluster();
  nlohmann::json json;
  json["format"] = kFormat;
  json["version"] = Plan::kFormatVersion;
  json["model"] = source_json(provenance.model);
  json["cluster"] = source_json(provenance.cluster);
  json["dims"] =
      provenance.dims.empty() ? nlohmann::json::object() : nlohmann::json(provenance.dims);
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& [name, shape] : provenance.shapes) shapes[name] = shape;
  json["shapes"] = shapes;
  json["fused"] = provenance.fused;
  json["cluster_view"] = provenance.whole_machine ? "whole machine" : "as given";
  json["strategy"] = plan.strategy;
  json["chosen"] = plan.chosen.empty() ? plan.strategy : plan.chosen;
  json["reason"] = plan.reason;
  json["objective"] = objective_name(plan.objective);
  json["batch"] = problem.options().batch;
  nlohmann::json inputs = nlohmann::json::object();
  if (const Graph* graph = problem.graph()) {
    for (int id : graph->inputs) inputs[graph->values[id].name] = graph->values[id].type.shape;
  }
  json["inputs"] = inputs;
  json["microbatches"] = plan.microbatches;
  if (plan.piece_order != PieceOrder::kPieceByPiece)
    json["piece_order"] = std::string(piece_order_name(plan.piece_order));
  nlohmann::json devices = nlohmann::json::array();
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    devices.push_back({{"id", cluster.devices[d].id},
                       {"kind", device_kind_name(cluster.devices[d].kind)},
                       {"figures", d < plan.figure_sources.size() ? plan.figure_sources[d] : ""}});
  }
  json["devices"] = devices;
  nlohmann::json nodes = nlohmann::json::array();
  for (int n = 0; n < problem.node_count(); ++n) {
    nlohmann::json node = {{"name", node_name(problem, n)},
                           {"device", device_id(problem, plan.device_of_node[n])},
                           {"op", problem.graph() ? problem.graph()->nodes[n].op_type : ""}};
    nodes.push_back(node);
  }
  json["nodes"] = nodes;
  json["order"] = plan.order;
  nlohmann::json segments = nlohmann::json::array();
  for (const Segment& segment : plan.segments)
    segments.push_back({{"device", device_id(problem, segment.device)}, {"nodes", segment.nodes}});
  json["segments"] = segments;
  nlohmann::json transfers = nlohmann::json::array();
  for (const Transfer& transfer : plan.transfers) {
    nlohmann::json path = nlohmann::json::array();
    for (const Cluster::Hop& hop : transfer.path) {
      path.push_back({{"link", hop.link},
                      {"name", link_name(cluster.links[hop.link])},
                      {"forward", hop.forward}});
    }
    transfers.push_back({{"value", value_name(problem, transfer.value)},
                         {"from_node", transfer.from_node},
                         {"to_node", transfer.to_node},
                         {"from", device_id(problem, transfer.from_device)},
                         {"to", device_id(problem, transfer.to_device)},
                         {"bytes", whole_bytes(transfer.bytes)},
                         {"time_s", transfer.seconds},
                         {"path", path}});
  }
  json["transfers"] = transfers;
  nlohmann::json stages = nlohmann::json::array();
  for (const Stage& stage : plan.stages) {
    stages.push_back({{"device", device_id(problem, stage.device)},
                      {"first", stage.first_node},
                      {"last", stage.last_node},
                      {"time_per_microbatch_s", stage.seconds}});
  }
  json["stages"] = stages;
  json["batch_share"] =
      plan.batch_share.empty() ? nlohmann::json::object() : by_device(problem, plan.batch_share);
  const Prediction& predicted = plan.predicted;
  nlohmann::json links = nlohmann::json::array();
  for (size_t l = 0; l < predicted.link_bytes.size(); ++l)
    links.push_back({{"link", l},
                     {"name", link_name(cluster.links[l])},
                     {"bytes", whole_bytes(predicted.link_bytes[l])}});
  json["predicted"] = {{"latency_s", predicted.latency_seconds},
                       {"throughput_samples_per_s", predicted.throughput_samples_per_second},
                       {"cost_per_million_samples_usd", predicted.cost_per_million_samples},
                       {"busy_s", by_device(problem, predicted.busy_seconds)},
                       {"memory_bytes", bytes_by_device(problem, predicted.memory_bytes)},
                       {"link_bytes", links}};
  const LowerBounds& bounds = problem.bounds();
  json["lower_bound"] = {
      {"latency_s", bounds.latency_seconds},
      {"throughput_samples_per_s", finite_or_null(bounds.throughput_samples_per_second)},
      {"cost_per_million_samples_usd", bounds.cost_per_million_samples}};
  json["efficiency"] = plan.efficiency;
  json["speedup_over_best_single"] = plan.speedup_over_best_single;
  return json;
}

void write_plan(const std::string& path, const Plan& plan, const PlanningProblem& problem,
                const PlanProvenance& provenance) {
  std::ofstream file(path);
  if (!file) throw InputError(path, "cannot write the plan file");
  file << plan_json(plan, problem, provenance).dump(2) << "\n";
  if (!file) throw InputError(path, "cannot write the plan file");
}

PlanProvenance plan_provenance(const nlohmann::json& json, const std::string& file) {
  check_format(json, file);
  const auto at = [&](const nlohmann::json& object, const std::string& key,
                      const std::string& field) -> const nlohmann::json& {
    if (!object.is_object() || !object.contains(key)) fail_field(file, field, "missing");
    return object.at(key);
  };
  const auto text = [&](const nlohmann::json& object, const std::string& key,
                        const std::string& field) {
    const nlohmann::json& value = at(object, key, field);
    if (!value.is_string()) fail_field(file, field, "expected a string");
    return value.get<std::string>();
  };
  const auto source = [&](const std::string& key) {
    const nlohmann::json& object = at(json, key, key);
    PlanSource read;
    read.path = text(object, "path", key + ".path");
    read.absolute_path = text(object, "absolute_path", key + ".absolute_path");
    read.sha256 = text(object, "sha256", key + ".sha256");
    if (read.path.empty()) fail_field(file, key + ".path", "empty");
    if (read.sha256.size() != 64 ||
        read.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
      fail_field(file, key + ".sha256", "expected 64 lowercase hex digits");
    return read;
  };
  // A size of a dimension, as --dim and --shape take it.
  const auto size = [&](const nlohmann::json& value, const std::string& field) {
    if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
        value.get<int64_t>() > (int64_t{1} << 40))
      fail_field(file, field, "expected a size from 1 to 2^40");
    return value.get<int64_t>();
  };
  PlanProvenance provenance;
  provenance.model = source("model");
  provenance.cluster = source("cluster");
  const nlohmann::json& dims = at(json, "dims", "dims");
  if (!dims.is_object()) fail_field(file, "dims", "expected an object of dimension sizes");
  for (const auto& [name, value] : dims.items())
    provenance.dims[name] = size(value, "dims." + name);
  const nlohmann::json& shapes = at(json, "shapes", "shapes");
  if (!shapes.is_object()) fail_field(file, "shapes", "expected an object of input shapes");
  for (const auto& [name, value] : shapes.items()) {
    if (!value.is_array()) fail_field(file, "shapes." + name, "expected a shape");
    Shape& shape = provenance.shapes[name];
    for (const nlohmann::json& dim : value) shape.push_back(size(dim, "shapes." + name));
  }
  const nlohmann::json& fused = at(json, "fused", "fused");
  if (!fused.is_boolean()) fail_field(file, "fused", "expected true or false");
  provenance.fused = fused.get<bool>();
  // Plans made before views existed were made on the cluster as given.
  if (json.contains("cluster_view")) {
    const nlohmann::json& view = json["cluster_view"];
    if (view != "as given" && view != "whole machine")
      fail_field(file, "cluster_view", "expected \"as given\" or \"whole machine\"");
    provenance.whole_machine = view == "whole machine";
  }
  return provenance;
}

Cluster cluster_as_planned(const std::string& cluster_file, const PlanProvenance& provenance,
                           const std::string& plan_file) {
  Cluster cluster = load_cluster(cluster_file);
  if (!provenance.whole_machine) return cluster;
  WholeMachineView view = whole_machine_view(cluster);
  if (!view.cluster)
    throw InputError(plan_file, "it was made on the machine as one device, and " + cluster_file +
                                    " has no such view" +
                                    (view.why_not.empty() ? "" : " (" + view.why_not + ")"));
  return std::move(*view.cluster);
}

void check_unchanged(const PlanSource& source, const std::string& what, const std::string& file) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(source.resolved(), error))
    throw InputError(file, "the " + what + " it was made from, " + source.path +
                               ", is not there any more (" + source.absolute_path + ")");
  const std::string now = sha256_of_file(source.resolved());
  if (now != source.sha256)
    throw InputError(file, "the " + what + " " + source.path +
                               " changed since the plan was made (sha256 " +
                               source.sha256.substr(0, 12) + "... then, " + now.substr(0, 12) +
                               "... now): make the plan again");
}

void check_provenance(const PlanProvenance& provenance, const std::string& file) {
  check_unchanged(provenance.model, "model", file);
  check_unchanged(provenance.cluster, "cluster", file);
}

Plan plan_from_json(const nlohmann::json& json, const PlanningProblem& problem,
                    const std::string& file) {
  check_format(json, file);
  const Reader read(problem, file);
  Plan plan;
  plan.strategy = read.text(read.at(json, "strategy", "strategy"), "strategy");
  // The file names the strategy itself as chosen where nothing chose among others.
  plan.chosen = read.text(read.at(json, "chosen", "chosen"), "chosen");
  if (plan.chosen == plan.strategy) plan.chosen.clear();
  plan.reason = read.text(read.at(json, "reason", "reason"), "reason");
  const std::string objective = read.text(read.at(json, "objective", "objective"), "objective");
  const std::optional<Objective> named = objective_named(objective);
  if (!named) read.fail("objective", "expected latency, throughput or cost");
  plan.objective = *named;
  plan.microbatches =
      read.integer(read.at(json, "microbatches", "microbatches"), "microbatches", 1, 1 << 30);
  if (json.contains("piece_order")) {
    const std::optional<PieceOrder> order =
        piece_order_named(read.text(json.at("piece_order"), "piece_order"));
    if (!order || *order == PieceOrder::kPieceByPiece)
      read.fail("piece_order", "expected gpipe or 1f1b");
    plan.piece_order = *order;
  }
  // The shapes it was made for: a plan's segments, shares and predictions hold for those only.
  if (const Graph* graph = problem.graph(); graph && json.contains("inputs")) {
    const nlohmann::json& inputs = json.at("inputs");
    for (int id : graph->inputs) {
      const Value& value = graph->values[id];
      const std::string field = "inputs." + value.name;
      if (!inputs.is_object() || !inputs.contains(value.name)) read.fail(field, "missing");
      const nlohmann::json& dims = inputs.at(value.name);
      Shape planned;
      if (!dims.is_array()) read.fail(field, "expected a shape");
      for (const nlohmann::json& dim : dims) {
        if (!dim.is_number_integer()) read.fail(field, "expected a shape");
        planned.push_back(dim.get<int64_t>());
      }
      if (planned != value.type.shape)
        read.fail(field, "the plan is for shape " + shape_str(planned) + ", this run's is " +
                             shape_str(value.type.shape) +
                             ": make a plan for these shapes (tandem plan with the same inputs)");
    }
  }

  const nlohmann::json& nodes = read.array(read.at(json, "nodes", "nodes"), "nodes");
  if (static_cast<int>(nodes.size()) != problem.node_count())
    read.fail("nodes", std::to_string(nodes.size()) + " nodes; the model has " +
                           std::to_string(problem.node_count()));
  for (int n = 0; n < problem.node_count(); ++n) {
    const std::string field = "nodes[" + std::to_string(n) + "]";
    const std::string name = read.text(read.at(nodes[n], "name", field + ".name"), field + ".name");
    if (name != node_name(problem, n))
      read.fail(field + ".name",
                "'" + name + "' where the model has '" + node_name(problem, n) + "'");
    plan.device_of_node.push_back(
        read.device(read.at(nodes[n], "device", field + ".device"), field + ".device"));
  }
  const nlohmann::json& order = read.array(read.at(json, "order", "order"), "order");
  std::vector<bool> seen(problem.node_count(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const int n = read.node(order[i], "order[" + std::to_string(i) + "]");
    if (seen[n]) read.fail("order", "node " + std::to_string(n) + " appears twice");
    seen[n] = true;
    plan.order.push_back(n);
  }
  if (static_cast<int>(plan.order.size()) != problem.node_count())
    read.fail("order", "must list every node once");

  const nlohmann::json& segments = read.array(read.at(json, "segments", "segments"), "segments");
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string field = "segments[" + std::to_string(s) + "]";
    Segment segment;
    segment.device =
        read.device(read.at(segments[s], "device", field + ".device"), field + ".device");
    const nlohmann::json& members =
        read.array(read.at(segments[s], "nodes", field + ".nodes"), field + ".nodes");
    for (size_t i = 0; i < members.size(); ++i)
      segment.nodes.push_back(read.node(members[i], field + ".nodes[" + std::to_string(i) + "]"));
    plan.segments.push_back(std::move(segment));
  }

  const int links = static_cast<int>(problem.cluster().links.size());
  const nlohmann::json& transfers =
      read.array(read.at(json, "transfers", "transfers"), "transfers");
  for (size_t t = 0; t < transfers.size(); ++t) {
    const std::string field = "transfers[" + std::to_string(t) + "]";
    const nlohmann::json& entry = transfers[t];
    Transfer transfer;
    const std::string value =
        read.text(read.at(entry, "value", field + ".value"), field + ".value");
    if (problem.graph() && !value.empty()) {
      transfer.value = problem.graph()->find_value(value);
      if (transfer.value < 0) read.fail(field + ".value", "no value '" + value + "' in the model");
    }
    transfer.from_node =
        read.node(read.at(entry, "from_node", field + ".from_node"), field + ".from_node");
    transfer.to_node = read.node(read.at(entry, "to_node", field + ".to_node"), field + ".to_node");
    transfer.from_device = read.device(read.at(entry, "from", field + ".from"), field + ".from");
    transfer.to_device = read.device(read.at(entry, "to", field + ".to"), field + ".to");
    transfer.bytes = read.number(read.at(entry, "bytes", field + ".bytes"), field + ".bytes");
    transfer.seconds = read.number(read.at(entry, "time_s", field + ".time_s"), field + ".time_s");
    const nlohmann::json& path =
        read.array(read.at(entry, "path", field + ".path"), field + ".path");
    for (size_t h = 0; h < path.size(); ++h) {
      const std::string hop_field = field + ".path[" + std::to_string(h) + "]";
      Cluster::Hop hop;
      hop.link = read.integer(read.at(path[h], "link", hop_field + ".link"), hop_field + ".link", 0,
                              links - 1);
      const nlohmann::json& forward = read.at(path[h], "forward", hop_field + ".forward");
      if (!forward.is_boolean()) read.fail(hop_field + ".forward", "expected true or false");
      hop.forward = forward.get<bool>();
      transfer.path.push_back(hop);
    }
    plan.transfers.push_back(std::move(transfer));
  }

  const nlohmann::json& stages = read.array(read.at(json, "stages", "stages"), "stages");
  for (size_t s = 0; s < stages.size(); ++s) {
    const std::string field = "stages[" + std::to_string(s) + "]";
    Stage stage;
    stage.device = read.device(read.at(stages[s], "device", field + ".device"), field + ".device");
    stage.first_node = read.node(read.at(stages[s], "first", field + ".first"), field + ".first");
    stage.last_node = read.node(read.at(stages[s], "last", field + ".last"), field + ".last");
    if (stage.last_node < stage.first_node) read.fail(field + ".last", "before its first node");
    const std::string time_field = field + ".time_per_microbatch_s";
    stage.seconds =
        read.number(read.at(stages[s], "time_per_microbatch_s", time_field), time_field);
    plan.stages.push_back(stage);
  }
  const nlohmann::json& shares = read.at(json, "batch_share", "batch_share");
  if (!shares.empty()) plan.batch_share = read.per_device(shares, "batch_share");

  const nlohmann::json& predicted = read.at(json, "predicted", "predicted");
  const auto figure = [&](const char* key) {
    return read.number(read.at(predicted, key, std::string("predicted.") + key),
                       std::string("predicted.") + key);
  };
  plan.predicted.latency_seconds = figure("latency_s");
  plan.predicted.throughput_samples_per_second = figure("throughput_samples_per_s");
  plan.predicted.cost_per_million_samples = figure("cost_per_million_samples_usd");
  plan.predicted.busy_seconds =
      read.per_device(read.at(predicted, "busy_s", "predicted.busy_s"), "predicted.busy_s");
  plan.predicted.memory_bytes = read.per_device(
      read.at(predicted, "memory_bytes", "predicted.memory_bytes"), "predicted.memory_bytes");
  plan.predicted.link_bytes.assign(links, 0);
  const nlohmann::json& link_bytes =
      read.array(read.at(predicted, "link_bytes", "predicted.link_bytes"), "predicted.link_bytes");
  for (size_t i = 0; i < link_bytes.size(); ++i) {
    const std::string field = "predicted.link_bytes[" + std::to_string(i) + "]";
    const int link = read.integer(read.at(link_bytes[i], "link", field + ".link"), field + ".link",
                                  0, links - 1);
    plan.predicted.link_bytes[link] =
        read.number(read.at(link_bytes[i], "bytes", field + ".bytes"), field + ".bytes");
  }
  // The objective's bound: the others are for scripts (and may be null).
  const std::string bound_field = std::string("lower_bound.") + bound_key(plan.objective);
  plan.lower_bound = read.number(
      read.at(read.at(json, "lower_bound", "lower_bound"), bound_key(plan.objective), bound_field),
      bound_field);
  plan.efficiency = read.number(read.at(json, "efficiency", "efficiency"), "efficiency");
  plan.speedup_over_best_single =
      read.number(read.at(json, "speedup_over_best_single", "speedup_over_best_single"),
                  "speedup_over_best_single");
  const nlohmann::json& devices = read.array(read.at(json, "devices", "devices"), "devices");
  if (static_cast<int>(devices.size()) != problem.device_count())
    read.fail("devices", std::to_string(devices.size()) + " devices; the cluster has " +
                             std::to_string(problem.device_count()));
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::string field = "devices[" + std::to_string(d) + "]";
    if (read.device(read.at(devices[d], "id", field + ".id"), field + ".id") != static_cast<int>(d))
      read.fail(field + ".id", "devices must be listed in the cluster's order");
    plan.figure_sources.push_back(
        read.text(read.at(devices[d], "figures", field + ".figures"), field + ".figures"));
  }
  return plan;
}

nlohmann::json read_plan_document(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw InputError(path, "is a directory, not a plan file");
  std::ifstream file(path);
  if (!file) throw InputError(path, "cannot open the plan file");
  try {
    return nlohmann::json::parse(file);
  } catch (const nlohmann::json::parse_error& e) {
    if (path.ends_with(".onnx"))
      throw InputError(path,
                       "is an ONNX model, not a plan file (tandem plan MODEL --cluster "
                       "FILE -o plan.json writes one)");
    throw InputError(path, "not a plan file (tandem plan -o writes one): not JSON (at byte " +
                               std::to_string(e.byte) + ")");
  } catch (const nlohmann::json::exception&) {  // nlohmann's out_of_range
    throw InputError(path,
                     "not a plan file: not JSON that a double can hold (a number beyond "
                     "1.8e308)");
  }
}

Plan read_plan(const std::string& path, const PlanningProblem& problem) {
  return plan_from_json(read_plan_document(path), problem, path);
}

PlanOptions plan_options_of(const nlohmann::json& plan, const BatchSplit& split,
                            const std::string& file) {
  // Fields of the wrong type are named here; plan_from_json checks the rest.
  for (const char* key : {"objective", "batch", "microbatches"}) {
    if (!plan.is_object() || !plan.contains(key)) continue;
    const bool text = std::string_view(key) == "objective";
    if (text ? !plan[key].is_string() : !plan[key].is_number_integer())
      throw InputError(
          file, std::string("field '") + key + "': expected " + (text ? "a string" : "an integer"));
  }
  PlanOptions options;
  options.objective =
      objective_named(plan.value("objective", "latency")).value_or(Objective::kLatency);
  options.batch = split.batch;
  options.batch_unsplittable = split.refusal;
  const int64_t planned = plan.value("batch", options.batch);
  if (planned != options.batch)
    throw InputError(file,
                     "the plan is for batch " + std::to_string(planned) +
                         ", the model as bound has batch " + std::to_string(options.batch) +
                         " (bind it as the plan was made: --dim, or load(dims=...) in Python)");
  options.microbatches = plan.value("microbatches", 1);
  return options;
}

}  // namespace tandem
