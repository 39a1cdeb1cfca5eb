#include "sim/simulator.h"

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "plan/evaluate.h"
#include "sim/event_queue.h"
#include "sim/memory_ledger.h"
#include "sim/shared_links.h"

namespace tandem {
namespace {

// How one lane (the whole batch, a micro-batch, a data-parallel share) places the nodes:
// where each runs, who reads its outputs here, and what it sends elsewhere.
struct Destination {
  int device = 0;
  double bytes = 0;          // of the whole batch
  std::vector<int> readers;  // one entry per read
  int slot = 0;              // its received copy in an instance's remote buffers
  std::string label;         // "value -> device", for the timeline
  const std::vector<Cluster::Hop>* path = nullptr;  // PlanningProblem::path
  // Where each stretch of the path ends (one past its last hop): a hop alone, or hops joined
  // at switches, which the transfer crosses at once (cut through, nothing staged between).
  std::vector<int> stretch_ends;
};

struct NodeLayout {
  int device = 0;
  std::vector<int> local_readers;  // one entry per read on this device
  std::vector<Destination> destinations;
  int initial_refs = 0;            // reads here + copies out + 1 for a graph output
  int inputs = 0;                  // reads of other nodes' outputs
  std::vector<int> local_inputs;   // producers on this device, one entry per read
  std::vector<int> remote_inputs;  // received-copy slots, one entry per read
};

struct Layout {
  std::vector<NodeLayout> nodes;
  // (device, its nodes in the plan's order) for each device with nodes, by device.
  std::vector<std::pair<int, std::vector<int>>> sequences;
  std::vector<int> slot_refs;  // reads of each received copy
  std::vector<int> slot_device;
  std::vector<double> slot_bytes;
};

std::string node_label(const PlanningProblem& problem, int node) {
  return problem.graph() ? problem.graph()->nodes[node].name : "n" + std::to_string(node);
}

std::string value_label(const PlanningProblem& problem, const PlanningProblem::OutputValue& value,
                        int node) {
  if (problem.graph() && value.value >= 0) return problem.graph()->values[value.value].name;
  return node_label(problem, node);
}

Layout make_layout(const PlanningProblem& problem, const std::vector<int>& device_of_node,
                   const std::vector<int>& order) {
  const int nodes = problem.node_count();
  Layout layout;
  layout.nodes.resize(nodes);
  std::vector<int> sequence_of(problem.device_count(), -1);
  for (int n : order) sequence_of[device_of_node[n]] = 0;
  for (int d = 0; d < problem.device_count(); ++d) {
    if (sequence_of[d] < 0) continue;
    sequence_of[d] = static_cast<int>(layout.sequences.size());
    layout.sequences.push_back({d, {}});
  }
  for (int n : order) layout.sequences[sequence_of[device_of_node[n]]].second.push_back(n);
  for (int n = 0; n < nodes; ++n) {
    NodeLayout& node = layout.nodes[n];
    node.device = device_of_node[n];
    for (const PlanningProblem::OutputValue& value : problem.values_out(n)) {
      for (int reader : value.readers) {
        const int device = device_of_node[reader];
        if (device == node.device) {
          node.local_readers.push_back(reader);
          layout.nodes[reader].local_inputs.push_back(n);
          continue;
        }
        auto it = std::find_if(node.destinations.begin(), node.destinations.end(),
                               [&](const Destination& d) { return d.device == device; });
        if (it == node.destinations.end()) {
          Destination destination;
          destination.device = device;
          destination.slot = static_cast<int>(layout.slot_refs.size());
          destination.label =
              value_label(problem, value, n) + " -> " + problem.cluster().devices[device].id;
          destination.path = &problem.path(node.device, device);
          for (size_t h = 0; h < destination.path->size(); ++h) {
            if (!problem.cost().relays((*destination.path)[h]) || h + 1 == destination.path->size())
              destination.stretch_ends.push_back(static_cast<int>(h) + 1);
          }
          layout.slot_refs.push_back(0);
          layout.slot_device.push_back(device);
          layout.slot_bytes.push_back(0);
          node.destinations.push_back(std::move(destination));
          it = node.destinations.end() - 1;
        }
        it->readers.push_back(reader);
        layout.nodes[reader].remote_inputs.push_back(it->slot);
        ++layout.slot_refs[it->slot];
      }
      // Each value crosses once to each device its readers are on.
      std::vector<int> counted;
      for (int reader : value.readers) {
        const int device = device_of_node[reader];
        if (device == node.device ||
            std::find(counted.begin(), counted.end(), device) != counted.end())
          continue;
        counted.push_back(device);
        for (Destination& destination : node.destinations) {
          if (destination.device == device) destination.bytes += value.bytes;
        }
      }
    }
    for (const Destination& destination : node.destinations)
      layout.slot_bytes[destination.slot] = destination.bytes;
  }
  for (int n = 0; n < nodes; ++n) {
    NodeLayout& node = layout.nodes[n];
    node.inputs = static_cast<int>(node.local_inputs.size() + node.remote_inputs.size());
    node.initial_refs = static_cast<int>(node.local_readers.size() + node.destinations.size()) +
                        (problem.final_output_bytes(n) > 0 ? 1 : 0);
  }
  return layout;
}

std::vector<int> checked_order(const PlanningProblem& problem, const Plan& plan) {
  const int nodes = problem.node_count();
  if (static_cast<int>(plan.device_of_node.size()) != nodes)
    throw InputError("plan", "device_of_node has " + std::to_string(plan.device_of_node.size()) +
                                 " entries for " + std::to_string(nodes) + " nodes");
  for (int device : plan.device_of_node) {
    if (device < 0 || device >= problem.device_count())
      throw InputError("plan", "device index " + std::to_string(device) + " out of range");
  }
  std::vector<int> order = plan.order;
  if (order.empty()) {
    for (int n = 0; n < nodes; ++n) order.push_back(n);
  }
  std::vector<int> position(nodes, -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const int n = order[i];
    if (n < 0 || n >= nodes || position[n] >= 0 || order.size() != static_cast<size_t>(nodes))
      throw InputError("plan", "order is not a permutation of the nodes");
    position[n] = static_cast<int>(i);
  }
  for (int n = 0; n < nodes; ++n) {
    for (const auto& [predecessor, bytes] : problem.predecessors(n)) {
      if (position[predecessor] > position[n])
        throw InputError("plan", "order runs " + node_label(problem, n) + " before its input " +
                                     node_label(problem, predecessor));
    }
  }
  return order;
}

class Simulation {
 public:
  Simulation(const PlanningProblem& problem, const Plan& plan, const SimulationOptions& options)
      : problem_(problem),
        options_(options),
        replicas_(std::max(options.replicas, 1)),
        devices_(problem.device_count()),
        host_copies_(problem),
        links_(problem.cluster(), replicas_) {
    const std::vector<int> order = checked_order(problem, plan);
    if (!plan.batch_share.empty()) {
      if (static_cast<int>(plan.batch_share.size()) != devices_)
        throw InputError("plan", "batch_share needs one entry per device");
      // Each device with a share runs the whole graph: one layout (on the first of them) that
      // every lane runs on its own device.
      for (int d = 0; d < devices_; ++d) {
        if (plan.batch_share[d] <= 0) continue;
        if (layouts_.empty())
          layouts_.push_back(
              make_layout(problem, std::vector<int>(problem.node_count(), d), order));
        lanes_.push_back({0, plan.batch_share[d], d});
      }
    } else {
      layouts_.push_back(make_layout(problem, plan.device_of_node, order));
      const bool scheduled = plan.piece_order != PieceOrder::kPieceByPiece;
      const int microbatches =
          plan.stages.empty() && !scheduled ? 1 : std::max(plan.microbatches, 1);
      for (int m = 0; m < microbatches; ++m) lanes_.push_back({0, 1.0 / microbatches});
      if (scheduled && microbatches > 1) order_jobs(plan.piece_order);
    }
    if (lanes_.empty()) throw InputError("plan", "no device has a share of the batch");
    run_overhead_ = problem.run_overhead(plan);  // its devices and shares checked above
    // Where each segment's run (and a compiled device's program step) begins: a data-parallel
    // replica is one segment of the whole order, on each device with a share.
    if (!plan.batch_share.empty()) {
      segment_starts_.assign(problem.node_count(), 0);
      if (!order.empty()) segment_starts_[order.front()] = 1;
    } else {
      std::vector<int> position(problem.node_count(), 0);
      for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
      segment_starts_ = segment_starts(plan, position);
    }
    pipelined_ = plan.batch_share.empty() && lanes_.size() > 1;
    // Shares and pipelines keep their devices computing together, as the evaluator has it; a
    // list-scheduled plan's overlap is counted as it happens.
    if (!plan.batch_share.empty() || pipelined_) {
      for (int d = 0; d < devices_; ++d)
        steady_sharing_.push_back(steady_sharing(problem, plan, d));
    }
    batch_ = static_cast<double>(problem.options().batch);
    build_state();
  }

