// The multi-device executor on cpu-split.yaml (this CPU as two one-core devices): every zoo
// model under the plan of every strategy gives the single-device outputs; pipeline stages
// overlap in time; faults and backend errors stop the run promptly, naming device, segment, op.
#include "runtime/plan_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "cost/cost_model.h"
#include "expect_outputs.h"
#include "ir/error.h"
#include "ir/fuse.h"
#include "ir/infer.h"
#include "onnx/batch_split.h"
#include "onnx/importer.h"
#include "plan/evaluate.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "runtime/executor.h"
#include "runtime/zoo_model.h"
#include "util/cpu_affinity.h"
#include "util/random_tensor.h"

namespace tandem {
namespace {

// cpu0 on the first core, cpu1 on the next (the same core when there is only one).
struct SplitCpu {
  Cluster cluster = load_cluster(kSource + "/examples/clusters/cpu-split.yaml");
  CostModel cost{cluster};
  std::vector<std::unique_ptr<cpu::CpuDevice>> devices;
  SplitCpu() {
    const std::vector<int> cores = affinity_cores();
    for (size_t d = 0; d < cluster.devices.size(); ++d)
      devices.push_back(std::make_unique<cpu::CpuDevice>(
          cluster.devices[d].id, std::vector<int>{cores[d % cores.size()]}));
  }
  std::vector<Device*> pointers() const {
    std::vector<Device*> list;
    for (const auto& device : devices) list.push_back(device.get());
    return list;
  }
  PlanExecutor::Options options(std::vector<Fault> faults = {}) const {
    PlanExecutor::Options options;
    options.faults = std::move(faults);
    return options;
  }
};

TEST(PlanExecutor, EveryStrategyOnEveryZooModelGivesTheSingleDeviceOutputs) {
  const std::vector<std::string> models = zoo_models();
  ASSERT_GE(models.size(), 10u) << "run scripts/setup.sh to generate the zoo";
  SplitCpu split;
  cpu::CpuDevice reference_device("reference");
  int multi_device_runs = 0;
  for (const std::string& name : models) {
    Model model(name, 2);
    const std::vector<Tensor> inputs = random_inputs(model.graph);
    const std::vector<Tensor> expected = GraphExecutor(model.graph, reference_device).run(inputs);
    const PlanningProblem problem(model.graph, split.cluster, split.cost, model.plan_options());
    for (const std::string strategy :
         {"single:cpu0", "single:cpu1", "greedy", "heft", "pipeline", "data-parallel", "auto"}) {
      SCOPED_TRACE(name + " under " + strategy);
      const std::optional<Plan> plan = make_strategy(strategy, split.cluster)->plan(problem);
      if (!plan) continue;
      // The planner only splits the batch of models that re-infer at a smaller batch.
      const auto executor = std::make_unique<PlanExecutor>(model.graph, *plan, split.pointers(),
                                                           model.split, split.options());
      tandem::testing::expect_same_outputs(executor->run(inputs), expected);
      int devices_used = 0;
      for (double busy : executor->stats().busy_seconds) devices_used += busy > 0;
      multi_device_runs += devices_used > 1;
    }
  }
  EXPECT_GT(multi_device_runs, 0) << "no plan used both devices";
}

// A plan on one device that keeps every core busy runs on run()'s own thread where that thread
// runs the device's work as a worker would (the device pinned to no cores or to the thread's
// own, as many OpenMP threads as its cores), and on the device's worker otherwise; the outputs
// are the same either way.
TEST(PlanExecutor, ALoneDeviceOnEveryCoreRunsOnTheCallersThreadWhereItCan) {
  const std::vector<int> cores = affinity_cores();
  const int threads = cpu::cpu_threads();
  cpu::set_cpu_threads(static_cast<int>(cores.size()));
  cpu::CpuDevice unpinned("cpu0"), everywhere("cpu0", cores);
  EXPECT_TRUE(unpinned.runs_on_any_thread());
  EXPECT_TRUE(everywhere.runs_on_any_thread());
  if (cores.size() > 1) EXPECT_FALSE(cpu::CpuDevice("cpu0", {cores[0]}).runs_on_any_thread());

  SplitCpu split;
  Model model("resnet", 2);
  const std::vector<Tensor> inputs = random_inputs(model.graph);
  const std::vector<Tensor> expected = GraphExecutor(model.graph, unpinned).run(inputs);
  const PlanningProblem problem(model.graph, split.cluster, split.cost, model.plan_options());
  const std::optional<Plan> plan = make_strategy("single:cpu0", split.cluster)->plan(problem);
  ASSERT_TRUE(plan);
  PlanExecutor executor(model.graph, *plan, {&unpinned, split.devices[1].get()}, model.split,
                        split.options());
  tandem::testing::expect_same_outputs(executor.run(inputs), expected);  // on this thread
  if (cores.size() > 1) {
    cpu::set_cpu_threads(1);  // fewer threads than a worker's: the worker runs it
    EXPECT_FALSE(unpinned.runs_on_any_thread());
    tandem::testing::expect_same_outputs(executor.run(inputs), expected);
  }
  cpu::set_cpu_threads(threads);
}

// A pipeline of two stages over 4 micro-batches: stage 1 computes micro-batch k+1 while
// stage 2 computes k, so the two devices' compute spans overlap in time.
TEST(PlanExecutor, PipelineStagesOverlap) {
  SplitCpu split;
  Model model("tv_resnet18", 8);
  PlanOptions plan_options = model.plan_options();
  plan_options.objective = Objective::kThroughput;
  plan_options.microbatches = 4;
  const PlanningProblem problem(model.graph, split.cluster, split.cost, plan_options);
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(problem);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->stages.size(), 2u);
  ASSERT_EQ(plan->microbatches, 4);
  const std::vector<Tensor> inputs = random_inputs(model.graph);
  cpu::CpuDevice reference_device("reference");
  const std::vector<Tensor> expected = GraphExecutor(model.graph, reference_device).run(inputs);
  PlanExecutor executor(model.graph, *plan, split.pointers(), model.split, split.options());
  // Wall-clock overlap depends on what else the machine runs (another test may hold a core
  // for a whole run), so the test asks for some in one of a few runs, and checks the schedule
  // itself: stage 1 starts micro-batch k+1 before stage 2 finishes k.
  double overlap = 0;
  int ahead = 0;
  for (int run = 0; run < 5 && (overlap == 0 || ahead == 0); ++run) {
    tandem::testing::expect_same_outputs(executor.run(inputs), expected);
    const Timeline& timeline = executor.timeline();
    overlap = 0;
    for (const TimelineSpan& a : timeline.spans) {
      for (const TimelineSpan& b : timeline.spans) {
        if (a.category != "compute" || b.category != "compute" || a.track >= b.track) continue;
        overlap += std::max(0.0, std::min(a.start_seconds + a.duration_seconds,
                                          b.start_seconds + b.duration_seconds) -
                                     std::max(a.start_seconds, b.start_seconds));
      }
    }
    // The first stage is the device that computes first.
    int first_stage_track = -1;
    double earliest = 1e300;
    for (const TimelineSpan& span : timeline.spans) {
      if (span.category == "compute" && span.start_seconds < earliest) {
        earliest = span.start_seconds;
        first_stage_track = span.track;
      }
    }
    ahead = 0;
    for (const TimelineSpan& next : timeline.spans) {
      if (next.category != "compute" || next.track != first_stage_track || next.microbatch < 1)
        continue;
      for (const TimelineSpan& previous : timeline.spans) {
        if (previous.category == "compute" && previous.track != first_stage_track &&
            previous.microbatch == next.microbatch - 1 &&
            next.start_seconds < previous.start_seconds + previous.duration_seconds) {
          ++ahead;
        }
      }
    }
  }
  EXPECT_GT(overlap, 0) << "compute on the two devices never overlaps";
  EXPECT_GT(ahead, 0) << "stage 1 waited for stage 2 instead of running ahead";
  EXPECT_EQ(executor.stats().segments_run, 8);
  EXPECT_GE(executor.stats().transfers, 4);
}

// A two-device HEFT or greedy plan is not guaranteed by the cost model; place the first half
// of the nodes on cpu0 and the rest on cpu1 by hand.
Plan two_halves(const PlanningProblem& problem) {
  Plan plan;
  plan.strategy = "halves";
  const int nodes = problem.node_count();
  for (int n = 0; n < nodes; ++n) plan.device_of_node.push_back(n < nodes / 2 ? 0 : 1);
  for (int n = 0; n < nodes; ++n) plan.order.push_back(n);
  evaluate_plan(problem, plan);
  return plan;
}

struct FaultCase {
  SplitCpu split;
  Model model{"resnet", 2};
  PlanningProblem problem;
  Plan plan;
  FaultCase() : problem(model.graph, split.cluster, split.cost, model.plan_options()) {
    plan = two_halves(problem);
  }
};

// Runs on another thread so that a hang fails the test instead of blocking it.
template <typename F>
void finishes_within(std::chrono::seconds limit, F body) {
  auto done = std::async(std::launch::async, body);
  ASSERT_EQ(done.wait_for(limit), std::future_status::ready) << "the run hung";
  done.get();
}

TEST(PlanExecutor, InjectedFaultNamesDeviceSegmentAndOp) {
  FaultCase c;
  finishes_within(std::chrono::seconds(20), [&] {
    PlanExecutor executor(c.model.graph, c.plan, c.split.pointers(), {},
                          c.split.options(parse_faults("fail:cpu1:after=0")));
    try {
      executor.run(random_inputs(c.model.graph));
      ADD_FAILURE() << "the fault did not stop the run";
    } catch (const DeviceFailure& failure) {
      EXPECT_EQ(failure.device(), 1);
      const std::string message = failure.what();
      EXPECT_NE(message.find("cpu1: segment"), std::string::npos) << message;
      EXPECT_NE(message.find(", op "), std::string::npos) << message;
      EXPECT_NE(message.find("injected fault"), std::string::npos) << message;
    }
  });
}

TEST(PlanExecutor, ProducerFaultDoesNotLeaveTheConsumerWaiting) {
  FaultCase c;
  finishes_within(std::chrono::seconds(20), [&] {
    // cpu1 waits for cpu0's values, which never come.
    PlanExecutor executor(c.model.graph, c.plan, c.split.pointers(), {},
                          c.split.options(parse_faults("delay:cpu0:ms=20,fail:cpu0:after=0")));
    EXPECT_THROW(executor.run(random_inputs(c.model.graph)), DeviceFailure);
    EXPECT_EQ(executor.stats().segments_run, 0);
  });
}

TEST(PlanExecutor, FaultAfterSomeSegmentsThenRunsAgainCleanly) {
  FaultCase c;
  finishes_within(std::chrono::seconds(20), [&] {
    PlanExecutor executor(c.model.graph, c.plan, c.split.pointers(), {},
                          c.split.options(parse_faults("fail:cpu1:after=1")));
    const std::vector<Tensor> inputs = random_inputs(c.model.graph);
    EXPECT_NO_THROW(executor.run(inputs));  // cpu1 runs its one segment
    EXPECT_THROW(executor.run(inputs), DeviceFailure);
  });
}

// A device whose kernels for one op type fail, as a backend error would.
class BrokenDevice final : public Device {
 public:
  BrokenDevice(std::string name, std::string broken_op)
      : inner_(std::move(name)), broken_op_(std::move(broken_op)) {}
  std::string name() const override { return inner_.name(); }
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override {
    if (spec.node.op_type != broken_op_) return inner_.compile(spec);
    struct Failing final : Kernel {
      void run(std::span<const Tensor>, std::span<Tensor>) override {
        throw std::runtime_error("the backend failed");
      }
    };
    return std::make_unique<Failing>();
  }

