#include "runtime/plan_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "ir/error.h"
#include "runtime/batch_split.h"
#include "runtime/executor.h"
#include "runtime/segment_graph.h"
#include "util/cpu_affinity.h"

namespace tandem {

using Clock = std::chrono::steady_clock;

// A segment compiled for one piece size: its graph, its executor, its inputs and outputs as
// value ids of the whole (full-batch) graph.
struct CompiledSegment {
  SegmentGraph graph;
  std::unique_ptr<GraphExecutor> executor;  // null for another rank's device
  std::vector<int> inputs, outputs;
  struct OpTime {
    const Node* node;
    Clock::time_point begin, end;
  };
  std::vector<OpTime> op_times;  // in the current run of it, when ops are recorded
};

struct PlanExecutor::Segment {
  int index = 0;  // in the plan's segments (data-parallel: the device's replica)
  int device = 0;
  std::vector<int> nodes;
  std::unordered_map<int, std::vector<int>> readers_elsewhere;  // value -> other devices
  std::vector<std::unique_ptr<CompiledSegment>> compiled;       // per piece graph, or null
};

struct PlanExecutor::Job {
  int segment = 0;  // index into segments_
  int piece = 0;
};

// A value of one piece that travels between ranks, and what the receiving rank does with it.
struct PlanExecutor::Message {
  int piece = 0, value = 0, from = 0, to = 0;  // ranks
  std::vector<int> copy_to;  // devices of `to` that read it as another device's output
  std::vector<int> env_of;   // devices of `to` that read it as a graph input
  int output = -1;           // the graph output it is, when `to` is rank 0
};

namespace {

struct CopyTask {
  int value = 0, piece = 0, from = 0;
  Tensor tensor;
  std::shared_ptr<const Event> written;  // the producer's work that writes it; null: done
};

// Thrown inside a worker to unwind when another worker has failed.
struct Aborted {};

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

// Everything one run shares between its workers, under one mutex. Each worker waits on its own
// condition variable (its inputs, its copies, or `aborted`), so that a hand-off wakes only the
// worker it is for; fail() wakes them all, so no worker outlives a failure.
struct PlanExecutor::RunState {
  explicit RunState(int devices) : compute_ready(devices), copy_ready(devices) {}
  std::mutex mutex;
  std::vector<std::condition_variable> compute_ready, copy_ready;     // per device
  std::vector<std::vector<std::unordered_map<int, Tensor>>> env;      // [piece][device]
  std::vector<std::vector<std::unordered_map<int, int>>> reads_left;  // [piece][device]
  std::vector<std::deque<CopyTask>> copies;                           // per consumer device
  std::vector<std::vector<Tensor>> results;                           // [piece][graph output]
  // Per graph output, the whole a split batch's joined output is copied into, where the piece
  // graphs know its shape (joined_outputs_); which pieces' parts are in it.
  std::vector<Tensor> joined;
  std::vector<std::vector<char>> joined_part;  // [piece][graph output]
  std::exception_ptr error;
  bool aborted = false;
  Clock::time_point start;
  Clock::time_point origin;  // what span times count from: this run's start, or the first's
  int iteration = 0;
  std::vector<TimelineSpan> spans;  // track: device * 2 (compute) or device * 2 + 1 (copy)
  std::vector<double> busy;
  int segments_run = 0, transfers = 0, messages_received = 0;
  double bytes_received = 0;
  std::vector<double> bytes_from_rank, seconds_from_rank;
  bool peer_failed = false;  // the error is another rank's

  void fail(std::exception_ptr failure) {
    std::lock_guard lock(mutex);
    if (!error) error = std::move(failure);
    aborted = true;
    for (auto& ready : compute_ready) ready.notify_all();
    for (auto& ready : copy_ready) ready.notify_all();
  }
};

// The executor's worker threads, kept between runs. run() publishes its RunState and bumps
// `generation`; each worker runs its part of that run and counts itself off in `busy`.
struct PlanExecutor::Pool {
  std::mutex mutex;
  std::condition_variable wake, done;
  RunState* state = nullptr;
  // Written under the mutex; atomic so that a thread may watch them awake before it sleeps.
  std::atomic<uint64_t> generation = 0;
  std::atomic<int> busy = 0;
  bool stop = false;
  std::vector<std::thread> threads;
  // Whether run()'s thread watches for the workers' end awake: only where their devices
  // leave it a core. Else it took a core an OpenMP team's thread had been woken onto, the
  // team's other threads spun at a barrier for it until the scheduler's next tick, and a run
  // of 15 us took 4 ms (one executor in three, on 2 vCPUs).
  bool caller_watches = false;
  // How long run()'s thread waited for the workers last run.
  std::chrono::nanoseconds last_wait{0};

