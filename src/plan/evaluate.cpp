// The planner's schedule evaluator (docs/PLAN_FORMAT.md, "How predictions are made"):
//   - list scheduling in plan.order: a device runs one node at a time, in that order; a node
//     starts when its device is free and its inputs have arrived;
//   - a value crosses once to every other device its readers are on, as soon as its producer
//     finishes; transfers between one pair of devices take its bandwidth one at a time, in the
//     order issued, their latencies overlapping;
//   - the graph's inputs are in the caller's host memory at time 0: a device that keeps its own
//     memory (a GPU, a PJRT device) copies each in over its host link when its first reader
//     there starts, and each output it makes back out, in its own time (HostCopies); a device
//     computing in host memory reads them where they are;
//   - pipeline plans (stages): micro-batches flow through the stages; data-parallel plans
//     (batch_share): each device runs the whole graph on its share of the batch.
#include "plan/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "ir/error.h"

namespace tandem {
namespace {

// Activations of a pipeline stage in flight at once: the micro-batch being computed and the one
// whose outputs wait to leave.
constexpr int kMicrobatchesInFlight = 2;
// Up to this many devices, figures per device pair are a dense table; beyond, a hash of the
// pairs a plan uses (a cluster of thousands of devices has millions of pairs, a plan few).
constexpr int kDensePairDevices = 256;

// A figure per ordered device pair, 0 until set.
class PairTable {
 public:
  explicit PairTable(int devices) : devices_(devices) {
    if (devices_ <= kDensePairDevices) dense_.assign(static_cast<size_t>(devices) * devices, 0);
  }
  double& operator[](std::pair<int, int> pair) {
    const int64_t key = static_cast<int64_t>(pair.first) * devices_ + pair.second;
    return dense_.empty() ? sparse_[key] : dense_[key];
  }
  double largest() const {
    double most = 0;
    for (double value : dense_) most = std::max(most, value);
    for (const auto& [key, value] : sparse_) most = std::max(most, value);
    return most;
  }