  SimulationResult run() {
    for (int sd = 0; sd < replicas_ * devices_; ++sd) try_start(sd);
    while (!events_.empty() && !result_.overflow) {
      const Event event = events_.pop();
      now_ = event.time;
      switch (event.kind) {
        case EventKind::kComputeDone: compute_done(event.a, event.b, event.c); break;
        case EventKind::kHopReady: join_links(event.a); break;
        case EventKind::kLinkDue: link_due(event.a, event.b); break;
      }
      ++result_.events;
    }
    return finish();
  }

 private:
  struct Lane {
    int layout = 0;
    double fraction = 1;
    int device = -1;  // a data-parallel share's device (the layout's placement otherwise)
  };
  // A lane that runs nodes on a device, and the nodes in order.
  struct DeviceLane {
    int lane = 0;
    const std::vector<int>* sequence = nullptr;
  };
  struct DeviceState {
    bool computing = false;
    int copies_held = 0;  // CPU devices: transfers its cores are copying
    double active_since = 0;
    double busy = 0;
  };
  struct InFlight {
    int instance = 0, node = 0, destination = 0, source = 0;
    int stretch = 0;                 // index into the destination's stretch_ends
    int first_hop = 0, end_hop = 0;  // the stretch's hops
    int pending = 0;                 // its links still carrying the bytes
    double bytes = 0, hop_start = 0;
    std::vector<int> tracks;  // per hop of the stretch, when the timeline is recorded
  };

