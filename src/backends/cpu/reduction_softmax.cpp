// CPU kernels of Softmax and LogSoftmax along one axis.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/reduction_internal.h"
#include "ir/error.h"

namespace tandem::cpu::reduction {
namespace {

// exp is several times dearer than a load, so softmax goes parallel at a quarter of the work.
constexpr int64_t kSoftmaxParallelWork = kParallelWork / 4;

template <typename T>
T row_max(const T* x, int64_t n) {
  T peak = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : peak)
  for (int64_t i = 0; i < n; ++i) peak = peak < x[i] ? x[i] : peak;
  return peak;
}

// Softmax of one contiguous row. A row of only -inf gives NaN, as in ONNX Runtime and PyTorch.
template <bool kLog, typename T>
void softmax_row(const T* x, T* y, int64_t n) {
  const T peak = row_max(x, n);
  double sum = 0;
  if constexpr (std::is_same_v<T, float>) {
    sum = exp_shifted_sum(x, peak, kLog ? nullptr : y, n);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T e = std::exp(x[i] - peak);
      if constexpr (!kLog) y[i] = e;
      sum += e;
    }
  }
  if constexpr (kLog) {
    const auto log_sum = static_cast<T>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - peak) - log_sum;
  } else {
    const auto scale = static_cast<T>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  }
}

// Softmax over the rows of an [extent, inner] block, for `count` (<= kInnerTile) columns.
template <bool kLog, typename T>
void softmax_columns(const T* x, T* y, int64_t extent, int64_t inner, int64_t count) {
  T peak[kInnerTile];
  std::fill(peak, peak + count, -std::numeric_limits<T>::infinity());
  for (int64_t r = 0; r < extent; ++r) {
    const T* row = x + r * inner;
    for (int64_t j = 0; j < count; ++j) peak[j] = peak[j] < row[j] ? row[j] : peak[j];
  }
  double sum[kInnerTile] = {};
  for (int64_t r = 0; r < extent; ++r) {
    const T* row = x + r * inner;
    T* out = y + r * inner;
    for (int64_t j = 0; j < count; ++j) out[j] = row[j] - peak[j];
    if constexpr (std::is_same_v<T, float>) {
      exp_shifted_sum(out, 0.0f, out, count);
    } else {
      for (int64_t j = 0; j < count; ++j) out[j] = std::exp(out[j]);
    }
    for (int64_t j = 0; j < count; ++j) sum[j] += out[j];
  }
  T factor[kInnerTile];
  for (int64_t j = 0; j < count; ++j) {
    factor[j] = static_cast<T>(kLog ? std::log(sum[j]) : 1.0 / sum[j]);
  }
  for (int64_t r = 0; r < extent; ++r) {
    const T* row = x + r * inner;
    T* out = y + r * inner;
    if constexpr (kLog) {
      for (int64_t j = 0; j < count; ++j) out[j] = (row[j] - peak[j]) - factor[j];
    } else {
      for (int64_t j = 0; j < count; ++j) out[j] *= factor[j];
    }
  }
}

template <bool kLog>
void run_softmax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", -1), data.rank()));
  const AxisView view = view_around(data.shape(), axis, axis + 1);
  const int64_t work = data.numel();
  const auto run = [&]<typename T>() {
    const T* x = data.data<T>();
    T* y = outputs[0].data<T>();
    if (view.inner == 1) {
#pragma omp parallel for if (work > kSoftmaxParallelWork)
      for (int64_t o = 0; o < view.outer; ++o) {
        softmax_row<kLog>(x + o * view.extent, y + o * view.extent, view.extent);
      }
      return;
    }
    const int64_t tiles = view.tiles();
#pragma omp parallel for if (work > kSoftmaxParallelWork)
    for (int64_t task = 0; task < view.outer * tiles; ++task) {
      const int64_t offset =
          (task / tiles) * view.extent * view.inner + (task % tiles) * kInnerTile;
      const int64_t count = std::min(kInnerTile, view.inner - (task % tiles) * kInnerTile);
      softmax_columns<kLog>(x + offset, y + offset, view.extent, view.inner, count);
    }
  };
  dispatch_float(node, data.dtype(), run);
}

}  // namespace

void register_softmax_kernels(KernelRegistry& registry) {
  // Rows (or tiles of columns) in order, split when the work exceeds the threshold.
  registry.add("Softmax", &run_softmax<false>, Elements::kNumeric, kSoftmaxParallelWork + 1);
  registry.add("LogSoftmax", &run_softmax<true>, Elements::kNumeric, kSoftmaxParallelWork + 1);
}

}  // namespace tandem::cpu::reduction
