// The multi-device executor as ranks of a run across hosts, each rank an executor of its own
// devices, joined by an in-process transport with MPI's matching rules (per sender and tag, in
// order): every zoo model under every strategy that puts work on several ranks gives the
// single-process outputs; a device failing on one rank stops every rank, naming it. The same
// executor over MPI is tested by tests/cli/test_mpi_cli.py; this one also runs under the
// sanitizers, which MPI builds do not.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "cost/cost_model.h"
#include "expect_outputs.h"
#include "ir/error.h"
#include "plan/strategies.h"
#include "plan/strategy.h"
#include "runtime/executor.h"
#include "runtime/plan_executor.h"
#include "runtime/zoo_model.h"
#include "util/cpu_affinity.h"

namespace tandem {
namespace {

// The ranks' shared mailboxes: a message waits in its box until its receive is posted.
class Hub {
 public:
  explicit Hub(int ranks) : ranks_(ranks), receives_(ranks), failure_(ranks) {}
  int ranks() const { return ranks_; }

  void post(int rank, std::vector<Transport::Receive> receives,
            std::function<void(int, const std::string&)> on_failure) {
    std::vector<std::pair<Transport::Receive, Tensor>> ready;
    std::optional<std::pair<int, std::string>> failed_before;
    {
      std::lock_guard lock(mutex_);
      if (failed_) failed_before = {failed_rank_, failed_what_};  // told as soon as it listens
      failure_[rank] = on_failure;
      pending_[rank] = static_cast<int>(receives.size());
      for (Transport::Receive& receive : receives) {
        auto& box = mail_[{receive.from, rank, receive.tag}];
        if (box.empty()) {
          receives_[rank][{receive.from, receive.tag}].push_back(std::move(receive));
        } else {
          ready.emplace_back(std::move(receive), std::move(box.front()));
          box.pop_front();
        }
      }
    }
    for (auto& [receive, tensor] : ready) deliver(rank, receive, std::move(tensor));
    if (failed_before) on_failure(failed_before->first, failed_before->second);  // this thread
  }

  void send(int from, int to, int tag, Tensor tensor) {
    std::optional<Transport::Receive> receive;
    {
      std::lock_guard lock(mutex_);
      auto& waiting = receives_[to][{from, tag}];
      if (waiting.empty()) {
        mail_[{from, to, tag}].push_back(std::move(tensor));
        return;
      }
      receive = std::move(waiting.front());
      waiting.pop_front();
    }
    deliver(to, *receive, std::move(tensor));
  }

  void fail(int rank, const std::string& what) {
    std::vector<std::pair<int, std::function<void(int, const std::string&)>>> told;
    {
      std::lock_guard lock(mutex_);
      failed_ = true;
      failed_rank_ = rank;
      failed_what_ = what;
      for (int r = 0; r < ranks_; ++r) {
        if (r == rank || !failure_[r]) continue;
        told.emplace_back(r, failure_[r]);
        ++calling_[r];
      }
      arrived_.notify_all();
    }
    for (auto& [r, tell] : told) {
      tell(rank, what);
      std::lock_guard lock(mutex_);
      --calling_[r];
      arrived_.notify_all();
    }
  }

  void wait(int rank) {
    std::unique_lock lock(mutex_);
    arrived_.wait(lock, [&] { return (pending_[rank] == 0 || failed_) && calling_[rank] == 0; });
    failure_[rank] = nullptr;
  }

 private:
  void deliver(int rank, Transport::Receive& receive, Tensor tensor) {
    {
      std::lock_guard lock(mutex_);
      if (failed_) return;  // the run is over
      ++calling_[rank];
    }
    const auto now = Transport::Clock::now();
    receive.on_arrival(std::move(tensor), now, now);
    std::lock_guard lock(mutex_);
    --calling_[rank];
    --pending_[rank];
    arrived_.notify_all();
  }