  // Runs follow each other closely where a caller times them or serves requests, and a thread
  // put to sleep takes tens of microseconds to wake (an idle vCPU woken by the hypervisor): a
  // waiting thread watches for `ready` awake for a little while first, yielding its core to
  // any other thread that wants it, as ONNX Runtime's and OpenMP's pools do.
  static constexpr std::chrono::nanoseconds kAwake = std::chrono::microseconds(100);
  template <typename Ready>
  static void watch_awake(Ready ready, std::chrono::nanoseconds awake = kAwake) {
    const auto until = std::chrono::steady_clock::now() + awake;
    while (!ready() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  // run()'s thread, on a core the devices leave free, watches as long as the last run took it
  // and a little more, up to a millisecond: a run past the workers' 100 us put it to sleep, and
  // its wake-up was the plan's (a one-core device ran the small MobileNet in 317-325 us where
  // the same core took 262-267 without the hand-off; a millisecond's run pays a wake-up in
  // ~5%).
  std::chrono::nanoseconds caller_awake() const {
    constexpr auto kLongest = std::chrono::milliseconds(1);
    return std::min<std::chrono::nanoseconds>(last_wait + kAwake, kLongest);
  }

  void shut_down() {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (std::thread& thread : threads) thread.join();
  }
};

PlanExecutor::PlanExecutor(const Graph& graph, const Plan& plan, std::vector<Device*> devices,
                           BatchSplit split, Options options)
    : graph_(graph),
      plan_(plan),
      devices_(std::move(devices)),
      options_(std::move(options)),
      split_(std::move(split)),
      segments_started_(devices_.size()) {
  if (plan.device_of_node.size() != graph.nodes.size())
    throw InputError("plan", "it places " + std::to_string(plan.device_of_node.size()) +
                                 " nodes, the model has " + std::to_string(graph.nodes.size()));
  build_pieces();
  build_segments();
  lone_device_ = find_lone_device();
}

PlanExecutor::~PlanExecutor() {
  if (pool_) pool_->shut_down();
}

// A plan on one device that moves nothing between devices, where that device keeps every core
// busy, runs on run()'s thread wherever that thread can run the device's work as its worker
// would: handing it to the worker cost a wake-up of run()'s thread per run (it sleeps where the
// devices take every core, tens of microseconds on a VM: a 6 us model took 47 through
// local.yaml).
int PlanExecutor::find_lone_device() const {
  if (options_.transport || options_.on_worker_start) return -1;
  int only = -1;
  for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
    if (copies_expected_[d] > 0) return -1;
    if (!local(d) || jobs_[d].empty()) continue;
    if (only >= 0) return -1;
    only = d;
  }
  if (only < 0 || devices_[only]->busy_host_cores() < static_cast<int>(affinity_cores().size())) {
    return -1;
  }
  return only;
}

int PlanExecutor::caller_device() const {
  return lone_device_ >= 0 && devices_[lone_device_]->runs_on_any_thread() ? lone_device_ : -1;
}

void PlanExecutor::start_pool() {
  auto pool = std::make_unique<Pool>();
  auto worker = [this, pool = pool.get()](int device, bool copies) {
    std::exception_ptr start_error;
    try {
      if (copies)
        devices_[device]->bind_copy_thread();
      else
        devices_[device]->bind_current_thread();
      if (options_.on_worker_start) options_.on_worker_start(device);
    } catch (...) {
      start_error = std::current_exception();  // fails each run, where it can be reported
    }
    for (uint64_t seen = 0;;) {
      RunState* state = nullptr;
      Pool::watch_awake([&] { return pool->generation.load() != seen; });
      {
        std::unique_lock lock(pool->mutex);
        pool->wake.wait(lock, [&] { return pool->stop || pool->generation != seen; });
        if (pool->stop) return;
        seen = pool->generation;
        state = pool->state;
      }
      if (copies)
        copy_worker(*state, device, start_error);
      else
        compute_worker(*state, device, start_error);
      std::lock_guard lock(pool->mutex);
      if (--pool->busy == 0) pool->done.notify_all();
    }
  };
  int busy_cores = 0;
  try {
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
      if (!local(d) || (jobs_[d].empty() && copies_expected_[d] == 0)) continue;
      busy_cores += devices_[d]->busy_host_cores();
      pool->threads.emplace_back(worker, d, false);
      if (copies_expected_[d] > 0) pool->threads.emplace_back(worker, d, true);
    }
  } catch (...) {
    pool->shut_down();
    throw;
  }
  pool->caller_watches = busy_cores < static_cast<int>(affinity_cores().size());
  pool_ = std::move(pool);
}

void PlanExecutor::build_pieces() {
  const bool splits = !plan_.batch_share.empty() || plan_.microbatches > 1;
  if (!splits) {
    piece_sizes_ = {1};
    piece_device_ = {-1};
    piece_graphs_.push_back(std::shared_ptr<const Graph>(&graph_, [](const Graph*) {}));
    piece_graph_ = {0};
    return;
  }
  if (!split_.splittable())
    throw InputError("plan",
                     "it splits the batch, which this model does not allow: " +
                         (split_.refusal.empty() ? "no batch split given" : split_.refusal));
  if (split_.input_axis.size() != graph_.inputs.size() ||
      split_.output_axis.size() != graph_.outputs.size() || !split_.graph_for)
    throw InputError("plan", "it splits the batch, and the batch split given is for another model");
  batch_ = split_.batch;
  if (!plan_.batch_share.empty()) {
    int64_t given = 0;
    for (size_t d = 0; d < plan_.batch_share.size(); ++d) {
      const auto samples = static_cast<int64_t>(std::llround(plan_.batch_share[d] * batch_));
      if (samples <= 0) continue;
      piece_sizes_.push_back(samples);
      piece_device_.push_back(static_cast<int>(d));
      given += samples;
    }
    if (given != batch_)
      throw InputError("plan", "its batch shares make " + std::to_string(given) +
                                   " samples, the batch has " + std::to_string(batch_));
  } else {
    const int64_t pieces = plan_.microbatches;
    if (pieces > batch_)
      throw InputError("plan", std::to_string(pieces) + " micro-batches of a batch of " +
                                   std::to_string(batch_));
    for (int64_t p = 0; p < pieces; ++p)
      piece_sizes_.push_back(batch_ / pieces + (p < batch_ % pieces ? 1 : 0));
    piece_device_.assign(piece_sizes_.size(), -1);
  }
  std::vector<int64_t> graph_sizes;  // the batch of each of piece_graphs_
  for (int64_t size : piece_sizes_) {
    const auto known = std::find(graph_sizes.begin(), graph_sizes.end(), size);
    if (known != graph_sizes.end()) {
      piece_graph_.push_back(static_cast<int>(known - graph_sizes.begin()));
      continue;
    }
    std::shared_ptr<const Graph> piece_graph;
    if (size == batch_) {
      piece_graph = std::shared_ptr<const Graph>(&graph_, [](const Graph*) {});
    } else {
      try {
        piece_graph = split_.graph_for(size);
      } catch (const InputError& error) {
        throw InputError("plan", "the model bound to " + std::to_string(size) +
                                     " samples does not re-infer: " + error.what());
      }
      const bool same_nodes =
          piece_graph->nodes.size() == graph_.nodes.size() &&
          std::equal(graph_.nodes.begin(), graph_.nodes.end(), piece_graph->nodes.begin(),
                     [](const Node& a, const Node& b) { return a.name == b.name; });
      if (!same_nodes)
        throw InputError("plan", "the model bound to " + std::to_string(size) +
                                     " samples has other nodes: it cannot be split by batch");
    }
    piece_graph_.push_back(static_cast<int>(piece_graphs_.size()));
    piece_graphs_.push_back(std::move(piece_graph));
    graph_sizes.push_back(size);
  }
  // Where each piece's part of each joined output lies, where the piece graphs know it.
  joined_outputs_.assign(graph_.outputs.size(), std::nullopt);
  for (size_t k = 0; k < graph_.outputs.size(); ++k) {
    if (k < split_.output_summed.size() && split_.output_summed[k]) continue;
    JoinedOutput joined;
    joined.axis = split_.output_axis[k];
    bool known = joined.axis >= 0;
    for (size_t p = 0; p < piece_sizes_.size() && known; ++p) {
      const Graph& piece = *piece_graphs_[piece_graph_[p]];
      const TensorType& type = piece.values[piece.outputs[k]].type;
      known = is_static(type.shape) && joined.axis < static_cast<int>(type.shape.size());
      if (!known) break;
      if (p == 0) {
        joined.dtype = type.dtype;
        joined.whole = type.shape;
        joined.offsets = {0};
        continue;
      }
      Shape others = type.shape;  // the same dims but along the axis, as concat_batch requires
      others[joined.axis] = joined.whole[joined.axis];
      known = type.dtype == joined.dtype && others == joined.whole;
      joined.offsets.push_back(joined.whole[joined.axis]);
      joined.whole[joined.axis] += type.shape[joined.axis];
    }
    if (known) joined_outputs_[k] = std::move(joined);
  }
}

void PlanExecutor::build_segments() {
  const int device_count = static_cast<int>(devices_.size());
  std::vector<int> segment_of_node(graph_.nodes.size(), -1);
  if (!plan_.batch_share.empty()) {
    for (int device : piece_device_) {
      auto segment = std::make_unique<Segment>();
      segment->index = static_cast<int>(segments_.size());
      segment->device = device;
      for (int n = 0; n < static_cast<int>(graph_.nodes.size()); ++n) segment->nodes.push_back(n);
      segments_.push_back(std::move(segment));
    }
  } else {
    if (plan_.segments.empty()) throw InputError("plan", "it has no segments");
    std::vector<int> position(graph_.nodes.size(), 0);
    for (size_t i = 0; i < plan_.order.size(); ++i) position[plan_.order[i]] = static_cast<int>(i);
    std::vector<int> by_start(plan_.segments.size());
    for (size_t s = 0; s < by_start.size(); ++s) by_start[s] = static_cast<int>(s);
    std::stable_sort(by_start.begin(), by_start.end(), [&](int a, int b) {
      return position[plan_.segments[a].nodes.front()] < position[plan_.segments[b].nodes.front()];
    });
    for (int s : by_start) {
      auto segment = std::make_unique<Segment>();
      segment->index = s;
      segment->device = plan_.segments[s].device;
      segment->nodes = plan_.segments[s].nodes;
      std::sort(segment->nodes.begin(), segment->nodes.end());  // graph order is topological
      for (int n : segment->nodes) segment_of_node[n] = static_cast<int>(segments_.size());
      segments_.push_back(std::move(segment));
    }
  }
  for (const auto& segment : segments_) {
    if (segment->device < 0 || segment->device >= device_count ||
        (local(segment->device) && !devices_[segment->device]))
      throw InputError("plan", "segment " + std::to_string(segment->index) +
                                   " is on a device this run has no backend for");
  }

  order_jobs(device_count);

  // Compile each segment once per piece size it runs on.
  std::vector<std::vector<std::vector<int>>> readers(piece_graphs_.size());
  for (size_t g = 0; g < piece_graphs_.size(); ++g) readers[g] = value_readers(*piece_graphs_[g]);
  for (const auto& device_jobs : jobs_) {
    for (const Job& job : device_jobs) {
      Segment& segment = *segments_[job.segment];
      const int g = piece_graph_[job.piece];
      segment.compiled.resize(piece_graphs_.size());
      if (segment.compiled[g]) continue;
      const Graph& piece_graph = *piece_graphs_[g];
      auto compiled = std::make_unique<CompiledSegment>();
      compiled->graph = extract_segment(piece_graph, segment.nodes, readers[g]);
      auto to_main = [&](int id) {
        const int main_id = graph_.find_value(piece_graph.values[id].name);
        if (main_id < 0)
          throw InputError(
              "plan", "value '" + piece_graph.values[id].name + "' differs between batch sizes");
        return main_id;
      };
      for (int id : compiled->graph.inputs) compiled->inputs.push_back(to_main(id));
      for (int id : compiled->graph.outputs) compiled->outputs.push_back(to_main(id));
      if (!local(segment.device)) {  // another rank compiles it; its inputs and outputs route
        segment.compiled[g] = std::move(compiled);
        continue;
      }
      compiled->executor =
          std::make_unique<GraphExecutor>(compiled->graph.graph, *devices_[segment.device]);
      segment.compiled[g] = std::move(compiled);
    }
  }

  // Which other devices read each segment's outputs; a read of a later segment is a bad plan.
  const std::vector<std::vector<int>> main_readers = value_readers(graph_);
  for (size_t s = 0; s < segments_.size() && plan_.batch_share.empty(); ++s) {
    Segment& segment = *segments_[s];
    for (int n : segment.nodes) {
      for (int out : graph_.nodes[n].outputs) {
        if (out < 0) continue;
        for (int reader : main_readers[out]) {
          const int other = segment_of_node[reader];
          if (other < static_cast<int>(s))
            throw InputError("plan", "segment " + std::to_string(segments_[other]->index) +
                                         " reads a value of a later segment");
          const int device = segments_[other]->device;
          std::vector<int>& devices = segment.readers_elsewhere[out];
          if (device != segment.device &&
              std::find(devices.begin(), devices.end(), device) == devices.end())
            devices.push_back(device);
        }
      }
    }
  }
  copies_expected_.assign(device_count, 0);
  for (int d = 0; d < device_count; ++d) {
    for (const Job& job : jobs_[d]) {
      for (const auto& [value, readers] : segments_[job.segment]->readers_elsewhere) {
        for (int reader : readers) ++copies_expected_[reader];
      }
    }
  }
  build_messages();
}

bool PlanExecutor::local(int device) const {
  return !options_.transport || rank_of(device) == options_.transport->rank();
}

std::string PlanExecutor::on_rank() const {
  Transport* transport = options_.transport;
  return transport ? transport->describe(transport->rank()) + ": " : "";
}

int PlanExecutor::rank_of(int device) const {
  return options_.transport ? options_.device_rank[device] : 0;
}

void PlanExecutor::order_jobs(int device_count) {
  const int pieces = static_cast<int>(piece_sizes_.size());
  jobs_.assign(device_count, {});
  if (plan_.piece_order == PieceOrder::kPieceByPiece || pieces == 1) {
    for (int p = 0; p < pieces; ++p) {
      for (int s = 0; s < static_cast<int>(segments_.size()); ++s) {
        const int device = segments_[s]->device;
        if (piece_device_[p] < 0 || piece_device_[p] == device) jobs_[device].push_back({s, p});
      }
    }
    return;
  }
  if (options_.backward_nodes.size() != graph_.nodes.size())
    throw InputError("plan", "a training schedule needs every node marked forward or backward");
  // Per device, its segments in graph order, each forward or backward (holding a backward node).
  std::vector<std::vector<int>> units(device_count);
  std::vector<std::vector<bool>> backward(device_count);
  std::vector<int> first_forward(device_count, -1);
  for (int s = 0; s < static_cast<int>(segments_.size()); ++s) {
    const Segment& segment = *segments_[s];
    const bool is_backward = std::any_of(segment.nodes.begin(), segment.nodes.end(),
                                         [&](int n) { return options_.backward_nodes[n]; });
    units[segment.device].push_back(s);
    backward[segment.device].push_back(is_backward);
    if (!is_backward && first_forward[segment.device] < 0)
      first_forward[segment.device] = segment.nodes.front();
  }
  for (int d = 0; d < device_count; ++d) {
    int later = 0;  // devices whose forward pass begins after this one's
    for (int other = 0; other < device_count; ++other)
      later += first_forward[other] > first_forward[d] && first_forward[d] >= 0;
    for (const auto& [piece, unit] : order_pieces(plan_.piece_order, backward[d], pieces, later))
      jobs_[d].push_back({units[d][unit], piece});
  }
}

void PlanExecutor::build_messages() {
  Transport* transport = options_.transport;
  if (!transport) return;
  if (options_.device_rank.size() != devices_.size())
    throw InputError("plan", "the ranks of " + std::to_string(options_.device_rank.size()) +
                                 " devices are given for " + std::to_string(devices_.size()));
  const auto index_in = [](const std::vector<int>& ids, int v) {
    const auto found = std::find(ids.begin(), ids.end(), v);
    return found == ids.end() ? -1 : static_cast<int>(found - ids.begin());
  };
  // Every rank derives the same list, in the same order: a message's index is its tag.
  std::set<std::tuple<int, int, int, int>> found;  // piece, value, from, to
  for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
    const int rank = rank_of(d);
    for (const Job& job : jobs_[d]) {
      const Segment& segment = *segments_[job.segment];
      const CompiledSegment& compiled = *segment.compiled[piece_graph_[job.piece]];
      for (int v : compiled.inputs) {
        if (rank != 0 && index_in(graph_.inputs, v) >= 0) found.insert({job.piece, v, 0, rank});
      }
      for (int v : compiled.outputs) {
        if (rank != 0 && index_in(graph_.outputs, v) >= 0) found.insert({job.piece, v, rank, 0});
        const auto elsewhere = segment.readers_elsewhere.find(v);
        if (elsewhere == segment.readers_elsewhere.end()) continue;
        for (int reader : elsewhere->second) {
          if (rank_of(reader) != rank) found.insert({job.piece, v, rank, rank_of(reader)});
        }
      }
    }
  }
  const int here = transport->rank();
  sends_of_piece_.assign(piece_sizes_.size(), {});
  for (const auto& [piece, value, from, to] : found) {
    Message message{piece, value, from, to, {}, {}, -1};
    if (to == here) {
      for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
        if (rank_of(d) != here) continue;
        for (const Job& job : jobs_[d]) {
          const Segment& segment = *segments_[job.segment];
          if (job.piece != piece || index_in(graph_.inputs, value) < 0 ||
              index_in(segment.compiled[piece_graph_[piece]]->inputs, value) < 0 ||
              index_in(message.env_of, d) >= 0)
            continue;
          message.env_of.push_back(d);
        }
      }
      for (const auto& producer : segments_) {  // the value's producer says who reads it
        const auto elsewhere = producer->readers_elsewhere.find(value);
        if (elsewhere == producer->readers_elsewhere.end()) continue;
        for (int reader : elsewhere->second) {
          if (rank_of(reader) == here && index_in(message.copy_to, reader) < 0)
            message.copy_to.push_back(reader);
        }
      }
      if (to == 0) message.output = index_in(graph_.outputs, value);
    }
    if (from == here) sends_of_piece_[piece].push_back(static_cast<int>(messages_.size()));
    messages_.push_back(std::move(message));
  }
  for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
    if (rank_of(d) != here) copies_expected_[d] = 0;  // that rank's copy worker counts them
  }
}

