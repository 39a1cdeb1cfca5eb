#pragma once
// The cores this process may run on (sched_getaffinity), and narrowing them.
#include <vector>

namespace tandem {

// The CPU ids this process may run on, ascending.
std::vector<int> affinity_cores();
// Narrows this process (every thread it has, and those it starts) to `cores`; throws
// std::runtime_error naming the error when the kernel refuses.
void restrict_affinity(const std::vector<int>& cores);

}  // namespace tandem
