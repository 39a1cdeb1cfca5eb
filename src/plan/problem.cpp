#include "plan/problem.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "backends/registry.h"
#include "cost/memory_footprint.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "plan/evaluate.h"
#include "plan/plan.h"
#include "util/glob.h"

namespace tandem {
namespace {

// Probes of the cost model's transfer time: store-and-forward hops are latency + bytes /
// bandwidth each, so the time is affine in bytes and two probes give it exactly.
constexpr double kProbeBytes = 1 << 30;

std::string pin_text(const Pin& pin) { return "--pin " + pin.pattern + "=" + pin.device; }

std::string device_list(const Cluster& cluster) {
  std::string ids;
  for (const DeviceSpec& device : cluster.devices) ids += (ids.empty() ? "" : ", ") + device.id;
  return ids;
}

}  // namespace

std::string_view objective_name(Objective objective) {
  switch (objective) {
    case Objective::kLatency: return "latency";
    case Objective::kThroughput: return "throughput";
    case Objective::kCost: return "cost";
  }
  return "latency";
}

std::optional<Objective> objective_named(std::string_view name) {
  for (Objective objective : {Objective::kLatency, Objective::kThroughput, Objective::kCost}) {
    if (objective_name(objective) == name) return objective;
  }
  return std::nullopt;
}

PlanningProblem::PlanningProblem(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                 PlanOptions options)
    : graph_(&graph), cost_(cost), options_(std::move(options)) {
  (void)cluster;  // the cost model's cluster is the one costed (profiles applied)
  batch_refusal_ = options_.batch_unsplittable;
  if (batch_refusal_.empty() && options_.batch < 2)
    batch_refusal_ = "the batch is " + std::to_string(options_.batch) + " sample";
  if (!batch_splittable()) options_.microbatches = 1;
  options_.microbatches = static_cast<int>(
      std::min<int64_t>(std::max(options_.microbatches, 1), std::max<int64_t>(options_.batch, 1)));
  const int devices = device_count();
  const int nodes = static_cast<int>(graph.nodes.size());
  allowed_.assign(devices, true);
  for (const std::string& id : options_.excluded) {
    const int device = this->cluster().device_index(id);
    if (device < 0) {
      throw InputError("--exclude " + id, "no device '" + id + "' in the cluster (devices: " +
                                              device_list(this->cluster()) + ")");
    }
    allowed_[device] = false;
  }
  std::vector<int> pin_device(options_.pins.size());
  for (size_t i = 0; i < options_.pins.size(); ++i) {
    const Pin& pin = options_.pins[i];
    pin_device[i] = this->cluster().device_index(pin.device);
    if (pin_device[i] < 0) {
      throw InputError(pin_text(pin), "no device '" + pin.device + "' in the cluster (devices: " +
                                          device_list(this->cluster()) + ")");
    }
    if (!allowed_[pin_device[i]])
      throw InputError(pin_text(pin), "device '" + pin.device + "' is excluded (--exclude)");
  }

  // The last matching pin decides, so a specific pin may follow a broad one.
  std::vector<int> pinned(nodes, -1);
  std::vector<bool> pin_used(options_.pins.size(), false);
  for (int n = 0; n < nodes; ++n) {
    const Node& node = graph.nodes[n];
    for (size_t i = 0; i < options_.pins.size(); ++i) {
      const Pin& pin = options_.pins[i];
      if (!glob_matches(pin.pattern, node.name) && !glob_matches(pin.pattern, node.op_type))
        continue;
      pin_used[i] = true;
      pinned[n] = pin_device[i];
    }
    if (pinned[n] < 0) continue;
    const DeviceSpec& device = this->cluster().devices[pinned[n]];
    const std::string reason = cannot_run_reason(device, node, graph);
    if (!reason.empty()) {
      throw InputError("--pin", node.label() + " is pinned to " + device.id +
                                    ", which cannot run it: " + reason);
    }
  }
  for (size_t i = 0; i < options_.pins.size(); ++i) {
    if (!pin_used[i])
      throw InputError(pin_text(options_.pins[i]), "matches no node name or op type");
  }

  seconds_.assign(nodes, std::vector<double>(devices, kInfinity));
  twin_slot_.assign(devices, -1);
  int twins = 0;
  for (int d = 0; d < devices; ++d) {
    const int twin = cost_.cost_twin(d);
    twin_slot_[d] = twin == d ? twins++ : twin_slot_[twin];
  }
  parts_.assign(nodes, std::vector<OpParts>(twins));
  std::vector<double> twin_seconds(twins);  // per cost twin, this node
  for (int n = 0; n < nodes; ++n) {
    std::fill(twin_seconds.begin(), twin_seconds.end(), -1.0);
    for (int d = 0; d < devices; ++d) {
      if (!allowed_[d] || (pinned[n] >= 0 && pinned[n] != d)) continue;
      double& seconds = twin_seconds[twin_slot_[d]];
      if (seconds < 0) {
        const OpTime time = cost_.op_time(graph.nodes[n], graph, d);
        seconds = time.seconds;
        parts_[n][twin_slot_[d]] = {time.compute_seconds, time.memory_seconds, time.weight_seconds,
                                    time.main_memory_seconds};
      }
      seconds_[n][d] = seconds;
    }
  }

  // Edges, values and weights from what each node reads.
  successors_.assign(nodes, {});
  predecessors_.assign(nodes, {});
  values_out_.assign(nodes, {});
  weight_bytes_.assign(nodes, 0);
  output_bytes_.assign(nodes, 0);
  std::vector<int> slot_of_value(graph.values.size(), -1);  // index in its producer's values_out
  for (int n = 0; n < nodes; ++n) {
    for (int out : graph.nodes[n].outputs) {
      if (out < 0) continue;
      slot_of_value[out] = static_cast<int>(values_out_[n].size());
      values_out_[n].push_back({out, type_bytes(graph.values[out].type), {}});
      output_bytes_[n] += values_out_[n].back().bytes;
    }
  }
  for (int n = 0; n < nodes; ++n) {
    const std::vector<int> read = graph.values_read(graph.nodes[n]);
    const int node_index[] = {n};
    weight_bytes_[n] = weights_bytes(graph, node_index);
    for (int id : read) {
      const int producer = graph.values[id].producer;
      if (producer < 0 || producer >= n || slot_of_value[id] < 0) continue;
      OutputValue& value = values_out_[producer][slot_of_value[id]];
      value.readers.push_back(n);
      auto& edges = predecessors_[n];
      auto edge = std::find_if(edges.begin(), edges.end(),
                               [&](const auto& e) { return e.first == producer; });
      if (edge == edges.end()) {
        edges.push_back({producer, value.bytes});
      } else {
        edge->second += value.bytes;
      }
    }
    for (const auto& [producer, bytes] : predecessors_[n])
      successors_[producer].push_back({n, bytes});
  }
  graph_inputs_read_.assign(nodes, {});
  std::vector<char> is_input(graph.values.size(), 0);
  for (int id : graph.inputs) is_input[id] = 1;
  for (int n = 0; n < nodes; ++n) {
    for (int id : graph.values_read(graph.nodes[n])) {
      if (is_input[id]) graph_inputs_read_[n].push_back({id, type_bytes(graph.values[id].type)});
    }
  }
  final_output_bytes_.assign(nodes, 0);
  for (int id : graph.outputs) {
    const int producer = graph.values[id].producer;
    if (producer >= 0) final_output_bytes_[producer] += type_bytes(graph.values[id].type);
  }

  validate_runnable();
  build_memory_groups();
  build_transfers_and_paths();
  build_single_device_figures();
  bounds_ = lower_bounds(*this);
  bound_ = lower_bound(*this);
}

PlanningProblem::PlanningProblem(const Cluster& cluster, const CostModel& cost,
                                 std::vector<std::vector<double>> seconds,
                                 std::vector<std::vector<std::pair<int, double>>> successors,
                                 std::vector<double> weight_bytes, std::vector<double> output_bytes,
                                 PlanOptions options)
    : cost_(cost),
      options_(std::move(options)),
      seconds_(std::move(seconds)),
      successors_(std::move(successors)),
      weight_bytes_(std::move(weight_bytes)),
      output_bytes_(std::move(output_bytes)) {
  (void)cluster;
  const int devices = device_count();
  const int nodes = node_count();
  if (static_cast<int>(successors_.size()) != nodes ||
      static_cast<int>(weight_bytes_.size()) != nodes ||
      static_cast<int>(output_bytes_.size()) != nodes) {
    throw InputError("synthetic problem", "seconds, successors and bytes differ in node count");
  }
  allowed_.assign(devices, true);
  for (const std::string& id : options_.excluded) {
    const int device = this->cluster().device_index(id);
    if (device < 0) throw InputError("--exclude " + id, "no device '" + id + "' in the cluster");
    allowed_[device] = false;
  }
  predecessors_.assign(nodes, {});
  values_out_.assign(nodes, {});
  graph_inputs_read_.assign(nodes, {});
  final_output_bytes_.assign(nodes, 0);
  for (int n = 0; n < nodes; ++n) {
    if (successors_[n].empty()) final_output_bytes_[n] = output_bytes_[n];
    if (static_cast<int>(seconds_[n].size()) != devices)
      throw InputError("synthetic problem", "node " + std::to_string(n) + " has a wrong row");
    for (int d = 0; d < devices; ++d) {
      if (!allowed_[d]) seconds_[n][d] = kInfinity;
    }
    for (const auto& [successor, bytes] : successors_[n]) {
      if (successor <= n || successor >= nodes)
        throw InputError("synthetic problem", "edges must go to later nodes");
      predecessors_[successor].push_back({n, bytes});
      values_out_[n].push_back({-1, bytes, {successor}});
    }
  }
  validate_runnable();
  memory_group_.assign(devices, -1);  // synthetic problems have no op times to split
  device_cores_.assign(devices, 1);
  busy_host_cores_.assign(devices, 1);
  build_transfers_and_paths();
  build_single_device_figures();
  bounds_ = lower_bounds(*this);
  bound_ = lower_bound(*this);
}

void PlanningProblem::build_memory_groups() {
  const int devices = device_count();
  memory_group_.assign(devices, -1);
  memory_share_.assign(devices, 1);
  device_cores_.assign(devices, 0);
  host_cores_ = cores_used(DeviceSpec{});  // every core of the machine
  busy_host_cores_.assign(devices, 1);
  for (int d = 0; d < devices; ++d) {
    const DeviceSpec& device = cluster().devices[d];
    device_cores_[d] = cores_used(device);
    busy_host_cores_[d] = backend_of(device.backend).busy_host_cores(device, host_cores_);
  }
  std::vector<int> members;
  for (int d = 0; d < devices; ++d) {
    const DeviceSpec& device = cluster().devices[d];
    if (device.kind != DeviceKind::kCpu || memory_group_[d] >= 0) continue;
    members.clear();
    for (int other = d; other < devices; ++other) {
      const DeviceSpec& candidate = cluster().devices[other];
      if (candidate.kind == DeviceKind::kCpu && candidate.host == device.host)
        members.push_back(other);
    }
    if (members.size() < 2) continue;
    const double host = cost_.host_memory_bandwidth(device.host);
    for (int member : members) {
      memory_group_[member] = d;
      const double alone = cost_.main_memory_bandwidth(member);
      if (host > 0 && alone > 0) memory_share_[member] = alone / host;
    }
  }
}

double PlanningProblem::contended_seconds_for_share(int node, int device, double fraction,
                                                    Sharing sharing) const {
  const double seconds = seconds_for_share(node, device, fraction);
  if (sharing.devices <= 1 || memory_group_[device] < 0 || seconds == kInfinity || parts_.empty())
    return seconds;
  const OpParts& parts = parts_[node][twin_slot_[device]];
  const double share = std::min(fraction, 1.0);
  const double compute = parts.compute * share;
  const double memory = parts.weights + (parts.memory - parts.weights) * share;
  const double main_memory = parts.memory > 0 ? parts.main_memory * memory / parts.memory : 0;
  const double slowdown = std::max(1.0, sharing.devices * memory_share_[device]);
  const double contended = seconds + std::max(compute, memory + main_memory * (slowdown - 1)) -
                           std::max(compute, memory);
  return contended * std::max(1.0, static_cast<double>(sharing.cores) / host_cores_);
}

void PlanningProblem::validate_runnable() const {
  for (int n = 0; n < node_count(); ++n) {
    bool any = false;
    for (int d = 0; d < device_count() && !any; ++d) any = runnable(n, d);
    if (any) continue;
    if (!graph_) throw InputError("node " + std::to_string(n), "no allowed device can run it");
    const Node& node = graph_->nodes[n];
    std::string reasons;
    for (int d = 0; d < device_count(); ++d) {
      const DeviceSpec& device = cluster().devices[d];
      std::string reason = allowed_[d] ? cannot_run_reason(device, node, *graph_) : "excluded";
      if (reason.empty()) reason = "no figures to predict its time";
      reasons += (reasons.empty() ? "" : "; ") + device.id + ": " + reason;
    }
    throw InputError(node.label(), "no device can run it (" + reasons + ")");
  }
}

void PlanningProblem::build_transfers_and_paths() {
  const int devices = device_count();
  transfer_rows_.assign(devices, {});
  transfer_row_once_ = std::make_unique<std::once_flag[]>(devices);
  build_device_classes();
}

const PlanningProblem::TransferRow& PlanningProblem::transfer_row(int from) const {
  std::call_once(transfer_row_once_[from], [&] {
    const int devices = device_count();
    constexpr double kSizes[] = {0, kProbeBytes};
    std::vector<std::vector<double>> seconds = cost_.transfer_seconds_from(from, kSizes);
    TransferRow row;
    row.latency = std::move(seconds[0]);
    row.bandwidth.assign(devices, kInfinity);
    for (int to = 0; to < devices; ++to) {
      if (from == to) continue;
      const double latency = row.latency[to], large = seconds[1][to];
      row.bandwidth[to] = large < kInfinity ? kProbeBytes / (large - latency) : 0;
    }
    transfer_rows_[from] = std::move(row);
  });
  return transfer_rows_[from];
}

const std::vector<Cluster::Hop>& PlanningProblem::path(int from, int to) const {
  static const std::vector<Cluster::Hop> kNone;
  if (from == to) return kNone;
  const int64_t key = static_cast<int64_t>(from) * device_count() + to;
  std::lock_guard<std::mutex> lock(paths_mutex_);
  auto found = paths_.find(key);
  if (found == paths_.end()) found = paths_.emplace(key, cost_.router().path(from, to)).first;
  return found->second;
}

void PlanningProblem::build_device_classes() {
  const int devices = device_count();
  device_class_.assign(devices, 0);
  class_count_ = 0;
  auto same = [&](int a, int b) {
    const DeviceSpec& x = cluster().devices[a];
    const DeviceSpec& y = cluster().devices[b];
    if (x.kind != y.kind || allowed_[a] != allowed_[b] ||
        memory_capacity(a) != memory_capacity(b) || launch_overhead(a) != launch_overhead(b) ||
        x.figures.price_per_hour.value != y.figures.price_per_hour.value)
      return false;
    for (int n = 0; n < node_count(); ++n) {
      if (seconds_[n][a] != seconds_[n][b]) return false;
    }
    return true;
  };
  // Candidates by a hash of the column; equality decides.
  std::unordered_map<uint64_t, std::vector<int>> by_hash;
  for (int d = 0; d < devices; ++d) {
    uint64_t hash = static_cast<uint64_t>(cluster().devices[d].kind) + 1;
    for (int n = 0; n < node_count(); ++n) {
      const double seconds = seconds_[n][d];
      uint64_t bits = 0;
      std::memcpy(&bits, &seconds, sizeof bits);
      hash = (hash ^ bits) * 0x100000001b3ULL;
    }
    std::vector<int>& candidates = by_hash[hash];
    device_class_[d] = d;
    for (int first : candidates) {
      if (same(first, d)) {
        device_class_[d] = first;
        break;
      }
    }
    if (device_class_[d] == d) candidates.push_back(d), ++class_count_;
  }
}

void PlanningProblem::build_single_device_figures() {
  const int devices = device_count();
  single_seconds_.assign(devices, 0);
  single_memory_.assign(devices, 0);
  std::vector<int> all(node_count());
  for (int n = 0; n < node_count(); ++n) all[n] = n;
  const double memory = memory_use(all).total();
  std::map<std::string, int> hosts;  // host id -> index
  for (int d = 0; d < devices; ++d) {
    const Figure& run_overhead = cluster().devices[d].figures.run_overhead;
    run_overheads_.push_back(run_overhead.known() ? run_overhead.value : 0);
    const Figure& handoff = cluster().devices[d].figures.handoff_latency;
    handoff_latencies_.push_back(handoff.known() ? handoff.value : 0);
    const auto host = hosts.emplace(cluster().devices[d].host, static_cast<int>(hosts.size()));
    host_of_device_.push_back(host.first->second);
    HostCopies copies(*this);
    for (int n = 0; n < node_count(); ++n)
      single_seconds_[d] += seconds_[n][d] + copies.charge(n, d, 1);
    single_memory_[d] = memory;
    if (single_seconds_[d] < kInfinity && memory <= memory_capacity(d) &&
        (best_single_ < 0 || single_seconds_[d] < single_seconds_[best_single_])) {
      best_single_ = d;
    }
  }
  host_count_ = static_cast<int>(hosts.size());
}

double HostCopies::charge(int node, int device, double fraction, int piece) {
  double seconds = 0;
  const int devices = problem_.device_count();
  for (const auto& [value, bytes] : problem_.graph_inputs_read(node)) {
    const uint64_t key =
        (static_cast<uint64_t>(piece) * devices + device) * (uint64_t{1} << 32) + value;
    if (copied_.insert(key).second)
      seconds += problem_.host_copy_seconds(bytes * fraction, device, true);
  }
  // Graph outputs only: a synthetic problem's sinks are not the caller's.
  if (problem_.graph())
    seconds +=
        problem_.host_copy_seconds(problem_.final_output_bytes(node) * fraction, device, false);
  return seconds;
}

double PlanningProblem::memory_capacity(int device) const {
  const Figure& capacity = cluster().devices[device].figures.memory_bytes;
  return capacity.known() ? capacity.value : kInfinity;
}

double PlanningProblem::launch_overhead(int device) const {
  return cluster().devices[device].figures.launch_overhead.value;
}

double PlanningProblem::split_margin(const Plan& plan) const {
  double margin = options_.split_margin;
  for (const int device : plan.device_of_node)
    if (device >= 0) margin = std::max(margin, cost_.speed_drift(device));
  for (size_t device = 0; device < plan.batch_share.size(); ++device)
    if (plan.batch_share[device] > 0)
      margin = std::max(margin, cost_.speed_drift(static_cast<int>(device)));
  return margin;
}

double PlanningProblem::run_overhead(const Plan& plan) const {
  std::vector<char> used(device_count(), 0);
  std::vector<int> busy_on_host(host_count_, 0);  // cores the plan's devices keep busy
  double seconds = 0, wake = 0;
  int devices = 0, lone = -1;
  const auto use = [&](int device) {
    if (used[device]) return;
    used[device] = 1;
    ++devices;
    lone = device;
    seconds = std::max(seconds, run_overheads_[device]);
    wake = std::max(wake, handoff_latencies_[device]);
    busy_on_host[host_of_device_[device]] += busy_host_cores_[device];
  };
  for (const int device : plan.device_of_node)
    if (device >= 0) use(device);
  for (size_t device = 0; device < plan.batch_share.size(); ++device)
    if (plan.batch_share[device] > 0) use(static_cast<int>(device));
  const bool on_callers_thread = devices == 1 && busy_host_cores_[lone] >= host_cores_;
  if (on_callers_thread) return seconds;
  for (const int busy : busy_on_host)
    if (busy >= host_cores_) return seconds + wake;
  return seconds;
}

double PlanningProblem::segment_overhead(int device) const {
  const Figure& step = cluster().devices[device].figures.step_overhead;
  return step.known() ? step.value : 0;
}

double PlanningProblem::seconds_for_share(int node, int device, double fraction) const {
  const double seconds = seconds_[node][device];
  if (fraction >= 1 || seconds == kInfinity) return seconds;
  const double overhead = std::min(seconds, launch_overhead(device));
  const OpParts* parts = parts_.empty() ? nullptr : &parts_[node][twin_slot_[device]];
  const double alone = parts ? std::max(parts->compute, parts->memory) : 0;
  if (alone <= 0) return (seconds - overhead) * fraction + overhead;
  const double share = std::max(parts->compute * fraction,
                                parts->weights + (parts->memory - parts->weights) * fraction);
  return overhead + (seconds - overhead) * share / alone;
}

PlanningProblem::MemoryUse PlanningProblem::memory_use(std::span<const int> nodes_in_order) const {
  if (graph_) {
    return {weights_bytes(*graph_, nodes_in_order), peak_activation_bytes(*graph_, nodes_in_order)};
  }
  // Synthetic problems: each node's weights are its own; a node's output lives from its step to
  // its last reader here, and one step more when read elsewhere (while it is sent), to the end
  // when nothing reads it (a graph output); an input from another device lives from its first
  // reader to its last.
  const int steps = static_cast<int>(nodes_in_order.size());
  std::vector<int> step_of(node_count(), -1);
  for (int s = 0; s < steps; ++s) step_of[nodes_in_order[s]] = s;
  std::vector<double> delta(steps + 1, 0);
  double weights = 0;
  std::vector<int> first_read(node_count(), -1), last_read(node_count(), -1);
  std::vector<int> incoming;
  for (int s = 0; s < steps; ++s) {
    const int n = nodes_in_order[s];
    weights += weight_bytes_[n];
    int last = values_out_[n].empty() ? steps - 1 : s;
    for (const OutputValue& value : values_out_[n]) {
      for (int reader : value.readers)
        last = std::max(last, step_of[reader] >= 0 ? step_of[reader] : std::min(s + 1, steps - 1));
    }
    delta[s] += output_bytes_[n];
    delta[last + 1] -= output_bytes_[n];
    for (const auto& [producer, bytes] : predecessors_[n]) {
      if (step_of[producer] >= 0) continue;
      if (first_read[producer] < 0) first_read[producer] = s, incoming.push_back(producer);
      last_read[producer] = s;
    }
  }
  for (int producer : incoming) {
    delta[first_read[producer]] += output_bytes_[producer];
    delta[last_read[producer] + 1] -= output_bytes_[producer];
  }
  double live = 0, peak = 0;
  for (int s = 0; s < steps; ++s) {
    live += delta[s];
    peak = std::max(peak, live);
  }
  return {weights, peak};
}

}  // namespace tandem