 private:
  int devices_;
  std::vector<double> dense_;
  std::unordered_map<int64_t, double> sparse_;
};

void check_shape(const PlanningProblem& problem, Plan& plan) {
  const int nodes = problem.node_count();
  if (static_cast<int>(plan.device_of_node.size()) != nodes)
    throw InputError("plan", "device_of_node has " + std::to_string(plan.device_of_node.size()) +
                                 " entries for " + std::to_string(nodes) + " nodes");
  for (int device : plan.device_of_node) {
    if (device < 0 || device >= problem.device_count())
      throw InputError("plan", "device index " + std::to_string(device) + " out of range");
  }
  if (plan.order.empty()) {
    plan.order.resize(nodes);
    for (int n = 0; n < nodes; ++n) plan.order[n] = n;
  }
  if (static_cast<int>(plan.order.size()) != nodes)
    throw InputError("plan", "order has " + std::to_string(plan.order.size()) + " entries for " +
                                 std::to_string(nodes) + " nodes");
  plan.microbatches = std::max(plan.microbatches, 1);
}

std::vector<int> positions(const std::vector<int>& order) {
  std::vector<int> position(order.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const int n = order[i];
    if (n < 0 || n >= static_cast<int>(order.size()) || position[n] >= 0)
      throw InputError("plan", "order is not a permutation of the nodes");
    position[n] = static_cast<int>(i);
  }
  return position;
}

// Pipeline plans: every node of a stage runs on the stage's device.
void apply_stages(const PlanningProblem& problem, Plan& plan) {
  for (const Stage& stage : plan.stages) {
    if (stage.first_node < 0 || stage.last_node >= problem.node_count() ||
        stage.first_node > stage.last_node || stage.device < 0 ||
        stage.device >= problem.device_count())
      throw InputError("plan", "a stage's range or device is out of bounds");
    for (int i = stage.first_node; i <= stage.last_node; ++i)
      plan.device_of_node[plan.order[i]] = stage.device;
  }
}

// Segments: walking the order, a node joins the segment of a same-device predecessor when every
// other predecessor comes before that segment began (so nothing leaves the segment and comes
// back: a backend can run it as a unit); otherwise it opens a new one. Conservative: a segment
// may be split where a finer test would merge it.
std::vector<Segment> find_segments(const PlanningProblem& problem, const Plan& plan,
                                   const std::vector<int>& position) {
  const std::vector<int>& phases = problem.options().node_phase;
  const bool phased = static_cast<int>(phases.size()) == problem.node_count();
  const auto phase_of = [&](int n) { return phased ? phases[n] : 0; };
  std::vector<Segment> segments;
  std::vector<int> first_position, segment_phase;
  std::vector<int> segment_of(problem.node_count(), -1);
  std::map<std::pair<int, int>, int> latest_on;  // (device, phase) -> its latest segment
  for (int n : plan.order) {
    const int device = plan.device_of_node[n];
    const int phase = phase_of(n);
    // Whether n may join `candidate` and leave it convex: every other predecessor of n lies in
    // it or comes before it began.
    const auto convex = [&](int candidate) {
      for (const auto& [other, other_bytes] : problem.predecessors(n)) {
        if (segment_of[other] != candidate && position[other] > first_position[candidate])
          return false;
      }
      return true;
    };
    int chosen = -1;
    for (const auto& [candidate_node, bytes] : problem.predecessors(n)) {
      const int candidate = segment_of[candidate_node];
      if (plan.device_of_node[candidate_node] != device || candidate == chosen ||
          segment_phase[candidate] != phase)
        continue;
      if (convex(candidate)) {
        chosen = candidate;
        break;
      }
    }
    const auto latest = latest_on.find({device, phase});
    // A node reading nothing from other nodes can join its device's latest segment: no path
    // leads into it, so it cannot close a path that leaves the segment and comes back. With
    // phases, so can any node that keeps that segment convex.
    if (chosen < 0 && latest != latest_on.end() &&
        (problem.predecessors(n).empty() || (phased && convex(latest->second))))
      chosen = latest->second;
    if (chosen < 0) {
      chosen = static_cast<int>(segments.size());
      segments.push_back({device, {}});
      first_position.push_back(position[n]);
      segment_phase.push_back(phase);
    }
    segments[chosen].nodes.push_back(n);
    segment_of[n] = chosen;
    latest_on[{device, phase}] = chosen;
  }
  return segments;
}

// Distinct devices other than `own` that a value's readers are on, with the first reader there.
std::vector<std::pair<int, int>> reader_devices(const PlanningProblem::OutputValue& value,
                                                const Plan& plan, const std::vector<int>& position,
                                                int own) {
  std::vector<std::pair<int, int>> devices;  // device, first reader
  for (int reader : value.readers) {
    const int device = plan.device_of_node[reader];
    if (device == own) continue;
    auto it = std::find_if(devices.begin(), devices.end(),
                           [&](const auto& entry) { return entry.first == device; });
    if (it == devices.end()) {
      devices.push_back({device, reader});
    } else if (position[reader] < position[it->second]) {
      it->second = reader;
    }
  }
  return devices;
}

Transfer make_transfer(const PlanningProblem& problem, const PlanningProblem::OutputValue& value,
                       int from_node, int to_node, int from_device, int to_device, double bytes,
                       double seconds) {
  Transfer transfer;
  transfer.value = value.value;
  transfer.from_node = from_node;
  transfer.to_node = to_node;
  transfer.from_device = from_device;
  transfer.to_device = to_device;
  transfer.bytes = bytes;
  transfer.path = problem.path(from_device, to_device);
  transfer.seconds = seconds;
  return transfer;
}

// The devices of `device`'s memory group computing at `time` (itself included), as far as
// the schedule so far says: those whose last node ends after it.
PlanningProblem::Sharing busy_sharing(const PlanningProblem& problem,
                                      const std::vector<double>& device_free, int device,
                                      double time) {
  PlanningProblem::Sharing sharing{1, problem.device_cores(device)};
  const int group = problem.memory_group(device);
  if (group < 0) return sharing;
  for (int other = group; other < problem.device_count(); ++other) {
    if (other != device && problem.memory_group(other) == group && device_free[other] > time) {
      ++sharing.devices;
      sharing.cores += problem.device_cores(other);
    }
  }
  return sharing;
}

// List scheduling of a plan without stages or batch shares, its segments found.
void schedule(const PlanningProblem& problem, Plan& plan, const std::vector<int>& position) {
  const int devices = problem.device_count();
  const std::vector<char> starts = segment_starts(plan, position);
  std::vector<double> device_free(devices, 0);
  PairTable link_free(devices);
  std::vector<double> inputs_ready(problem.node_count(), 0);
  HostCopies host_copies(problem);
  Prediction& predicted = plan.predicted;
  for (int n : plan.order) {
    const int device = plan.device_of_node[n];
    const double start = std::max(device_free[device], inputs_ready[n]);
    const double seconds = problem.contended_seconds_for_share(
                               n, device, 1, busy_sharing(problem, device_free, device, start)) +
                           (starts[n] ? problem.segment_overhead(device) : 0) +
                           host_copies.charge(n, device, 1);
    const double finish = start + seconds;
    device_free[device] = finish;
    predicted.busy_seconds[device] += seconds;
    predicted.latency_seconds = std::max(predicted.latency_seconds, finish);
    for (const PlanningProblem::OutputValue& value : problem.values_out(n)) {
      for (int reader : value.readers) {
        if (plan.device_of_node[reader] == device)
          inputs_ready[reader] = std::max(inputs_ready[reader], finish);
      }
      for (const auto& [to, first_reader] : reader_devices(value, plan, position, device)) {
        // A pair's transfers take its bandwidth one at a time; their latencies overlap (the
        // link is free again once the bytes are on the wire), as the simulator has it.
        double& free = link_free[{device, to}];
        const double transfer_seconds = problem.transfer_seconds(value.bytes, device, to);
        const double start = std::max(finish, free);
        const double arrival = start + transfer_seconds;
        free = start + transfer_seconds - problem.transfer_seconds(0, device, to);
        for (int reader : value.readers) {
          if (plan.device_of_node[reader] == to)
            inputs_ready[reader] = std::max(inputs_ready[reader], arrival);
        }
        plan.transfers.push_back(make_transfer(problem, value, n, first_reader, device, to,
                                               value.bytes, transfer_seconds));
      }
    }
  }
  predicted.throughput_samples_per_second =
      static_cast<double>(problem.options().batch) / predicted.latency_seconds;
}

// Pipeline: each micro-batch (batch / M samples) passes every stage in turn; a device holding
// several stages runs them one after another, a pair of devices carries one transfer at a time.
// Steady state is set by the busiest device or device pair; latency = the first micro-batch
// through every stage and transfer, then M - 1 more at the steady-state interval.
void schedule_pipeline(const PlanningProblem& problem, Plan& plan,
                       const std::vector<int>& position) {
  const int devices = problem.device_count();
  const int microbatches = plan.microbatches;
  const double fraction = 1.0 / microbatches;
  std::vector<int> stage_of(problem.node_count(), -1);
  std::vector<double> device_seconds(devices, 0);  // per micro-batch
  double fill = 0;
  HostCopies host_copies(problem);  // one micro-batch's
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    Stage& stage = plan.stages[s];
    stage.seconds = 0;
    const PlanningProblem::Sharing sharing = steady_sharing(problem, plan, stage.device);
    for (int i = stage.first_node; i <= stage.last_node; ++i) {
      stage_of[plan.order[i]] = static_cast<int>(s);
      stage.seconds +=
          problem.contended_seconds_for_share(plan.order[i], stage.device, fraction, sharing) +
          host_copies.charge(plan.order[i], stage.device, fraction);
    }
    device_seconds[stage.device] += stage.seconds;
    fill += stage.seconds;
  }
  for (int n = 0; n < problem.node_count(); ++n) {
    if (stage_of[n] < 0) throw InputError("plan", "the stages do not cover every node");
  }
  // Each segment's run (stages next to each other on one device share one) pays its program
  // step once per micro-batch.
  const std::vector<char> starts = segment_starts(plan, position);
  for (const Segment& segment : plan.segments) {
    const double step = problem.segment_overhead(segment.device);
    const auto first =
        std::find_if(segment.nodes.begin(), segment.nodes.end(), [&](int n) { return starts[n]; });
    if (first == segment.nodes.end()) continue;
    plan.stages[stage_of[*first]].seconds += step;
    device_seconds[segment.device] += step;
    fill += step;
  }
  PairTable pair_seconds(devices);  // per micro-batch
  for (int n : plan.order) {
    const int device = plan.device_of_node[n];
    for (const PlanningProblem::OutputValue& value : problem.values_out(n)) {
      for (const auto& [to, first_reader] : reader_devices(value, plan, position, device)) {
        const double seconds = problem.transfer_seconds(value.bytes * fraction, device, to);
        // The pair's bandwidth is taken for the bytes only; latencies overlap (as in schedule).
        pair_seconds[{device, to}] += seconds - problem.transfer_seconds(0, device, to);
        fill += seconds;
        plan.transfers.push_back(make_transfer(problem, value, n, first_reader, device, to,
                                               value.bytes, seconds * microbatches));
      }
    }
  }
  double interval = 0;
  for (double seconds : device_seconds) interval = std::max(interval, seconds);
  interval = std::max(interval, pair_seconds.largest());
  Prediction& predicted = plan.predicted;
  for (int d = 0; d < devices; ++d) predicted.busy_seconds[d] = device_seconds[d] * microbatches;
  predicted.latency_seconds = fill + (microbatches - 1) * interval;
  predicted.throughput_samples_per_second =
      static_cast<double>(problem.options().batch) * fraction / interval;
}

// Data parallel: every device with a share runs the whole graph on it, all at once (each its
// segment: evaluate_plan adds them). Devices of one class (PlanningProblem::device_class) with
// the same share take the same time: it is summed once for them.
void schedule_data_parallel(const PlanningProblem& problem, Plan& plan) {
  if (static_cast<int>(plan.batch_share.size()) != problem.device_count())
    throw InputError("plan", "batch_share needs one entry per device");
  Prediction& predicted = plan.predicted;
  struct Summed {
    double share = -1;
    PlanningProblem::Sharing sharing;
    double seconds = 0;
  };
  std::vector<Summed> known;  // per class: the share and sharing last summed
  if (problem.class_count() < problem.device_count()) known.assign(problem.device_count(), {});
  for (int d = 0; d < problem.device_count(); ++d) {
    const double share = plan.batch_share[d];
    if (share <= 0) continue;
    const PlanningProblem::Sharing sharing = steady_sharing(problem, plan, d);
    Summed* same = known.empty() ? nullptr : &known[problem.device_class(d)];
    double seconds = 0;
    if (same && same->share == share && same->sharing.devices == sharing.devices &&
        same->sharing.cores == sharing.cores) {
      seconds = same->seconds;
    } else {
      HostCopies host_copies(problem);
      for (int n = 0; n < problem.node_count(); ++n)
        seconds += problem.contended_seconds_for_share(n, d, share, sharing) +
                   host_copies.charge(n, d, share);
      seconds += problem.segment_overhead(d);  // its replica is one segment
      if (same) *same = {share, sharing, seconds};
    }
    predicted.busy_seconds[d] = seconds;
    predicted.latency_seconds = std::max(predicted.latency_seconds, seconds);
  }
  predicted.throughput_samples_per_second =
      static_cast<double>(problem.options().batch) / predicted.latency_seconds;
}

}  // namespace