 private:
  cpu::CpuDevice inner_;
  std::string broken_op_;
};

TEST(PlanExecutor, BackendErrorNamesTheFailingOp) {
  FaultCase c;
  BrokenDevice broken("cpu1", "Gemm");
  finishes_within(std::chrono::seconds(20), [&] {
    PlanExecutor executor(c.model.graph, c.plan, {c.split.devices[0].get(), &broken});
    try {
      executor.run(random_inputs(c.model.graph));
      ADD_FAILURE() << "the backend error did not stop the run";
    } catch (const DeviceFailure& failure) {
      const std::string message = failure.what();
      EXPECT_NE(message.find("(Gemm): the backend failed"), std::string::npos) << message;
    }
  });
}

// The order events give a plan: every copy into a device waits first for an event its producer
// recorded after the segment that wrote the value (a device with asynchronous work, such as a
// GPU, relies on it). The CPU backend's work is done when it returns; this device only logs.
struct EventLog {
  std::mutex mutex;
  int next_id = 0;
  std::map<int, std::string> recorder;                // event id -> the device that recorded it
  std::vector<std::pair<std::string, int>> waits;     // (waiting device, event id)
  std::vector<std::pair<std::string, int>> receives;  // (device, waits logged before it)
};

class LoggedEvent final : public Event {
 public:
  explicit LoggedEvent(int id) : id(id) {}
  void synchronize() const override {}
  const int id;
};

class EventLoggingDevice final : public Device {
 public:
  EventLoggingDevice(std::string name, EventLog& log) : inner_(std::move(name)), log_(log) {}
  std::string name() const override { return inner_.name(); }
  std::unique_ptr<Kernel> compile(const KernelSpec& spec) override { return inner_.compile(spec); }
  Tensor receive(const Tensor& tensor) override {
    std::lock_guard lock(log_.mutex);
    int waited = 0;
    for (const auto& [device, id] : log_.waits) waited += device == name();
    log_.receives.emplace_back(name(), waited);
    return inner_.receive(tensor);
  }
  std::shared_ptr<const Event> record() override {
    std::lock_guard lock(log_.mutex);
    const int id = log_.next_id++;
    log_.recorder[id] = name();
    return std::make_shared<LoggedEvent>(id);
  }
  void wait(const Event& event) override {
    std::lock_guard lock(log_.mutex);
    log_.waits.emplace_back(name(), dynamic_cast<const LoggedEvent&>(event).id);
  }

