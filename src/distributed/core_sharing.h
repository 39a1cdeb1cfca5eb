#pragma once
#include <string>
#include <vector>

namespace tandem::distributed {

// What one rank of an MPI job may use of its machine's cores, as every rank tells the others.
struct RankCores {
  std::string machine;     // the machine's host name
  std::vector<int> cores;  // its CPU affinity, ascending
  int claimed = 0;         // cores its CPU devices pin to (0 when it has none)
};

// The cores `rank` should keep. mpirun binds each rank to cores of its own only when it is not
// oversubscribed and binding is on; otherwise ranks on one machine see the same cores, and CPU
// devices, which pin to the first cores they see, would all pin to the same ones and take turns
// on them. Ranks whose machine and affinity are the same share those cores out in rank order,
// each taking as many as its devices claim (wrapping round when they claim more than there
// are); a rank that claims none or all of them, or has its cores to itself, keeps them all.
std::vector<int> share_of_cores(const std::vector<RankCores>& ranks, int rank);

}  // namespace tandem::distributed