PlanningProblem::Sharing steady_sharing(const PlanningProblem& problem, const Plan& plan,
                                        int device) {
  PlanningProblem::Sharing sharing{1, problem.device_cores(device)};
  const int group = problem.memory_group(device);
  if (group < 0) return sharing;
  std::vector<bool> computing(problem.device_count(), false);
  if (!plan.batch_share.empty()) {
    for (int d = 0; d < problem.device_count(); ++d)
      computing[d] = d < static_cast<int>(plan.batch_share.size()) && plan.batch_share[d] > 0;
  } else if (!plan.stages.empty() && plan.microbatches > 1) {
    for (const Stage& stage : plan.stages) computing[stage.device] = true;
  }
  for (int d = group; d < problem.device_count(); ++d) {
    if (d != device && computing[d] && problem.memory_group(d) == group) {
      ++sharing.devices;
      sharing.cores += problem.device_cores(d);
    }
  }
  return sharing;
}

std::vector<char> segment_starts(const Plan& plan, const std::vector<int>& position) {
  std::vector<char> starts(position.size(), 0);
  for (const Segment& segment : plan.segments) {
    if (segment.nodes.empty()) continue;
    starts[*std::min_element(segment.nodes.begin(), segment.nodes.end(),
                             [&](int a, int b) { return position[a] < position[b]; })] = 1;
  }
  return starts;
}

