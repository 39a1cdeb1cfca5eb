#pragma once
#include <cstddef>
#include <vector>

namespace tandem {

// A buffer that lives from the step that writes it to the last step that reads it.
struct BufferRequest {
  size_t bytes = 0;
  int first_step = 0;
  int last_step = 0;
};

// Offsets into one arena such that buffers alive at the same step never overlap.
struct MemoryPlan {
  std::vector<size_t> offsets;  // per request, 64-byte aligned
  size_t arena_bytes = 0;
  size_t requested_bytes = 0;  // sum of all requests: what one allocation per tensor would take
};

// Greedy best fit, largest buffers first: the heuristic TFLite and ONNX Runtime use too.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests);

}  // namespace tandem
