// Kernels of the element-rearranging ops: Transpose, Slice, Expand, Tile, DepthToSpace,
// SpaceToDepth (through the strided copy engine), Concat and Split (contiguous runs).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "backends/cpu/parallel_ranges.h"
#include "backends/cpu/tensor_kernels.h"

namespace tandem::cpu {
namespace {

void copy_layout(const Tensor& input, Tensor& output, const StridedLayout& layout) {
  strided_copy(input.raw(), output.raw(), layout, input.dtype());
}

void transpose(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  std::vector<int64_t> perm(inputs[0].rank());
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = node.attr_ints("perm", perm);
  copy_layout(inputs[0], outputs[0], transpose_layout(inputs[0].shape(), perm));
}

std::vector<int64_t> ints_or(const std::span<const Tensor> inputs, size_t i,
                             std::vector<int64_t> fallback) {
  return i < inputs.size() && inputs[i].defined() ? inputs[i].to_int64s() : fallback;
}

void slice(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const std::vector<int64_t> starts = inputs[1].to_int64s();
  const std::vector<int64_t> ends = inputs[2].to_int64s();
  std::vector<int64_t> default_axes(starts.size());
  std::iota(default_axes.begin(), default_axes.end(), 0);
  const std::vector<int64_t> axes = ints_or(inputs, 3, default_axes);
  const std::vector<int64_t> steps = ints_or(inputs, 4, std::vector<int64_t>(starts.size(), 1));
  std::vector<SliceRange> ranges;
  for (int64_t dim : data.shape()) ranges.push_back({0, 1, dim});
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + data.rank() : axes[i];
    ranges[axis] = slice_range(starts[i], ends[i], steps[i], data.dim(axis));
  }
  copy_layout(data, outputs[0], slice_layout(data.shape(), ranges));
}

void expand(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_layout(inputs[0], outputs[0], expand_layout(inputs[0].shape(), outputs[0].shape()));
}

void tile(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_layout(inputs[0], outputs[0], tile_layout(inputs[0].shape(), inputs[1].to_int64s()));
}

void depth_to_space(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const bool column_row_depth = node.attr_string("mode", "DCR") == "CRD";
  copy_layout(
      inputs[0], outputs[0],
      depth_to_space_layout(inputs[0].shape(), node.attr_int("blocksize", 1), column_row_depth));
}

void space_to_depth(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_layout(inputs[0], outputs[0],
              space_to_depth_layout(inputs[0].shape(), node.attr_int("blocksize", 1)));
}

// Elements before `axis` (the outer count) of a shape.
int64_t outer_count(const Shape& shape, int64_t axis) {
  int64_t count = 1;
  for (int64_t d = 0; d < axis; ++d) count *= shape[d];
  return count;
}

// A Concat or Split of one outer index: the whole (its output, or its input) is the pieces end
// to end, copied in one range of the whole's bytes per thread, each range the parts of the
// pieces it covers. One piece per run on one thread took 66 us for a detector's 1x3x320x320
// Split, against 26 for a Neg of the same tensor on both threads (2-vCPU Xeon VM).
void copy_end_to_end(char* whole, const std::vector<char*>& pieces,
                     const std::vector<size_t>& sizes, bool into_whole) {
  int64_t total = 0;
  for (size_t size : sizes) total += static_cast<int64_t>(size);
  parallel_ranges(total, kParallelBytes, [&](int64_t begin, int64_t end) {
    int64_t start = 0;  // of the piece in the whole
    for (size_t i = 0; i < pieces.size(); start += static_cast<int64_t>(sizes[i]), ++i) {
      const int64_t from = std::max(begin, start);
      const int64_t to = std::min(end, start + static_cast<int64_t>(sizes[i]));
      if (from >= to) continue;
      char* part = pieces[i] + (from - start);
      const auto bytes = static_cast<size_t>(to - from);
      if (into_whole)
        std::memcpy(whole + from, part, bytes);
      else
        std::memcpy(part, whole + from, bytes);
    }
  });
}

// Concat and Split move, for each outer index, one contiguous run per input (or output).
void concat(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), out.rank());
  const int64_t outer = outer_count(out.shape(), axis);
  if (outer == 0 || out.numel() == 0) return;
  if (outer == 1) {
    std::vector<char*> pieces;
    std::vector<size_t> sizes;
    for (const Tensor& input : inputs) {
      pieces.push_back(static_cast<char*>(input.raw()));  // read only
      sizes.push_back(input.nbytes());
    }
    copy_end_to_end(static_cast<char*>(out.raw()), pieces, sizes, true);
    return;
  }
  const size_t out_row = out.nbytes() / outer;
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (const Tensor& input : inputs) {
    offsets.push_back(offset);
    offset += input.nbytes() / outer;
  }
  auto* to = static_cast<char*>(out.raw());
#pragma omp parallel for schedule(static) if (outer > 1 && static_cast <int64_t>(out.nbytes()) > \
                                                               kParallelBytes)
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t run = inputs[i].nbytes() / outer;
      std::memcpy(to + o * out_row + offsets[i],
                  static_cast<const char*>(inputs[i].raw()) + o * run, run);
    }
  }
}

void split(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& input = inputs[0];
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), input.rank());
  const int64_t outer = outer_count(input.shape(), axis);
  if (outer == 0 || input.numel() == 0) return;
  if (outer == 1) {
    std::vector<char*> pieces;
    std::vector<size_t> sizes;
    for (Tensor& out : outputs) {
      pieces.push_back(static_cast<char*>(out.raw()));
      sizes.push_back(out.nbytes());
    }
    copy_end_to_end(static_cast<char*>(input.raw()), pieces, sizes, false);  // input read only
    return;
  }
  const size_t in_row = input.nbytes() / outer;
  const auto* from = static_cast<const char*>(input.raw());
#pragma omp parallel for schedule(static) if (outer > 1 && static_cast <int64_t>(input.nbytes()) > \
                                                               kParallelBytes)
  for (int64_t o = 0; o < outer; ++o) {
    size_t offset = 0;
    for (Tensor& out : outputs) {
      const size_t run = out.nbytes() / outer;
      std::memcpy(static_cast<char*>(out.raw()) + o * run, from + o * in_row + offset, run);
      offset += run;
    }
  }
}

}  // namespace

void register_layout_kernels(KernelRegistry& registry) {
  registry.add("Transpose", transpose, Elements::kAny);
  registry.add("Slice", slice, Elements::kAny);
  registry.add("Expand", expand, Elements::kAny);
  registry.add("Tile", tile, Elements::kAny);
  registry.add("DepthToSpace", depth_to_space, Elements::kAny);
  registry.add("SpaceToDepth", space_to_depth, Elements::kAny);
  registry.add("Concat", concat, Elements::kAny);
  registry.add("Split", split, Elements::kAny);
}

}  // namespace tandem::cpu