std::vector<Transport::Receive> PlanExecutor::receives(RunState& state) {
  std::vector<Transport::Receive> receives;
  const int here = options_.transport->rank();
  const int network_track = static_cast<int>(devices_.size()) * 2 + 1;
  for (int m = 0; m < static_cast<int>(messages_.size()); ++m) {
    const Message& message = messages_[m];
    if (message.to != here) continue;
    receives.push_back(
        {message.from, m,
         [this, &state, &message, network_track](Tensor tensor, Clock::time_point first,
                                                 Clock::time_point last) {
           std::lock_guard lock(state.mutex);
           for (int d : message.copy_to) {
             state.copies[d].push_back({message.value, message.piece, -1, tensor, nullptr});
             state.copy_ready[d].notify_one();
           }
           for (int d : message.env_of) {
             state.env[message.piece][d][message.value] = tensor;
             state.compute_ready[d].notify_one();
           }
           if (message.output >= 0) state.results[message.piece][message.output] = tensor;
           const auto bytes = static_cast<double>(tensor.nbytes());
           state.spans.push_back(
               {network_track,
                graph_.values[message.value].name + " from " +
                    options_.transport->describe(message.from),
                "transfer", seconds_between(state.origin, first), seconds_between(first, last),
                piece_sizes_.size() > 1 ? message.piece : -1, bytes, state.iteration});
           ++state.messages_received;
           state.bytes_received += bytes;
           state.bytes_from_rank[message.from] += bytes;
           state.seconds_from_rank[message.from] += seconds_between(first, last);
         }});
  }
  return receives;
}

