// CPU kernel of CumSum: running sums along one axis, optionally exclusive and reversed.
#include <type_traits>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/reduction_internal.h"
#include "ir/error.h"

namespace tandem::cpu::reduction {
namespace {

// Scans `count` (<= kInnerTile) columns of an [extent, inner] block; float sums run in double.
template <typename T>
void scan_columns(const T* x, T* y, int64_t extent, int64_t inner, int64_t count, bool exclusive,
                  bool reverse) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  Acc running[kInnerTile] = {};
  for (int64_t step = 0; step < extent; ++step) {
    const int64_t r = reverse ? extent - 1 - step : step;
    const T* in = x + r * inner;
    T* out = y + r * inner;
    if (exclusive) {
      for (int64_t j = 0; j < count; ++j) {
        out[j] = static_cast<T>(running[j]);
        running[j] += in[j];
      }
    } else {
      for (int64_t j = 0; j < count; ++j) {
        running[j] += in[j];
        out[j] = static_cast<T>(running[j]);
      }
    }
  }
}

// Scans one contiguous row (inner = 1).
template <typename T>
void scan_row(const T* x, T* y, int64_t n, bool exclusive, bool reverse) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  Acc running = 0;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = reverse ? n - 1 - step : step;
    if (exclusive) {
      y[i] = static_cast<T>(running);
      running += x[i];
    } else {
      running += x[i];
      y[i] = static_cast<T>(running);
    }
  }
}

void run_cumsum(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const int64_t axis_value = inputs[1].to_int64s().at(0);
  const int64_t rank = data.rank();
  if (axis_value < -rank || axis_value >= rank) {
    throw InputError(node.label() + ": axis " + std::to_string(axis_value) +
                     " is out of range for rank " + std::to_string(rank));
  }
  const auto axis = static_cast<size_t>(axis_value < 0 ? axis_value + rank : axis_value);
  const AxisView view = view_around(data.shape(), axis, axis + 1);
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;
  const auto run = [&]<typename T>() {
    if (view.inner == 1) {
#pragma omp parallel for if (data.numel() > kParallelWork)
      for (int64_t o = 0; o < view.outer; ++o) {
        scan_row(data.data<T>() + o * view.extent, outputs[0].data<T>() + o * view.extent,
                 view.extent, exclusive, reverse);
      }
      return;
    }
    const int64_t tiles = view.tiles();
#pragma omp parallel for if (data.numel() > kParallelWork)
    for (int64_t task = 0; task < view.outer * tiles; ++task) {
      const int64_t first = (task % tiles) * kInnerTile;
      const int64_t offset = (task / tiles) * view.extent * view.inner + first;
      scan_columns(data.data<T>() + offset, outputs[0].data<T>() + offset, view.extent, view.inner,
                   std::min(kInnerTile, view.inner - first), exclusive, reverse);
    }
  };
  switch (data.dtype()) {
    case DType::kFloat32: return run.operator()<float>();
    case DType::kFloat64: return run.operator()<double>();
    case DType::kInt32: return run.operator()<int32_t>();
    case DType::kInt64: return run.operator()<int64_t>();
    default:
      throw InputError(node.label() + ": no CPU kernel for " +
                       std::string(dtype_name(data.dtype())));
  }
}

}  // namespace

void register_cumsum_kernel(KernelRegistry& registry) { registry.add("CumSum", &run_cumsum); }

}  // namespace tandem::cpu::reduction
