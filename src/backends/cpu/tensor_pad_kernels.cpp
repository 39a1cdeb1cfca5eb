// Kernels of Pad (constant, reflect, edge, wrap; negative pads crop) and Trilu.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/tensor_kernels.h"
#include "ir/error.h"

namespace tandem::cpu {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// For each output index along one axis, the source index it copies, or -1 for the constant.
// Negative pads crop: the source is the region [low, high) that remains after cropping.
std::vector<int64_t> source_indices(const Node& node, PadMode mode, int64_t dim, int64_t before,
                                    int64_t out_dim) {
  const int64_t low = std::max<int64_t>(0, -before);
  const int64_t high = std::min(dim, out_dim - before);
  const int64_t length = high - low;
  std::vector<int64_t> map(static_cast<size_t>(out_dim));
  for (int64_t j = 0; j < out_dim; ++j) {
    const int64_t i = j - before;
    if (i >= low && i < high) {
      map[j] = i;
    } else if (mode == PadMode::kConstant) {
      map[j] = -1;
    } else if (length <= 0) {
      throw InputError(node.label() + ": cannot pad an axis that cropping emptied");
    } else if (mode == PadMode::kEdge) {
      map[j] = std::clamp(i, low, high - 1);
    } else if (mode == PadMode::kWrap) {
      map[j] = low + ((i - low) % length + length) % length;
    } else {
      // Reflection without repeating the edge: period 2 * (length - 1).
      const int64_t period = std::max<int64_t>(2 * (length - 1), 1);
      int64_t t = ((i - low) % period + period) % period;
      if (t >= length) t = period - t;
      map[j] = low + t;
    }
  }
  return map;
}

template <typename T>
void pad_typed(const Tensor& input, Tensor& out, const std::vector<std::vector<int64_t>>& maps,
               T constant) {
  const size_t rank = maps.size();
  const T* src = input.data<T>();
  T* dst = out.data<T>();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const std::vector<int64_t> strides = contiguous_strides(input.shape());
  const int64_t inner = out.shape().back();
  const int64_t rows = inner == 0 ? 0 : out.numel() / inner;
  const std::vector<int64_t>& inner_map = maps.back();
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(out.nbytes()) > kParallelBytes)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t offset = 0;
    bool constant_row = false;
    int64_t rest = row;
    for (size_t d = rank - 1; d-- > 0;) {
      const int64_t source = maps[d][rest % out.dim(d)];
      rest /= out.dim(d);
      constant_row |= source < 0;
      offset += source * strides[d];
    }
    T* to = dst + row * inner;
    if (constant_row) {
      std::fill_n(to, inner, constant);
      continue;
    }
    const T* from = src + offset;
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t source = inner_map[j];
      to[j] = source < 0 ? constant : from[source];
    }
  }
}

void pad(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& input = inputs[0];
  Tensor& out = outputs[0];
  const bool has_axes = inputs.size() > 3 && inputs[3].defined();
  const std::vector<int64_t> axes = has_axes ? inputs[3].to_int64s() : std::vector<int64_t>{};
  const std::vector<int64_t> amounts =
      pads_per_axis(input.shape().size(), inputs[1].to_int64s(), axes);
  const auto mode = pad_mode<PadMode>(node);
  std::vector<std::vector<int64_t>> maps;
  for (int64_t d = 0; d < input.rank(); ++d) {
    maps.push_back(source_indices(node, mode, input.dim(d), amounts[d], out.dim(d)));
  }
  const Tensor* constant = inputs.size() > 2 && inputs[2].defined() ? &inputs[2] : nullptr;
  dispatch_by_size(input.dtype(), [&]<typename T>() {
    T value{};
    if (constant) std::memcpy(&value, constant->raw(), sizeof(T));
    pad_typed<T>(input, out, maps, value);
  });
}

void trilu(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& input = inputs[0];
  Tensor& out = outputs[0];
  const int64_t rows = input.dim(input.rank() - 2);
  const int64_t cols = input.dim(input.rank() - 1);
  const bool upper = node.attr_int("upper", 1) != 0;
  const int64_t k_value = inputs.size() > 1 && inputs[1].defined() ? inputs[1].to_int64s()[0] : 0;
  const int64_t k = std::clamp<int64_t>(k_value, -rows - 1, cols + 1);
  const size_t elem = dtype_size(input.dtype());
  const int64_t matrices = rows * cols == 0 ? 0 : input.numel() / (rows * cols);
  const auto* src = static_cast<const char*>(input.raw());
  auto* dst = static_cast<char*>(out.raw());
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(out.nbytes()) > kParallelBytes)
  for (int64_t row = 0; row < matrices * rows; ++row) {
    const int64_t i = row % rows;
    // Kept columns: j >= i + k for the upper triangle, j <= i + k for the lower.
    const int64_t begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
    const int64_t end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
    char* to = dst + row * cols * elem;
    const char* from = src + row * cols * elem;
    std::memset(to, 0, cols * elem);
    if (end > begin) std::memcpy(to + begin * elem, from + begin * elem, (end - begin) * elem);
  }
}

}  // namespace

void register_pad_kernels(KernelRegistry& registry) {
  registry.add("Pad", pad, Elements::kAny);
  registry.add("Trilu", trilu, Elements::kAny);
}

}  // namespace tandem::cpu