  const Layout& layout_of(int instance) const {
    return layouts_[lanes_[instance % lanes_.size()].layout];
  }
  // The device (of the plan's cluster) that runs a node for an instance.
  int device_of(int instance, int node) const {
    const Lane& lane = lanes_[instance % lanes_.size()];
    return lane.device >= 0 ? lane.device : layouts_[lane.layout].nodes[node].device;
  }
  int sim_device(int instance, int device) const {
    return instance / static_cast<int>(lanes_.size()) * devices_ + device;
  }
  std::string device_name(int sd) const {
    const std::string& id = problem_.cluster().devices[sd % devices_].id;
    return replicas_ > 1 ? "r" + std::to_string(sd / devices_) + "/" + id : id;
  }

  void build_state() {
    const int sim_devices = replicas_ * devices_;
    const int instances = replicas_ * static_cast<int>(lanes_.size());
    const int nodes = problem_.node_count();
    size_t slots = 0;
    for (const Layout& layout : layouts_) slots = std::max(slots, layout.slot_refs.size());
    slots_ = slots;
    remaining_.resize(static_cast<size_t>(instances) * nodes);
    refs_.resize(static_cast<size_t>(instances) * nodes);
    remote_refs_.resize(static_cast<size_t>(instances) * slots_);
    nodes_done_.assign(instances, 0);
    lane_finish_.assign(lanes_.size(), 0);
    for (int i = 0; i < instances; ++i) {
      const Layout& layout = layout_of(i);
      for (int n = 0; n < nodes; ++n) {
        remaining_[static_cast<size_t>(i) * nodes + n] = layout.nodes[n].inputs;
        refs_[static_cast<size_t>(i) * nodes + n] = layout.nodes[n].initial_refs;
      }
      for (size_t s = 0; s < layout.slot_refs.size(); ++s)
        remote_refs_[i * slots_ + s] = layout.slot_refs[s];
    }
    state_.resize(sim_devices);
    lanes_on_device_.resize(devices_);
    for (size_t k = 0; k < lanes_.size(); ++k) {
      const Lane& lane = lanes_[k];
      for (const auto& [device, sequence] : layouts_[lane.layout].sequences) {
        lanes_on_device_[lane.device >= 0 ? lane.device : device].push_back(
            {static_cast<int>(k), &sequence});
      }
    }
    // A cursor per replica, device and lane that runs nodes there.
    cursor_offset_.assign(devices_ + 1, 0);
    for (int d = 0; d < devices_; ++d)
      cursor_offset_[d + 1] = cursor_offset_[d] + static_cast<int>(lanes_on_device_[d].size());
    cursor_.assign(static_cast<size_t>(replicas_) * cursor_offset_[devices_], 0);
    result_.replicas = replicas_;
    result_.device_bytes.assign(devices_, {});
    Timeline& timeline = result_.timeline;
    std::vector<std::string> sources;
    for (const DeviceSpec& spec : problem_.cluster().devices) {
      std::string source = !spec.profile.empty()  ? "calibration " + spec.profile
                           : !spec.preset.empty() ? "preset " + spec.preset
                                                  : "cluster file figures";
      if (std::find(sources.begin(), sources.end(), source) == sources.end())
        sources.push_back(source);
    }
    timeline.source = "predicted (simulator; figures: ";
    for (size_t s = 0; s < sources.size(); ++s) timeline.source += (s ? ", " : "") + sources[s];
    timeline.source += ")";
    // Weights are resident from the start on every device that runs a node reading them.
    std::vector<double> weights(devices_, 0);
    for (const Layout& layout : layouts_) {
      for (const auto& [device, sequence] : layout.sequences)
        weights[device] = problem_.memory_use(sequence).weights;
    }
    for (const Lane& lane : lanes_) {
      if (lane.device >= 0)
        weights[lane.device] = weights[layouts_[lane.layout].sequences[0].first];
    }
    std::vector<double> capacity(sim_devices);
    for (int sd = 0; sd < sim_devices; ++sd) {
      const std::string name = device_name(sd);
      timeline.devices.push_back(name);
      timeline.add_track(name + " compute", name);
      capacity[sd] = problem_.memory_capacity(sd % devices_);
    }
    memory_ = MemoryLedger(std::move(capacity), options_.record_timeline ? &timeline : nullptr);
    for (int sd = 0; sd < sim_devices; ++sd) allocate(sd, weights[sd % devices_]);
  }