std::vector<double> memory_per_device(const PlanningProblem& problem, const Plan& plan) {
  const int devices = problem.device_count();
  std::vector<double> memory(devices, 0);
  if (!plan.batch_share.empty()) {
    const PlanningProblem::MemoryUse whole = problem.memory_use(plan.order);
    for (int d = 0; d < devices && d < static_cast<int>(plan.batch_share.size()); ++d) {
      if (plan.batch_share[d] > 0)
        memory[d] = whole.weights + whole.activations * plan.batch_share[d];
    }
    return memory;
  }
  std::vector<std::vector<int>> nodes_on(devices);
  for (int n : plan.order) nodes_on[plan.device_of_node[n]].push_back(n);
  const double in_flight =
      plan.stages.empty()
          ? 1.0
          : static_cast<double>(std::min(plan.microbatches, kMicrobatchesInFlight)) /
                std::max(plan.microbatches, 1);
  for (int d = 0; d < devices; ++d) {
    if (nodes_on[d].empty()) continue;
    const PlanningProblem::MemoryUse use = problem.memory_use(nodes_on[d]);
    memory[d] = use.weights + use.activations * in_flight;
  }
  return memory;
}

namespace {

double price_per_second(const PlanningProblem& problem, int device) {
  return problem.cluster().devices[device].figures.price_per_hour.value / 3600.0;
}

// USD per million samples, 0 when a device used has no price.
double cost_per_million(const PlanningProblem& problem, const std::vector<double>& busy,
                        double throughput) {
  double dollars_per_second = 0;
  for (int d = 0; d < problem.device_count(); ++d) {
    if (busy[d] <= 0) continue;
    if (!problem.cluster().devices[d].figures.price_per_hour.known()) return 0;
    dollars_per_second += price_per_second(problem, d);
  }
  return dollars_per_second / throughput * 1e6;
}

// The objective's figure of the best single device, as this plan's figure is measured.
double best_single_figure(const PlanningProblem& problem) {
  const int best = problem.best_single_device();
  if (best < 0) return 0;
  const double batch = static_cast<double>(problem.options().batch);
  // As evaluate_plan predicts a single device's plan: its work, one segment's program step
  // and one run's overhead.
  const auto single = [&](int d) {
    return problem.single_device_seconds(d) + problem.segment_overhead(d) + problem.run_overhead(d);
  };
  switch (problem.options().objective) {
    case Objective::kLatency: return single(best);
    case Objective::kThroughput: return batch / single(best);
    case Objective::kCost: {
      double cheapest = 0;
      for (int d = 0; d < problem.device_count(); ++d) {
        const bool usable = problem.single_device_seconds(d) < kInfinity &&
                            problem.single_device_memory(d) <= problem.memory_capacity(d) &&
                            problem.cluster().devices[d].figures.price_per_hour.known();
        if (!usable) continue;
        const double cost = price_per_second(problem, d) * single(d) / batch * 1e6;
        if (cheapest == 0 || cost < cheapest) cheapest = cost;
      }
      return cheapest;
    }
  }
  return 0;
}

// max over weightings y (y >= 0, sum 1) of sum over nodes of min over devices of y_d * t(n, d):
// every such sum is a lower bound on the makespan (the weighted mean of the devices' loads is at
// most the largest), and on the busiest device's time even when nodes are split. The function
// is concave in y; a few rounds of exponentiated-gradient ascent (the gradient is the devices'
// loads) from y proportional to each device's speed get close to its maximum, and any y gives
// a valid bound.
double work_bound(const PlanningProblem& problem) {
  const int devices = problem.device_count();
  const int nodes = problem.node_count();
  std::vector<double> weight(devices, 0);
  double total = 0;
  for (int d = 0; d < devices; ++d) {
    if (!problem.allowed(d)) continue;
    double seconds = 0;
    for (int n = 0; n < nodes; ++n) {
      if (problem.runnable(n, d)) seconds += problem.seconds(n, d);
    }
    weight[d] = seconds > 0 ? 1 / seconds : 1;
    total += weight[d];
  }
  if (total <= 0 || nodes == 0) return 0;
  for (double& w : weight) w /= total;
  constexpr int kRounds = 40;
  double best = 0;
  std::vector<double> load(devices);
  for (int round = 0; round < kRounds; ++round) {
    std::fill(load.begin(), load.end(), 0);
    double bound = 0;
    for (int n = 0; n < nodes; ++n) {
      int chosen = -1;
      double least = kInfinity;
      for (int d = 0; d < devices; ++d) {
        if (weight[d] <= 0 || !problem.runnable(n, d)) continue;
        const double weighted = weight[d] * problem.seconds(n, d);
        if (weighted < least) least = weighted, chosen = d;
      }
      if (chosen < 0) continue;
      bound += least;
      load[chosen] += problem.seconds(n, chosen);
    }
    best = std::max(best, bound);
    const double heaviest = *std::max_element(load.begin(), load.end());
    if (heaviest <= 0) break;
    // Loaded devices weigh more, so that fewer nodes are cheapest there; steps shrink.
    const double step = 1 / std::sqrt(round + 1.0);
    total = 0;
    for (int d = 0; d < devices; ++d) {
      weight[d] *= std::exp(step * load[d] / heaviest);
      total += weight[d];
    }
    for (double& w : weight) w /= total;
  }
  return best;
}

// The critical path with every node on its fastest device and transfers free. The batch may be
// split (micro-batches, data-parallel shares) down to one sample, so a node counts only its
// one-sample share of work plus its launch overhead.
double critical_path_bound(const PlanningProblem& problem) {
  const double sample = 1.0 / static_cast<double>(std::max<int64_t>(problem.options().batch, 1));
  std::vector<double> finish(problem.node_count(), 0);
  double longest = 0;
  for (int n = 0; n < problem.node_count(); ++n) {
    double fastest = kInfinity;
    for (int d = 0; d < problem.device_count(); ++d)
      fastest = std::min(fastest, problem.seconds_for_share(n, d, sample));
    double start = 0;
    for (const auto& [predecessor, bytes] : problem.predecessors(n))
      start = std::max(start, finish[predecessor]);
    finish[n] = start + fastest;
    longest = std::max(longest, finish[n]);
  }
  return longest;
}

// Cost: each node must run somewhere for at least its time there, at that device's price.
double cost_bound(const PlanningProblem& problem) {
  double dollars = 0;
  for (int n = 0; n < problem.node_count(); ++n) {
    double cheapest = kInfinity;
    for (int d = 0; d < problem.device_count(); ++d) {
      if (!problem.cluster().devices[d].figures.price_per_hour.known()) continue;
      cheapest = std::min(cheapest, price_per_second(problem, d) * problem.seconds(n, d));
    }
    if (cheapest == kInfinity) return 0;
    dollars += cheapest;
  }
  return dollars / static_cast<double>(problem.options().batch) * 1e6;
}

std::string figure_source(const DeviceSpec& device, const std::string& cluster_file) {
  if (!device.profile.empty()) return "calibration " + device.profile;
  if (!device.preset.empty()) return "preset " + device.preset;
  return "cluster file " + (cluster_file.empty() ? std::string("(built in)") : cluster_file);
}

}  // namespace

