// The CPU backend's OpenMP team placed on distinct cores for calibration, and put back.
#include <gtest/gtest.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <set>
#include <vector>

#include "backends/cpu/cpu_device.h"
#include "util/cpu_affinity.h"

namespace tandem {
namespace {

// Each team thread's allowed cores, by thread number.
std::vector<std::vector<int>> team_cores() {
  std::vector<std::vector<int>> cores(static_cast<size_t>(cpu::cpu_threads()));
#pragma omp parallel
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
    std::vector<int> mine;
    for (int core = 0; core < CPU_SETSIZE; ++core)
      if (CPU_ISSET(core, &set)) mine.push_back(core);
    cores[static_cast<size_t>(omp_get_thread_num())] = mine;
  }
  return cores;
}

TEST(CpuTeam, OnDistinctCoresWhileItLivesAndBackAfter) {
  const std::vector<int> all = affinity_cores();
  if (all.size() < 2) GTEST_SKIP() << "one core: nothing to place";
  cpu::set_cpu_threads(static_cast<int>(all.size()));
  {
    const cpu::TeamOnDistinctCores team;
    EXPECT_TRUE(team.tried());
    ASSERT_TRUE(team.pinned());
    std::set<int> used;
    for (const std::vector<int>& cores : team_cores()) {
      ASSERT_EQ(cores.size(), 1u);
      used.insert(cores[0]);
    }
    EXPECT_EQ(used.size(), all.size());  // one core each, none shared
  }
  for (const std::vector<int>& cores : team_cores()) EXPECT_EQ(cores, all);
  // A team smaller than the cores is left where the scheduler puts it.
  cpu::set_cpu_threads(1);
  {
    const cpu::TeamOnDistinctCores team;
    EXPECT_FALSE(team.tried());
    EXPECT_FALSE(team.pinned());
  }
  cpu::set_cpu_threads(static_cast<int>(all.size()));
}

}  // namespace
}  // namespace tandem