  void allocate(int sd, double bytes) {
    if (bytes <= 0 || result_.overflow) return;
    if (!memory_.allocate(sd, bytes, now_)) {
      result_.overflow =
          MemoryOverflow{device_name(sd), now_, memory_.in_use(sd), memory_.capacity(sd)};
    }
  }

  void release(int sd, double bytes) {
    if (bytes > 0) memory_.release(sd, bytes, now_);
  }

  void set_activity(int sd, bool computing, int copies_delta) {
    DeviceState& state = state_[sd];
    const bool was = state.computing || state.copies_held > 0;
    state.computing = computing;
    state.copies_held += copies_delta;
    const bool is = state.computing || state.copies_held > 0;
    if (is && !was) state.active_since = now_;
    if (was && !is) state.busy += now_ - state.active_since;
  }

  // Starts the device's next node: the earliest lane whose next node has all its inputs.
  void try_start(int sd) {
    const DeviceState& state = state_[sd];
    if (state.computing || state.copies_held > 0) return;
    const int device = sd % devices_;
    const int replica = sd / devices_;
    const int nodes = problem_.node_count();
    if (!jobs_.empty()) {  // a training schedule: the device's next job, once its inputs are in
      int& cursor = job_cursor_[static_cast<size_t>(sd)];
      const std::vector<std::pair<int, int>>& jobs = jobs_[device];
      if (cursor >= static_cast<int>(jobs.size())) return;
      const auto [k, node] = jobs[cursor];
      const int instance = replica * static_cast<int>(lanes_.size()) + k;
      if (remaining_[static_cast<size_t>(instance) * nodes + node] > 0) return;
      ++cursor;
      start(sd, instance, k, node, device);
      return;
    }
    const std::vector<DeviceLane>& lanes = lanes_on_device_[device];
    for (size_t j = 0; j < lanes.size(); ++j) {
      const int k = lanes[j].lane;
      const std::vector<int>& sequence = *lanes[j].sequence;
      int& cursor = cursor_[static_cast<size_t>(replica) * cursor_offset_[devices_] +
                            cursor_offset_[device] + j];
      if (cursor >= static_cast<int>(sequence.size())) continue;
      const int node = sequence[cursor];
      const int instance = replica * static_cast<int>(lanes_.size()) + k;
      if (remaining_[static_cast<size_t>(instance) * nodes + node] > 0) continue;
      ++cursor;
      start(sd, instance, k, node, device);
      return;
    }
  }