void PlanExecutor::set_recording(Recording recording) {
  std::lock_guard run_lock(run_mutex_);
  recording_ = recording;
  // An observer makes the executor wait for the device around every node (so that each op's
  // span is its execution): only while ops are recorded, never in a run that is only timed.
  for (const auto& segment : segments_) {
    for (const auto& compiled : segment->compiled) {
      if (!compiled || !compiled->executor) continue;
      CompiledSegment* raw = compiled.get();
      if (!recording.ops) {
        raw->executor->set_observer(nullptr);
        continue;
      }
      raw->executor->set_observer([raw](const Node& node, std::chrono::nanoseconds elapsed) {
        const Clock::time_point end = Clock::now();
        raw->op_times.push_back(
            {&node, end - std::chrono::duration_cast<Clock::duration>(elapsed), end});
      });
    }
  }
  timeline_ = Timeline{};
  runs_recorded_ = 0;
}

void PlanExecutor::clear_timeline() {
  std::lock_guard run_lock(run_mutex_);
  timeline_ = Timeline{};
  runs_recorded_ = 0;
}

std::vector<Tensor> PlanExecutor::run(std::span<const Tensor> inputs) {
  Transport* const transport = options_.transport;
  const bool root = !transport || transport->rank() == 0;
  if (!root && !inputs.empty())
    throw InputError("rank " + std::to_string(transport->rank()) +
                     " takes no inputs: rank 0 sends each rank those it reads");
  if (root && inputs.size() != graph_.inputs.size())
    throw InputError("the graph takes " + std::to_string(graph_.inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  const int device_count = static_cast<int>(devices_.size());
  const int pieces = static_cast<int>(piece_sizes_.size());
  std::lock_guard run_lock(run_mutex_);
  const int on_caller = caller_device();
  for (int d = 0; d < device_count; ++d) {
    // this thread only waits, but for the device whose work it runs itself
    if (devices_[d] && d != on_caller) devices_[d]->release_waiting_thread();
  }
  RunState state(device_count);
  // The run's time is the caller's: its inputs cut into pieces and its bookkeeping set up count,
  // as they do in the time calibration measures (calibrate/runtime_costs.h).
  state.start = Clock::now();
  state.env.assign(pieces, std::vector<std::unordered_map<int, Tensor>>(device_count));
  state.reads_left.assign(pieces, std::vector<std::unordered_map<int, int>>(device_count));
  state.copies.resize(device_count);
  state.results.assign(pieces, std::vector<Tensor>(graph_.outputs.size()));
  state.joined.assign(graph_.outputs.size(), Tensor());
  state.joined_part.assign(pieces, std::vector<char>(graph_.outputs.size(), 0));
  for (size_t k = 0; k < joined_outputs_.size() && root; ++k) {
    if (joined_outputs_[k])
      state.joined[k] =
          joined_memory_.allocate(joined_outputs_[k]->dtype, joined_outputs_[k]->whole);
  }
  state.busy.assign(device_count, 0);

  std::vector<std::vector<Tensor>> input_pieces;  // [graph input][piece]
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int axis = pieces > 1 ? split_.input_axis[k] : -1;
    if (axis >= 0 && (inputs[k].rank() <= axis || inputs[k].dim(axis) != batch_))
      throw InputError("input '" + graph_.values[graph_.inputs[k]].name + "' has shape " +
                       shape_str(inputs[k].shape()) + ", not a batch of " + std::to_string(batch_) +
                       " on axis " + std::to_string(axis));
    input_pieces.push_back(axis >= 0 ? split_batch(inputs[k], piece_sizes_, axis)
                                     : std::vector<Tensor>(pieces, inputs[k]));
  }
  for (int d = 0; d < device_count; ++d) {
    if (!local(d)) continue;
    for (const Job& job : jobs_[d]) {
      const Segment& segment = *segments_[job.segment];
      const CompiledSegment& compiled = *segment.compiled[piece_graph_[job.piece]];
      for (int v : compiled.inputs) {
        ++state.reads_left[job.piece][d][v];
        const auto input = std::find(graph_.inputs.begin(), graph_.inputs.end(), v);
        if (input != graph_.inputs.end() && root)  // elsewhere they arrive from rank 0
          state.env[job.piece][d][v] = input_pieces[input - graph_.inputs.begin()][job.piece];
      }
    }
  }

  if (!pool_) start_pool();
  if (runs_recorded_ == 0) epoch_ = state.start;
  state.origin = recording_.every_run ? epoch_ : state.start;
  state.iteration = runs_recorded_;
  if (transport) {
    state.bytes_from_rank.assign(transport->ranks(), 0.0);
    state.seconds_from_rank.assign(transport->ranks(), 0.0);
    try {
      transport->begin_run(receives(state), [this, &state](int, const std::string& what) {
        {
          std::lock_guard lock(state.mutex);
          if (!state.error) state.peer_failed = true;
        }
        state.fail(std::make_exception_ptr(DeviceFailure(-1, "", on_rank() + "stopped: " + what)));
      });
    } catch (const std::exception& error) {  // the ranks stopped before this run
      throw DeviceFailure(-1, "", on_rank() + "stopped: " + error.what());
    }
    if (root) {
      for (const Message& message : messages_) {
        const auto input = std::find(graph_.inputs.begin(), graph_.inputs.end(), message.value);
        if (message.from != 0 || input == graph_.inputs.end()) continue;
        transport->send(message.to, static_cast<int>(&message - messages_.data()),
                        input_pieces[input - graph_.inputs.begin()][message.piece]);
      }
    }
  }
  if (on_caller >= 0) {
    compute_worker(state, on_caller, nullptr);
  } else {
    {
      std::lock_guard lock(pool_->mutex);
      pool_->state = &state;
      pool_->busy = static_cast<int>(pool_->threads.size());
      ++pool_->generation;
    }
    const auto waiting = std::chrono::steady_clock::now();
    pool_->wake.notify_all();
    if (pool_->caller_watches)
      Pool::watch_awake([&] { return pool_->busy.load() == 0; }, pool_->caller_awake());
    {
      std::unique_lock lock(pool_->mutex);
      pool_->done.wait(lock, [&] { return pool_->busy == 0; });
      pool_->state = nullptr;
    }
    pool_->last_wait = std::chrono::steady_clock::now() - waiting;
  }
  if (transport) {
    // Tell the other ranks of a failure here; else wait for what is still on the way (the
    // outputs rank 0 gathers, this rank's last sends).
    bool failed_here = false;
    std::string what;
    {
      std::lock_guard lock(state.mutex);
      failed_here = state.error && !state.peer_failed;
    }
    if (failed_here) {
      try {
        std::rethrow_exception(state.error);
      } catch (const std::exception& error) {
        what = error.what();
      }
      transport->fail(what);
    } else {
      transport->end_run();
    }
  }
  // A run ends with its outputs in host memory: a device with memory of its own copies them
  // back (a PJRT or CUDA device's results), and that copy is part of the run's time.
  std::vector<Tensor> outputs;
  if (root && !state.error) outputs = host_outputs(state, input_pieces);
  const double seconds = seconds_between(state.start, Clock::now());

  if (!recording_.every_run || runs_recorded_ == 0) {
    timeline_ = Timeline{};
    timeline_.source = "measured";
    for (int d = 0; d < device_count; ++d) {
      const std::string name = devices_[d] ? devices_[d]->name() : "device" + std::to_string(d);
      timeline_.devices.push_back(name);
      timeline_.tracks.push_back({name + " compute", name});
      timeline_.tracks.push_back({name + " copy", name});
    }
    timeline_.tracks.push_back({"iterations", "run"});  // track device_count * 2
    if (transport)                                      // track device_count * 2 + 1
      timeline_.tracks.push_back(
          {"network into " + transport->describe(transport->rank()), "network"});
  }
  timeline_.spans.insert(timeline_.spans.end(), std::make_move_iterator(state.spans.begin()),
                         std::make_move_iterator(state.spans.end()));
  timeline_.spans.push_back({device_count * 2, "iteration " + std::to_string(state.iteration),
                             "iteration", seconds_between(state.origin, state.start), seconds, -1,
                             0, state.iteration});
  ++runs_recorded_;
  stats_ = RunStats{seconds,
                    state.busy,
                    state.segments_run,
                    state.transfers,
                    state.messages_received,
                    state.bytes_received,
                    state.bytes_from_rank,
                    state.seconds_from_rank};
  if (state.error) std::rethrow_exception(state.error);  // state's buffers go with it
  return outputs;
}

std::vector<Tensor> PlanExecutor::host_outputs(
    RunState& state, const std::vector<std::vector<Tensor>>& input_pieces) const {
  const int pieces = static_cast<int>(piece_sizes_.size());
  std::vector<Tensor> outputs;
  for (size_t k = 0; k < graph_.outputs.size(); ++k) {
    std::vector<Tensor> parts;
    for (int p = 0; p < pieces; ++p) {
      Tensor part = state.results[p][k];
      const int id = graph_.outputs[k];
      if (!part.defined()) {  // returned as given: a graph input or a constant
        const auto input = std::find(graph_.inputs.begin(), graph_.inputs.end(), id);
        part = input != graph_.inputs.end() ? input_pieces[input - graph_.inputs.begin()][p]
                                            : graph_.values[id].constant;
      }
      parts.push_back(part.to_host());
    }
    if (pieces == 1) {
      outputs.push_back(parts[0]);
      continue;
    }
    bool whole = state.joined[k].defined();
    for (int p = 0; p < pieces && whole; ++p) {
      if (state.joined_part[p][k]) continue;
      whole = fits_joined(parts[p], k, p, state);
      if (whole)
        copy_into_batch(parts[p], state.joined[k], joined_outputs_[k]->axis,
                        joined_outputs_[k]->offsets[p]);
    }
    if (whole) {
      outputs.push_back(state.joined[k]);
      continue;
    }
    try {
      const bool summed = k < split_.output_summed.size() && split_.output_summed[k];
      outputs.push_back(summed ? sum_pieces(parts) : concat_batch(parts, split_.output_axis[k]));
    } catch (const InputError& error) {
      throw InputError("plan", "output '" + graph_.values[graph_.outputs[k]].name +
                                   "' does not follow the batch: " + error.what());
    }
  }
  return outputs;
}

bool PlanExecutor::fits_joined(const Tensor& part, size_t output, int piece,
                               const RunState& state) const {
  if (!state.joined[output].defined() || !part.defined() || !part.on_host()) return false;
  const JoinedOutput& joined = *joined_outputs_[output];
  const size_t next = static_cast<size_t>(piece) + 1;
  Shape shape = joined.whole;
  shape[joined.axis] = (next < joined.offsets.size() ? joined.offsets[next] : shape[joined.axis]) -
                       joined.offsets[piece];
  return part.dtype() == joined.dtype && part.shape() == shape;
}

void PlanExecutor::compute_worker(RunState& state, int device,
                                  const std::exception_ptr& start_error) {
  const std::string name = devices_[device]->name();
  const Job* current = nullptr;
  try {
    if (start_error) std::rethrow_exception(start_error);
    for (const Job& job : jobs_[device]) {
      current = &job;
      run_job(state, job);
    }
  } catch (const Aborted&) {
  } catch (const std::exception& error) {
    std::string where = name;
    if (current) {
      const Segment& segment = *segments_[current->segment];
      const CompiledSegment& compiled = *segment.compiled[piece_graph_[current->piece]];
      const size_t failed =
          std::min<size_t>(compiled.executor->current_step(), segment.nodes.size() - 1);
      where += ": segment " + std::to_string(segment.index);
      if (piece_sizes_.size() > 1 && plan_.batch_share.empty())
        where += " (micro-batch " + std::to_string(current->piece) + ")";
      where += ", op " + graph_.nodes[segment.nodes[failed]].label();
    }
    state.fail(std::make_exception_ptr(
        DeviceFailure(device, name, on_rank() + where + ": " + error.what())));
  } catch (...) {  // not a std::exception: still fail the run rather than end the process
    state.fail(
        std::make_exception_ptr(DeviceFailure(device, name, on_rank() + name + ": unknown error")));
  }
}

void PlanExecutor::run_job(RunState& state, const Job& job) {
  Segment& segment = *segments_[job.segment];
  CompiledSegment& compiled = *segment.compiled[piece_graph_[job.piece]];
  const int device = segment.device;
  std::vector<Tensor> inputs;
  {
    std::unique_lock lock(state.mutex);
    auto& env = state.env[job.piece][device];
    state.compute_ready[device].wait(lock, [&] {
      return state.aborted || std::all_of(compiled.inputs.begin(), compiled.inputs.end(),
                                          [&](int v) { return env.count(v) > 0; });
    });
    if (state.aborted) throw Aborted{};
    for (int v : compiled.inputs) {
      inputs.push_back(env[v]);
      if (--state.reads_left[job.piece][device][v] == 0) env.erase(v);
    }
  }
  compiled.op_times.clear();
  const int started = segments_started_[device]++;
  for (const Fault& fault : options_.faults) {
    if (fault.device != devices_[device]->name()) continue;
    if (fault.kind == Fault::Kind::kFail && started >= fault.after_segments)
      throw std::runtime_error("injected fault (TANDEM_FAULT=" + fault.text + ")");
    if (fault.kind == Fault::Kind::kCrash && started >= fault.after_segments) raise(SIGKILL);
    if (fault.kind == Fault::Kind::kDelay) {
      std::unique_lock lock(state.mutex);
      state.compute_ready[device].wait_for(lock, std::chrono::milliseconds(fault.delay_ms),
                                           [&] { return state.aborted; });
      if (state.aborted) throw Aborted{};
    }
  }
  const auto begin = Clock::now();
  std::vector<Tensor> outputs = compiled.executor->run(inputs);
  // Consumers' copies wait for the event; the worker waits too, so that the measured span
  // is the segment's execution on the device, not only its launch.
  const std::shared_ptr<const Event> written = devices_[device]->record();
  if (written) written->synchronize();
  const auto end = Clock::now();
  inputs.clear();
  if (options_.transport) {  // other ranks' readers first: the network is the slow path
    for (const int m : sends_of_piece_[job.piece]) {
      const Message& message = messages_[m];
      const auto output =
          std::find(compiled.outputs.begin(), compiled.outputs.end(), message.value);
      if (output == compiled.outputs.end()) continue;
      options_.transport->send(message.to, m, outputs[output - compiled.outputs.begin()].to_host());
    }
  }

  // Its parts of joined outputs, copied into the wholes while they are in this core's cache
  // (a run of the whole batch has none).
  std::vector<size_t> joined;
  for (size_t i = 0; i < outputs.size() && !joined_outputs_.empty(); ++i) {
    const auto returned =
        std::find(graph_.outputs.begin(), graph_.outputs.end(), compiled.outputs[i]);
    if (returned == graph_.outputs.end()) continue;
    const auto k = static_cast<size_t>(returned - graph_.outputs.begin());
    if (!fits_joined(outputs[i], k, job.piece, state)) continue;
    copy_into_batch(outputs[i], state.joined[k], joined_outputs_[k]->axis,
                    joined_outputs_[k]->offsets[job.piece]);
    joined.push_back(k);
  }

  std::lock_guard lock(state.mutex);
  for (const size_t k : joined) state.joined_part[job.piece][k] = 1;
  const double duration = seconds_between(begin, end);
  const int microbatch = piece_sizes_.size() > 1 ? job.piece : -1;
  state.spans.push_back({device * 2, "segment " + std::to_string(segment.index), "compute",
                         seconds_between(state.origin, begin), duration, microbatch, 0,
                         state.iteration});
  // Inside the segment's span (clamped, so that trace viewers nest them under it).
  for (const CompiledSegment::OpTime& op : compiled.op_times) {
    const Clock::time_point op_begin = std::clamp(op.begin, begin, end);
    state.spans.push_back({device * 2, op.node->label(), "op",
                           seconds_between(state.origin, op_begin),
                           seconds_between(op_begin, std::clamp(op.end, op_begin, end)), microbatch,
                           0, state.iteration});
  }
  state.busy[device] += duration;
  ++state.segments_run;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int v = compiled.outputs[i];
    const auto returned = std::find(graph_.outputs.begin(), graph_.outputs.end(), v);
    if (returned != graph_.outputs.end())
      state.results[job.piece][returned - graph_.outputs.begin()] = outputs[i];
    if (state.reads_left[job.piece][device].count(v)) state.env[job.piece][device][v] = outputs[i];
    const auto elsewhere = segment.readers_elsewhere.find(v);
    if (elsewhere == segment.readers_elsewhere.end()) continue;
    for (int reader : elsewhere->second) {
      if (!local(reader)) continue;  // sent below
      state.copies[reader].push_back({v, job.piece, device, outputs[i], written});
      state.copy_ready[reader].notify_one();
    }
  }
}