void evaluate_plan(const PlanningProblem& problem, Plan& plan) {
  evaluate_for_search(problem, plan);
  if (!plan.batch_share.empty()) {
    for (int d = 0; d < problem.device_count(); ++d) {
      if (plan.batch_share[d] > 0) plan.segments.push_back({d, plan.order});
    }
  }
  plan.figure_sources.clear();
  for (const DeviceSpec& device : problem.cluster().devices)
    plan.figure_sources.push_back(figure_source(device, problem.cluster().file));
}

void evaluate_for_search(const PlanningProblem& problem, Plan& plan) {
  check_shape(problem, plan);
  const std::vector<int> position = positions(plan.order);
  const int devices = problem.device_count();
  plan.objective = problem.options().objective;
  plan.segments.clear();
  plan.transfers.clear();
  plan.predicted = {};
  plan.predicted.busy_seconds.assign(devices, 0);
  plan.predicted.link_bytes.assign(problem.cluster().links.size(), 0);

  if (!plan.batch_share.empty()) {
    schedule_data_parallel(problem, plan);
  } else if (!plan.stages.empty()) {
    apply_stages(problem, plan);
    plan.segments = find_segments(problem, plan, position);
    schedule_pipeline(problem, plan, position);
  } else {
    plan.segments = find_segments(problem, plan, position);
    schedule(problem, plan, position);
  }
  // Every run also pays the runtime's own cost, once per batch (a pipeline's steady-state
  // throughput, one micro-batch per interval, does not).
  plan.predicted.latency_seconds += problem.run_overhead(plan);
  if (plan.stages.empty())
    plan.predicted.throughput_samples_per_second =
        static_cast<double>(problem.options().batch) / plan.predicted.latency_seconds;
  for (const Transfer& transfer : plan.transfers) {
    for (const Cluster::Hop& hop : transfer.path)
      plan.predicted.link_bytes[hop.link] += transfer.bytes;
  }
  plan.predicted.memory_bytes = memory_per_device(problem, plan);
  plan.predicted.cost_per_million_samples = cost_per_million(
      problem, plan.predicted.busy_seconds, plan.predicted.throughput_samples_per_second);

  plan.lower_bound = problem.bound();
  const double best_single = best_single_figure(problem);
  const Prediction& predicted = plan.predicted;
  switch (plan.objective) {
    case Objective::kLatency:
      plan.efficiency = plan.lower_bound / predicted.latency_seconds;
      plan.speedup_over_best_single = best_single / predicted.latency_seconds;
      break;
    case Objective::kThroughput:
      plan.efficiency = predicted.throughput_samples_per_second / plan.lower_bound;
      plan.speedup_over_best_single =
          best_single > 0 ? predicted.throughput_samples_per_second / best_single : 0;
      break;
    case Objective::kCost:
      plan.efficiency = predicted.cost_per_million_samples > 0
                            ? plan.lower_bound / predicted.cost_per_million_samples
                            : 0;
      plan.speedup_over_best_single = predicted.cost_per_million_samples > 0
                                          ? best_single / predicted.cost_per_million_samples
                                          : 0;
      break;
  }
  plan.figure_sources.clear();
}