  // The devices of `sd`'s memory group (PlanningProblem::memory_group) in its replica computing
  // now, itself included (for shares and pipelines, those the plan keeps computing together):
  // they split the host's main-memory bandwidth.
  PlanningProblem::Sharing computing_sharing(int sd, int device) const {
    if (!steady_sharing_.empty()) return steady_sharing_[device];
    PlanningProblem::Sharing sharing{1, problem_.device_cores(device)};
    const int group = problem_.memory_group(device);
    if (group < 0) return sharing;
    const int first = sd - device;  // the replica's device 0
    for (int other = group; other < devices_; ++other) {
      if (other != device && problem_.memory_group(other) == group &&
          state_[first + other].computing) {
        ++sharing.devices;
        sharing.cores += problem_.device_cores(other);
      }
    }
    return sharing;
  }

  void start(int sd, int instance, int k, int node, int device) {
    const PlanningProblem::Sharing sharing = computing_sharing(sd, device);
    set_activity(sd, true, 0);
    allocate(sd, problem_.output_bytes(node) * lanes_[k].fraction);
    const double seconds =
        problem_.contended_seconds_for_share(node, device, lanes_[k].fraction, sharing) +
        (segment_starts_[node] ? problem_.segment_overhead(device) : 0) +
        host_copies_.charge(node, device, lanes_[k].fraction, instance);
    if (options_.record_timeline) {
      result_.timeline.spans.push_back(
          {sd, node_label(problem_, node), "compute", now_, seconds, pipelined_ ? k : -1, 0});
    }
    events_.push({now_ + seconds, EventKind::kComputeDone, static_cast<uint32_t>(sd),
                  static_cast<uint32_t>(instance), static_cast<uint32_t>(node)});
  }

  // Each device's (lane, node) jobs in the order a training schedule runs them
  // (plan/piece_order.h), its nodes forward or backward as the problem's phases say.
  void order_jobs(PieceOrder order) {
    const std::vector<int>& phases = problem_.options().node_phase;
    if (static_cast<int>(phases.size()) != problem_.node_count())
      throw InputError("plan", "a training schedule needs every node marked forward or backward");
    const Layout& layout = layouts_[0];
    jobs_.assign(devices_, {});
    std::vector<int> first_forward(devices_, -1);
    for (const auto& [device, sequence] : layout.sequences)
      for (int n : sequence)
        if (!phases[n] && first_forward[device] < 0) first_forward[device] = n;
    for (const auto& [device, sequence] : layout.sequences) {
      std::vector<bool> backward;
      for (int n : sequence) backward.push_back(phases[n] != 0);
      int later = 0;
      for (int other = 0; other < devices_; ++other)
        later += first_forward[other] > first_forward[device] && first_forward[device] >= 0;
      for (const auto& [piece, unit] :
           order_pieces(order, backward, static_cast<int>(lanes_.size()), later))
        jobs_[device].push_back({piece, sequence[unit]});
    }
    job_cursor_.assign(static_cast<size_t>(replicas_) * devices_, 0);
  }

  void drop_local_ref(int instance, int node) {
    const size_t index = static_cast<size_t>(instance) * problem_.node_count() + node;
    if (--refs_[index] == 0)
      release(sim_device(instance, device_of(instance, node)),
              problem_.output_bytes(node) * lanes_[instance % lanes_.size()].fraction);
  }

  void input_arrived(int instance, int reader) {
    --remaining_[static_cast<size_t>(instance) * problem_.node_count() + reader];
  }

  void compute_done(int sd, int instance, int node) {
    set_activity(sd, false, 0);
    const Layout& layout = layout_of(instance);
    const NodeLayout& placed = layout.nodes[node];
    const double fraction = lanes_[instance % lanes_.size()].fraction;
    for (int producer : placed.local_inputs) drop_local_ref(instance, producer);
    for (int slot : placed.remote_inputs) {
      if (--remote_refs_[instance * slots_ + slot] == 0)
        release(sd, layout.slot_bytes[slot] * fraction);
    }
    for (int reader : placed.local_readers) input_arrived(instance, reader);
    if (placed.initial_refs == 0)
      release(sd, problem_.output_bytes(node) * fraction);  // nothing reads it, not an output
    for (size_t d = 0; d < placed.destinations.size(); ++d)
      send(sd, instance, node, static_cast<int>(d), fraction);
    if (++nodes_done_[instance] == problem_.node_count()) {
      double& finish = lane_finish_[instance % lanes_.size()];
      finish = std::max(finish, now_);
    }
    try_start(sd);
  }