void PlanExecutor::copy_worker(RunState& state, int device, const std::exception_ptr& start_error) {
  try {
    if (start_error) std::rethrow_exception(start_error);
    for (int done = 0; done < copies_expected_[device]; ++done) {
      CopyTask task;
      {
        std::unique_lock lock(state.mutex);
        state.copy_ready[device].wait(
            lock, [&] { return state.aborted || !state.copies[device].empty(); });
        if (state.aborted) return;
        task = std::move(state.copies[device].front());
        state.copies[device].pop_front();
      }
      // The consumer device copies the value into its memory, after the producer's event
      // (between devices of one backend, device to device).
      const auto begin = Clock::now();
      if (task.written) devices_[device]->wait(*task.written);
      Tensor copy = devices_[device]->receive(task.tensor);
      const auto end = Clock::now();
      const auto bytes = static_cast<double>(copy.nbytes());
      task.tensor = Tensor();
      std::lock_guard lock(state.mutex);
      state.env[task.piece][device][task.value] = std::move(copy);  // what it waits for
      state.spans.push_back(
          {device * 2 + 1, graph_.values[task.value].name + " -> " + devices_[device]->name(),
           "transfer", seconds_between(state.origin, begin), seconds_between(begin, end),
           piece_sizes_.size() > 1 ? task.piece : -1, bytes, state.iteration});
      ++state.transfers;
      state.compute_ready[device].notify_one();
    }
  } catch (const std::exception& error) {
    const std::string name = devices_[device]->name();
    state.fail(std::make_exception_ptr(
        DeviceFailure(device, name, on_rank() + name + ": copy into its memory: " + error.what())));
  } catch (...) {
    const std::string name = devices_[device]->name();
    state.fail(std::make_exception_ptr(
        DeviceFailure(device, name, on_rank() + name + ": copy into its memory: unknown error")));
  }
}

}  // namespace tandem