MemoryCheck check_memory(const PlanningProblem& problem, const Plan& plan) {
  Plan copy;  // memory_per_device needs an order; the plan's own when it has one
  const Plan* source = &plan;
  if (plan.order.empty()) {
    copy = plan;
    copy.order.resize(problem.node_count());
    for (int n = 0; n < problem.node_count(); ++n) copy.order[n] = n;
    source = &copy;
  }
  const std::vector<double> memory = memory_per_device(problem, *source);
  MemoryCheck check;
  for (int d = 0; d < problem.device_count(); ++d) {
    const double shortfall = memory[d] - problem.memory_capacity(d);
    if (shortfall > 0) return {false, d, shortfall};
  }
  return check;
}

LowerBounds lower_bounds(const PlanningProblem& problem) {
  LowerBounds bounds;
  const double work = work_bound(problem);
  bounds.latency_seconds = std::max(critical_path_bound(problem), work);
  if (work > 0)
    bounds.throughput_samples_per_second = static_cast<double>(problem.options().batch) / work;
  bounds.cost_per_million_samples = cost_bound(problem);
  return bounds;
}

double lower_bound(const PlanningProblem& problem) {
  const LowerBounds& bounds = problem.bounds();
  switch (problem.options().objective) {
    case Objective::kLatency: return bounds.latency_seconds;
    case Objective::kThroughput: return bounds.throughput_samples_per_second;
    case Objective::kCost: return bounds.cost_per_million_samples;
  }
  return 0;
}