  void send(int sd, int instance, int node, int d, double fraction) {
    const Destination& destination = layout_of(instance).nodes[node].destinations[d];
    const int target = sim_device(instance, destination.device);
    const double bytes = destination.bytes * fraction;
    allocate(target, bytes);  // the receiving buffer, before the copy starts
    std::vector<double>& sent = result_.device_bytes[sd % devices_];
    if (sent.empty()) sent.assign(devices_, 0);
    sent[destination.device] += bytes;
    InFlight transfer;
    transfer.instance = instance;
    transfer.node = node;
    transfer.destination = d;
    transfer.source = sd;
    transfer.bytes = bytes;
    const int id = allocate_transfer(std::move(transfer));
    // A CPU device's cores do the copy out of its memory: its queue waits for the first hop.
    if (problem_.cluster().devices[sd % devices_].kind == DeviceKind::kCpu)
      set_activity(sd, false, +1);
    start_stretch(id);
  }

  int allocate_transfer(InFlight transfer) {
    if (free_transfers_.empty()) {
      transfers_.push_back(std::move(transfer));
      return static_cast<int>(transfers_.size()) - 1;
    }
    const int id = free_transfers_.back();
    free_transfers_.pop_back();
    transfers_[id] = std::move(transfer);
    return id;
  }

  const Destination& destination_of(const InFlight& transfer) const {
    return layout_of(transfer.instance).nodes[transfer.node].destinations[transfer.destination];
  }

  // The transfer's next stretch of its path: the latency of every hop in it, then its bytes on
  // every link of it at once (one link, or the links joined at switches).
  void start_stretch(int id) {
    InFlight& transfer = transfers_[id];
    const Destination& destination = destination_of(transfer);
    transfer.first_hop = transfer.stretch == 0 ? 0 : destination.stretch_ends[transfer.stretch - 1];
    transfer.end_hop = destination.stretch_ends[transfer.stretch];
    transfer.hop_start = now_;
    double latency = 0;
    for (int h = transfer.first_hop; h < transfer.end_hop; ++h)
      latency += problem_.cluster().links[(*destination.path)[h].link].latency.value;
    if (latency > 0) {
      events_.push({now_ + latency, EventKind::kHopReady, static_cast<uint32_t>(id), 0, 0});
    } else {
      join_links(id);
    }
  }

  int channel_of(const InFlight& transfer, int hop) const {
    return links_.channel(transfer.source / devices_, (*destination_of(transfer).path)[hop]);
  }

  void join_links(int id) {
    InFlight& transfer = transfers_[id];
    const int first = transfer.first_hop, end = transfer.end_hop;
    transfer.pending = end - first;
    if (options_.record_timeline) {
      transfer.tracks.clear();
      for (int h = first; h < end; ++h)
        transfer.tracks.push_back(links_.take_lane(channel_of(transfer, h), result_.timeline));
    }
    if (transfer.bytes <= 0) {
      std::vector<int> channels;
      for (int h = first; h < end; ++h) channels.push_back(channel_of(transfer, h));
      for (int channel : channels) link_done(id, channel);
      return;
    }
    for (int h = first; h < end; ++h)
      links_.join(channel_of(transfer, h), id, transfer.bytes, now_, events_);
  }

  void link_due(int channel, uint32_t version) {
    std::vector<int> finished;
    if (!links_.due(channel, version, now_, events_, finished)) return;
    for (int id : finished) link_done(id, channel);
  }

  // The transfer's bytes have crossed one link of its stretch.
  void link_done(int id, int channel) {
    InFlight& transfer = transfers_[id];
    links_.add_bytes(channel, transfer.bytes);
    if (options_.record_timeline) {
      int track = transfer.tracks.front();
      for (int h = transfer.first_hop; h < transfer.end_hop; ++h) {
        if (channel_of(transfer, h) == channel) track = transfer.tracks[h - transfer.first_hop];
      }
      result_.timeline.spans.push_back(
          {track, destination_of(transfer).label, "transfer", transfer.hop_start,
           now_ - transfer.hop_start,
           pipelined_ ? transfer.instance % static_cast<int>(lanes_.size()) : -1, transfer.bytes});
      links_.give_lane(channel, track);
    }
    if (--transfer.pending == 0) stretch_done(id);
  }