 private:
  cpu::CpuDevice inner_;
  EventLog& log_;
};

// The fault case's plan on two devices that log their events.
struct LoggedPlan {
  FaultCase c;
  EventLog log;
  EventLoggingDevice first{"cpu0", log}, second{"cpu1", log};
  PlanExecutor executor{c.model.graph, c.plan, {&first, &second}};
  const std::vector<Tensor> inputs = random_inputs(c.model.graph);
};

TEST(PlanExecutor, EveryCopyWaitsForItsProducersEvent) {
  LoggedPlan logged;
  PlanExecutor& executor = logged.executor;
  const EventLog& log = logged.log;
  executor.run(logged.inputs);
  ASSERT_GT(executor.stats().transfers, 0);
  EXPECT_EQ(static_cast<int>(log.receives.size()), executor.stats().transfers);
  EXPECT_EQ(log.waits.size(), log.receives.size());
  for (const auto& [device, id] : log.waits) {
    ASSERT_TRUE(log.recorder.count(id)) << device << " waited for an event nobody recorded";
    EXPECT_NE(log.recorder.at(id), device) << "a device waited for its own event";
  }
  // Each device's k-th copy comes after its k-th wait.
  std::map<std::string, int> copies;
  for (const auto& [device, waited] : log.receives) {
    EXPECT_GT(waited, copies[device]++) << device << " copied before waiting";
  }
}

// A device with asynchronous work is waited for around every node only while ops are recorded:
// a run that is only timed lets the device's queue run ahead of the host (on a GPU, each wait
// cost the launch and the kernel in series).
TEST(PlanExecutor, WaitsForTheDeviceAfterEachNodeOnlyWhileOpsAreRecorded) {
  LoggedPlan logged;
  PlanExecutor& executor = logged.executor;
  const auto events_of_a_run = [&] {
    const int before = logged.log.next_id;
    executor.run(logged.inputs);
    return logged.log.next_id - before;
  };
  const int timed = events_of_a_run();
  executor.set_recording({.every_run = true, .ops = true});
  const int recorded = events_of_a_run();
  EXPECT_GE(recorded, timed + static_cast<int>(logged.c.model.graph.nodes.size()));
  executor.set_recording({});
  EXPECT_EQ(events_of_a_run(), timed);
}

// Memory whose reads into host memory take a while, as a device's copy back does.
class SlowToReadMemory final : public MemorySpace {
 public:
  static constexpr auto kRead = std::chrono::milliseconds(20);
  std::string name() const override { return "slow memory"; }
  void copy_to_host(const Tensor& tensor, void* host) const override {
    std::this_thread::sleep_for(kRead);
    std::memcpy(host, tensor.raw(), tensor.nbytes());
  }
};

// A run ends with its outputs in host memory: copying them back from a device's memory is part
// of its measured time (the PJRT plugin's copies of a small model's outputs took as long as the
// model).
TEST(PlanExecutor, RunTimeIncludesCopyingTheOutputsToHostMemory) {
  Graph graph;
  graph.opset = 13;
  const TensorType type{DType::kFloat32, {4}};
  const int x = graph.add_value("x", type), kept = graph.add_value("kept", type),
            y = graph.add_value("y", type);
  graph.inputs = {x, kept};
  Node relu;
  relu.name = "relu";
  relu.op_type = "Relu";
  relu.inputs = {x};
  relu.outputs = {y};
  graph.nodes.push_back(relu);
  graph.outputs = {y, kept};  // `kept` is returned as given: from its memory
  Plan plan;
  plan.device_of_node = {0};
  plan.order = {0};
  plan.segments = {{0, {0}}};
  cpu::CpuDevice device("cpu0");
  PlanExecutor executor(graph, plan, {&device});
  SlowToReadMemory slow;
  std::vector<float> values = {1, 2, 3, 4};
  const std::vector<Tensor> inputs = {
      Tensor::zeros(DType::kFloat32, {4}),
      Tensor::wrap(DType::kFloat32, {4}, values.data(), nullptr, &slow)};
  const std::vector<Tensor> outputs = executor.run(inputs);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_TRUE(outputs[1].on_host());
  EXPECT_GE(executor.stats().seconds,
            std::chrono::duration<double>(SlowToReadMemory::kRead).count());
}

// A split batch's outputs are joined along their own batch axis (a transposed one's is axis 1:
// each piece's part is rows apart in the whole) from shares of unequal sizes, as one device
// gives them; a second run, writing recycled wholes, gives the same.
TEST(PlanExecutor, DataParallelOutputsJoinAlongTheirBatchAxisFromUnequalShares) {
  const auto graph_for = [](int64_t batch) {
    auto graph = std::make_shared<Graph>();
    graph->opset = 13;
    const int x = graph->add_value("x", {DType::kFloat32, {batch, 4, 6}});
    const int transposed = graph->add_value("transposed"),
              rectified = graph->add_value("rectified");
    Node transpose;
    transpose.name = "transpose";
    transpose.op_type = "Transpose";
    transpose.inputs = {x};
    transpose.outputs = {transposed};
    transpose.attributes.emplace("perm", std::vector<int64_t>{1, 0, 2});
    Node relu;
    relu.name = "relu";
    relu.op_type = "Relu";
    relu.inputs = {x};
    relu.outputs = {rectified};
    graph->nodes = {transpose, relu};
    graph->inputs = {x};
    graph->outputs = {transposed, rectified};
    infer_graph(*graph);
    return graph;
  };
  const std::shared_ptr<Graph> whole = graph_for(3);
  BatchSplit split;
  split.dim = "batch";
  split.batch = 3;
  split.input_axis = {0};
  split.output_axis = {1, 0};
  split.graph_for = [&](int64_t samples) -> std::shared_ptr<const Graph> {
    return graph_for(samples);
  };
  Plan plan;
  plan.device_of_node = {0, 0};
  plan.order = {0, 1};
  plan.batch_share = {2.0 / 3, 1.0 / 3};
  SplitCpu devices;
  PlanExecutor executor(*whole, plan, devices.pointers(), split, devices.options());
  const std::vector<Tensor> inputs = random_inputs(*whole);
  cpu::CpuDevice reference("reference");
  const std::vector<Tensor> expected = GraphExecutor(*whole, reference).run(inputs);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const std::vector<Tensor> outputs = executor.run(inputs);
    ASSERT_EQ(outputs.size(), 2u);
    EXPECT_EQ(outputs[0].shape(), (Shape{4, 3, 6}));
    EXPECT_EQ(outputs[1].shape(), (Shape{3, 4, 6}));
    tandem::testing::expect_same_outputs(outputs, expected);
    EXPECT_GT(executor.stats().busy_seconds[1], 0) << "the second share ran elsewhere";
  }
}

