#pragma once
// Private to the CPU tensor-op kernels: per-file registration and the shared copy engine.
#include <cstdint>

#include "backends/cpu/kernel_registry.h"
#include "ir/ops/tensor_layout.h"

namespace tandem::cpu {

void register_layout_kernels(KernelRegistry& registry);    // Transpose, Slice, Concat, Split...
void register_creation_kernels(KernelRegistry& registry);  // Shape, Size, Constant*, Range...
void register_pad_kernels(KernelRegistry& registry);       // Pad, Trilu
void register_resize_kernels(KernelRegistry& registry);    // Resize
void register_index_kernels(KernelRegistry& registry);     // Gather*, Scatter*, OneHot
void register_data_dependent_kernels(KernelRegistry& registry);  // NonZero, NMS, Unique, TopK

// Copies the elements `layout` selects from `src` into the contiguous `dst` (layout.shape order).
// Merges dims first, then copies contiguous runs with memcpy, fills broadcast runs, or moves
// blocks through cache-sized tiles when the contiguous source dim is not the innermost one.
void strided_copy(const void* src, void* dst, const StridedLayout& layout, DType dtype);

// Below this many bytes of work an op stays on one thread.
inline constexpr int64_t kParallelBytes = 1 << 16;

}  // namespace tandem::cpu
