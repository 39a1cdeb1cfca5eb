#include "distributed/core_sharing.h"

namespace tandem::distributed {

std::vector<int> share_of_cores(const std::vector<RankCores>& ranks, int rank) {
  const RankCores& mine = ranks.at(static_cast<size_t>(rank));
  const int available = static_cast<int>(mine.cores.size());
  if (mine.claimed <= 0 || mine.claimed >= available) return mine.cores;
  int before = 0, sharing = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].machine != mine.machine || ranks[r].cores != mine.cores) continue;
    ++sharing;
    if (static_cast<int>(r) < rank) before += ranks[r].claimed;
  }
  if (sharing < 2) return mine.cores;
  std::vector<int> share;
  for (int k = 0; k < mine.claimed; ++k) share.push_back(mine.cores[(before + k) % available]);
  return share;
}

}  // namespace tandem::distributed