  void stretch_done(int id) {
    InFlight& transfer = transfers_[id];
    const Destination& destination = destination_of(transfer);
    if (transfer.stretch == 0 &&
        problem_.cluster().devices[transfer.source % devices_].kind == DeviceKind::kCpu) {
      set_activity(transfer.source, false, -1);
      try_start(transfer.source);
    }
    if (++transfer.stretch < static_cast<int>(destination.stretch_ends.size())) {
      start_stretch(id);
      return;
    }
    // Arrived: the sender's copy may go, the readers here may start.
    const int instance = transfer.instance;
    drop_local_ref(instance, transfer.node);
    for (int reader : destination.readers) input_arrived(instance, reader);
    free_transfers_.push_back(id);
    try_start(sim_device(instance, destination.device));
  }

  SimulationResult finish() {
    const double end = now_;
    // The runtime's own cost of a run, once per batch, as evaluate_plan adds it.
    result_.latency_seconds = end + run_overhead_;
    const int microbatches = static_cast<int>(lane_finish_.size());
    const double interval = pipelined_ && microbatches > 1
                                ? (lane_finish_.back() - lane_finish_.front()) / (microbatches - 1)
                                : 0;
    const double samples = batch_ * replicas_;
    if (interval > 0) {
      result_.throughput_samples_per_second = samples / microbatches / interval;
    } else if (end > 0) {
      result_.throughput_samples_per_second = samples / result_.latency_seconds;
    }
    for (int sd = 0; sd < replicas_ * devices_; ++sd) {
      set_activity(sd, false, -state_[sd].copies_held);  // closes an open interval at the end
      DeviceActivity activity;
      activity.id = device_name(sd);
      activity.base_device = sd % devices_;
      activity.busy_seconds = state_[sd].busy;
      activity.idle_seconds = std::max(end - state_[sd].busy, 0.0);
      activity.peak_memory_bytes = memory_.peak(sd);
      activity.capacity_bytes = memory_.capacity(sd);
      result_.devices.push_back(std::move(activity));
    }
    result_.links = links_.activity(now_);
    result_.peak_events_pending = events_.peak_size();
    return std::move(result_);
  }

  const PlanningProblem& problem_;
  double run_overhead_ = 0;  // the plan's, once per batch
  SimulationOptions options_;
  int replicas_, devices_;
  double batch_ = 1;
  bool pipelined_ = false;
  // Per device, for plans whose devices compute together throughout.
  std::vector<PlanningProblem::Sharing> steady_sharing_;
  std::vector<Layout> layouts_;
  std::vector<Lane> lanes_;
  std::vector<char> segment_starts_;  // per node: the first of its segment (evaluate.h)
  HostCopies host_copies_;            // per micro-batch or replica (instance)
  std::vector<std::vector<DeviceLane>> lanes_on_device_;  // per device of the plan's cluster
  // Per instance (replica, lane) and node: reads still missing, references to its outputs.
  std::vector<int32_t> remaining_, refs_;
  std::vector<int32_t> remote_refs_;  // per instance and received-copy slot
  size_t slots_ = 0;
  std::vector<int> nodes_done_;
  std::vector<double> lane_finish_;  // per lane, the latest over replicas
  std::vector<DeviceState> state_;
  // Per replica, device and lane of lanes_on_device_: its next node there.
  std::vector<int> cursor_, cursor_offset_;
  // A training schedule's (lane, node) jobs per device, and per simulated device the next one.
  std::vector<std::vector<std::pair<int, int>>> jobs_;
  std::vector<int> job_cursor_;
  std::vector<InFlight> transfers_;
  std::vector<int> free_transfers_;
  SharedLinks links_;
  MemoryLedger memory_;
  EventQueue events_;
  double now_ = 0;
  SimulationResult result_;
};

}  // namespace

SimulationResult simulate(const PlanningProblem& problem, const Plan& plan,
                          const SimulationOptions& options) {
  return Simulation(problem, plan, options).run();
}

}  // namespace tandem