// The measured trace with every run recorded: each iteration after the previous on one clock,
// its spans carrying its index, and inside each segment its ops, named, each node once per run.
TEST(PlanExecutor, TimelineHoldsEveryRecordedIterationWithOpsInsideSegments) {
  FaultCase c;
  PlanExecutor executor(c.model.graph, c.plan, c.split.pointers(), {}, c.split.options());
  const std::vector<Tensor> inputs = random_inputs(c.model.graph);
  executor.run(inputs);  // warm-up, forgotten by set_recording
  executor.set_recording({.every_run = true, .ops = true});
  constexpr int kRuns = 3;
  for (int i = 0; i < kRuns; ++i) executor.run(inputs);
  const Timeline& timeline = executor.timeline();

  std::vector<const TimelineSpan*> iterations(kRuns, nullptr);
  for (const TimelineSpan& span : timeline.spans) {
    ASSERT_GE(span.iteration, 0) << span.name;
    ASSERT_LT(span.iteration, kRuns) << span.name;
    if (span.category != "iteration") continue;
    EXPECT_EQ(timeline.tracks.at(span.track).name, "iterations");
    EXPECT_EQ(iterations[span.iteration], nullptr) << "iteration " << span.iteration << " twice";
    iterations[span.iteration] = &span;
  }
  for (int i = 0; i < kRuns; ++i) {
    ASSERT_NE(iterations[i], nullptr) << "iteration " << i << " missing";
    if (i == 0) EXPECT_EQ(iterations[0]->start_seconds, 0);
    if (i > 0)
      EXPECT_GE(iterations[i]->start_seconds,
                iterations[i - 1]->start_seconds + iterations[i - 1]->duration_seconds)
          << "iteration " << i << " overlaps the one before";
  }
  auto within = [](const TimelineSpan& inner, const TimelineSpan& outer) {
    return inner.start_seconds >= outer.start_seconds &&
           inner.start_seconds + inner.duration_seconds <=
               outer.start_seconds + outer.duration_seconds;
  };
  // Per iteration and device, the ops seen; each inside a segment of its track and iteration.
  std::vector<std::map<int, std::multiset<std::string>>> ops(kRuns);
  int segments = 0;
  for (const TimelineSpan& span : timeline.spans) {
    if (span.category == "iteration") continue;
    EXPECT_TRUE(within(span, *iterations[span.iteration])) << span.name << " outside its run";
    segments += span.category == "compute";
    if (span.category != "op") continue;
    ops[span.iteration][span.track].insert(span.name);
    const bool nested =
        std::any_of(timeline.spans.begin(), timeline.spans.end(), [&](const TimelineSpan& segment) {
          return segment.category == "compute" && segment.track == span.track &&
                 segment.iteration == span.iteration && within(span, segment);
        });
    EXPECT_TRUE(nested) << span.name << " is not inside a segment of its device";
  }
  EXPECT_EQ(segments, kRuns * static_cast<int>(c.plan.segments.size()));
  std::map<int, std::multiset<std::string>> expected;  // compute track -> node labels
  for (size_t n = 0; n < c.model.graph.nodes.size(); ++n)
    expected[c.plan.device_of_node[n] * 2].insert(c.model.graph.nodes[n].label());
  for (int i = 0; i < kRuns; ++i) EXPECT_EQ(ops[i], expected) << "iteration " << i;

  // By default only the last run, without ops; clear_timeline counts runs afresh.
  executor.set_recording({});
  executor.run(inputs);
  executor.run(inputs);
  int runs = 0;
  for (const TimelineSpan& span : executor.timeline().spans) {
    EXPECT_NE(span.category, "op");
    EXPECT_EQ(span.iteration, 1) << span.name;
    runs += span.category == "iteration";
  }
  EXPECT_EQ(runs, 1);
  executor.clear_timeline();
  executor.run(inputs);
  for (const TimelineSpan& span : executor.timeline().spans) EXPECT_EQ(span.iteration, 0);
}

TEST(PlanExecutor, FaultSyntaxErrorsAreInputErrors) {
  EXPECT_THROW(parse_faults("fail:cpu1"), InputError);
  EXPECT_THROW(parse_faults("explode:cpu1:after=1"), InputError);
  EXPECT_THROW(parse_faults("delay:cpu1:ms=-4"), InputError);
  EXPECT_EQ(parse_faults("fail:cpu1:after=3,delay:cpu0:ms=5").size(), 2u);
}

}  // namespace
}  // namespace tandem