  const int ranks_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::tuple<int, int, int>, std::deque<Tensor>> mail_;  // (from, to, tag)
  std::vector<std::map<std::pair<int, int>, std::deque<Transport::Receive>>> receives_;
  std::vector<std::function<void(int, const std::string&)>> failure_;
  std::map<int, int> pending_, calling_;  // by rank
  bool failed_ = false;
  int failed_rank_ = -1;
  std::string failed_what_;
};

class LoopbackTransport : public Transport {
 public:
  LoopbackTransport(Hub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return hub_.ranks(); }
  std::string describe(int rank) const override {
    return "rank " + std::to_string(rank) + " (host" + std::to_string(rank) + ")";
  }
  void begin_run(std::vector<Receive> receives,
                 std::function<void(int, const std::string&)> on_peer_failure) override {
    hub_.post(rank_, std::move(receives), std::move(on_peer_failure));
  }
  void send(int to, int tag, Tensor tensor) override {
    hub_.send(rank_, to, tag, std::move(tensor));
  }
  void fail(const std::string& what) override { hub_.fail(rank_, what); }
  void end_run() override { hub_.wait(rank_); }

 private:
  Hub& hub_;
  int rank_;
};

// The cpu-split cluster's two one-core devices as two hosts, one rank each (or, with three
// ranks, three devices over the machine's cores).
struct Hosts {
  Cluster cluster;
  CostModel cost;
  std::vector<int> rank_of_device;
  explicit Hosts(const std::string& file)
      : cluster(load_cluster(kSource + "/examples/clusters/" + file)), cost(cluster) {
    for (const DeviceSpec& device : cluster.devices) {
      for (size_t h = 0; h < cluster.hosts.size(); ++h) {
        if (cluster.hosts[h].id == device.host) rank_of_device.push_back(static_cast<int>(h));
      }
    }
  }
  int ranks() const { return static_cast<int>(cluster.hosts.size()); }
};

struct RankRun {
  std::vector<Tensor> outputs;        // rank 0's
  std::vector<std::string> failures;  // by rank: what run() threw, "" when it returned
  std::vector<int> segments_run;      // by rank
};

// Runs `plan` as `hosts.ranks()` rank executors at once, each with its own devices.
RankRun run_as_ranks(const Hosts& hosts, const Model& model, const Plan& plan,
                     const std::vector<Tensor>& inputs, std::vector<Fault> faults = {},
                     int runs = 1) {
  Hub hub(hosts.ranks());
  const std::vector<int> cores = affinity_cores();
  RankRun result;
  result.failures.resize(hosts.ranks());
  result.segments_run.resize(hosts.ranks());
  std::vector<std::thread> threads;
  std::mutex mutex;
  for (int rank = 0; rank < hosts.ranks(); ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<std::unique_ptr<cpu::CpuDevice>> owned;
      std::vector<Device*> devices;
      for (size_t d = 0; d < hosts.cluster.devices.size(); ++d) {
        if (hosts.rank_of_device[d] != rank) {
          devices.push_back(nullptr);
          continue;
        }
        owned.push_back(std::make_unique<cpu::CpuDevice>(
            hosts.cluster.devices[d].id, std::vector<int>{cores[d % cores.size()]}));
        devices.push_back(owned.back().get());
      }
      LoopbackTransport transport(hub, rank);
      PlanExecutor::Options options;
      options.faults = faults;
      options.transport = &transport;
      options.device_rank = hosts.rank_of_device;
      try {
        PlanExecutor executor(model.graph, plan, devices, model.split, options);
        std::vector<Tensor> outputs;
        for (int k = 0; k < runs; ++k) {
          outputs =
              executor.run(rank == 0 ? std::span<const Tensor>(inputs) : std::span<const Tensor>());
        }
        std::lock_guard lock(mutex);
        if (rank == 0) result.outputs = outputs;
        result.segments_run[rank] = executor.stats().segments_run;
      } catch (const std::exception& error) {
        std::lock_guard lock(mutex);
        result.failures[rank] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return result;
}

TEST(RankExecutor, EveryStrategyOnEveryZooModelGivesTheSingleProcessOutputs) {
  const std::vector<std::string> models = zoo_models();
  ASSERT_GE(models.size(), 10u) << "run scripts/setup.sh to generate the zoo";
  const Hosts hosts("mpi-two-hosts.yaml");
  cpu::CpuDevice reference_device("reference");
  int multi_rank_runs = 0;
  for (const std::string& name : models) {
    Model model(name, 2);
    const std::vector<Tensor> inputs = random_inputs(model.graph);
    const std::vector<Tensor> expected = GraphExecutor(model.graph, reference_device).run(inputs);
    const PlanningProblem problem(model.graph, hosts.cluster, hosts.cost, model.plan_options());
    for (const std::string strategy : {"greedy", "heft", "pipeline", "data-parallel", "auto"}) {
      SCOPED_TRACE(name + " under " + strategy);
      const std::optional<Plan> plan = make_strategy(strategy, hosts.cluster)->plan(problem);
      if (!plan) continue;
      // Twice: the second run's messages must not meet the first's.
      const RankRun run = run_as_ranks(hosts, model, *plan, inputs, {}, 2);
      for (const std::string& failure : run.failures) ASSERT_EQ(failure, "");
      tandem::testing::expect_same_outputs(run.outputs, expected);
      multi_rank_runs += run.segments_run[0] > 0 && run.segments_run[1] > 0;
    }
  }
  EXPECT_GT(multi_rank_runs, 0) << "no plan put work on both ranks";
}

// A pipeline over three ranks, micro-batched: every rank computes, outputs as one process.
TEST(RankExecutor, PipelineOverThreeRanks) {
  const Hosts hosts("mpi-three-hosts.yaml");
  Model model("tv_resnet18", 6);
  PlanOptions plan_options = model.plan_options();
  plan_options.objective = Objective::kThroughput;
  plan_options.microbatches = 3;
  const PlanningProblem problem(model.graph, hosts.cluster, hosts.cost, plan_options);
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(problem);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->stages.size(), 3u);
  const std::vector<Tensor> inputs = random_inputs(model.graph);
  cpu::CpuDevice reference_device("reference");
  const std::vector<Tensor> expected = GraphExecutor(model.graph, reference_device).run(inputs);
  const RankRun run = run_as_ranks(hosts, model, *plan, inputs);
  for (const std::string& failure : run.failures) ASSERT_EQ(failure, "");
  tandem::testing::expect_same_outputs(run.outputs, expected);
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(run.segments_run[rank], 3) << "rank " << rank;
}

// A device failing on rank 1 stops both ranks: rank 1 names its device and op, rank 0 says it
// stopped because of rank 1.
TEST(RankExecutor, AFailureOnOneRankStopsEveryRankNamingIt) {
  const Hosts hosts("mpi-two-hosts.yaml");
  Model model("resnet", 2);
  const PlanningProblem problem(model.graph, hosts.cluster, hosts.cost, model.plan_options());
  const std::optional<Plan> plan = make_pipeline_strategy()->plan(problem);
  ASSERT_TRUE(plan.has_value());
  const RankRun run = run_as_ranks(hosts, model, *plan, random_inputs(model.graph),
                                   parse_faults("fail:cpu1:after=0"));
  ASSERT_NE(run.failures[1], "");
  EXPECT_NE(run.failures[1].find("rank 1 (host1): cpu1: segment"), std::string::npos)
      << run.failures[1];
  EXPECT_NE(run.failures[1].find("injected fault"), std::string::npos) << run.failures[1];
  EXPECT_NE(run.failures[0].find("rank 0 (host0): stopped: rank 1 (host1): cpu1"),
            std::string::npos)
      << run.failures[0];
}

TEST(RankExecutor, OnlyRankZeroTakesInputs) {
  const Hosts hosts("mpi-two-hosts.yaml");
  Model model("mlp", 2);
  const PlanningProblem problem(model.graph, hosts.cluster, hosts.cost, model.plan_options());
  const std::optional<Plan> plan = make_strategy("single:cpu1", hosts.cluster)->plan(problem);
  ASSERT_TRUE(plan.has_value());
  Hub hub(2);
  LoopbackTransport transport(hub, 1);
  cpu::CpuDevice device("cpu1");
  PlanExecutor::Options options;
  options.transport = &transport;
  options.device_rank = hosts.rank_of_device;
  PlanExecutor executor(model.graph, *plan, {nullptr, &device}, model.split, options);
  const std::vector<Tensor> inputs = random_inputs(model.graph);
  EXPECT_THROW(executor.run(inputs), InputError);
}

}  // namespace
}  // namespace tandem