double objective_score(const PlanningProblem& problem, const Plan& plan) {
  const Prediction& predicted = plan.predicted;
  switch (problem.options().objective) {
    case Objective::kLatency: return predicted.latency_seconds;
    case Objective::kThroughput:
      return predicted.throughput_samples_per_second > 0
                 ? 1 / predicted.throughput_samples_per_second
                 : kInfinity;
    case Objective::kCost: {
      const double limit = problem.options().max_latency_seconds;
      if (limit > 0 && predicted.latency_seconds > limit) return kInfinity;
      // Without prices every plan costs 0: then the faster wins.
      return predicted.cost_per_million_samples > 0 ? predicted.cost_per_million_samples
                                                    : predicted.latency_seconds;
    }
  }
  return kInfinity;
}

std::string margin_text(const PlanOptions& options, double margin) {
  return std::to_string(std::lround(margin * 100)) + "% a split must win by" +
         (margin > options.split_margin
              ? " (the machine's speed moved that much while its devices were calibrated)"
              : "");
}

std::string objective_text(const PlanningProblem& problem, const Plan& plan) {
  const Prediction& predicted = plan.predicted;
  char text[64];
  switch (problem.options().objective) {
    case Objective::kThroughput:
      std::snprintf(text, sizeof text, "%.4g samples/s", predicted.throughput_samples_per_second);
      return text;
    case Objective::kCost:
      if (predicted.cost_per_million_samples > 0) {
        std::snprintf(text, sizeof text, "$%.3g per M samples", predicted.cost_per_million_samples);
        return text;
      }
      [[fallthrough]];  // without prices plans are ranked by latency (score)
    case Objective::kLatency: break;
  }
  const double seconds = predicted.latency_seconds;
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof text, "%.3g us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  }
  return text;
}

}  // namespace tandem
