// CPU kernels of the Reduce* ops and ArgMax/ArgMin; the family's register function.
#include <omp.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/reduction_internal.h"
#include "ir/error.h"

namespace tandem::cpu {
namespace {

using reduction::AxisView;
using reduction::kInnerTile;
using reduction::kParallelWork;

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

constexpr bool is_sum_like(Reduce kind) {
  return kind == Reduce::kSum || kind == Reduce::kMean || kind == Reduce::kL1 ||
         kind == Reduce::kL2 || kind == Reduce::kSumSquare || kind == Reduce::kLogSum;
}

// What a reduction accumulates in: double for floats, int64 for integer sums and products (the
// wrap-around is the same as in the narrower type), the element type itself for Max and Min.
template <Reduce kKind, typename T>
using Accumulator =
    std::conditional_t<kKind == Reduce::kMax || kKind == Reduce::kMin, T,
                       std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>;

// Integer sums and products wrap around (as in ONNX Runtime and XLA): computed in the unsigned
// type, since signed overflow is undefined behaviour.
template <typename Acc>
Acc wrap_add(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc> && !std::is_same_v<Acc, bool>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename Acc>
Acc wrap_mul(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc> && !std::is_same_v<Acc, bool>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <Reduce kKind, typename T>
Accumulator<kKind, T> identity() {
  using Acc = Accumulator<kKind, T>;
  if constexpr (kKind == Reduce::kProd) return Acc{1};
  if constexpr (kKind == Reduce::kMax) {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  if constexpr (kKind == Reduce::kMin) {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  }
  return Acc{0};
}

// The contribution of one element to a sum-like reduction.
template <Reduce kKind, typename Acc, typename T>
Acc term(T x) {
  const auto v = static_cast<Acc>(x);
  if constexpr (kKind == Reduce::kL1) return v < 0 ? wrap_mul(v, Acc(-1)) : v;
  if constexpr (kKind == Reduce::kL2 || kKind == Reduce::kSumSquare) return wrap_mul(v, v);
  return v;
}

template <Reduce kKind, typename Acc>
Acc combine(Acc a, Acc b) {
  if constexpr (kKind == Reduce::kProd) return wrap_mul(a, b);
  if constexpr (kKind == Reduce::kMax) return a < b ? b : a;
  if constexpr (kKind == Reduce::kMin) return b < a ? b : a;
  return wrap_add(a, b);
}

template <Reduce kKind, typename T, typename Acc>
T finish(Acc acc, int64_t count) {
  if constexpr (kKind == Reduce::kMean) {
    if constexpr (std::is_floating_point_v<Acc>) return static_cast<T>(acc / count);
    return static_cast<T>(count ? acc / count : 0);
  }
  if constexpr (kKind == Reduce::kL2) return static_cast<T>(std::sqrt(static_cast<double>(acc)));
  if constexpr (kKind == Reduce::kLogSum) return static_cast<T>(std::log(static_cast<double>(acc)));
  return static_cast<T>(acc);
}

// The accumulator of one contiguous row (not finished).
template <Reduce kKind, typename T>
Accumulator<kKind, T> accumulate_row(const T* x, int64_t n) {
  using Acc = Accumulator<kKind, T>;
  if constexpr (is_sum_like(kKind) && std::is_same_v<T, float>) {
    return reduction::blocked_sum(n, [x](int64_t i) { return term<kKind, float>(x[i]); });
  } else if constexpr (is_sum_like(kKind) && std::is_integral_v<Acc>) {
    uint64_t acc = 0;  // wraps, as wrap_add
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<uint64_t>(term<kKind, Acc>(x[i]));
    return static_cast<Acc>(acc);
  } else if constexpr (is_sum_like(kKind)) {
    Acc acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += term<kKind, Acc>(x[i]);
    return acc;
  } else if constexpr (std::is_same_v<T, bool>) {
    bool acc = identity<kKind, T>();
    for (int64_t i = 0; i < n; ++i) acc = combine<kKind>(acc, x[i]);
    return acc;
  } else if constexpr (kKind == Reduce::kMax) {
    Acc acc = identity<kKind, T>();
#pragma omp simd reduction(max : acc)
    for (int64_t i = 0; i < n; ++i) acc = acc < x[i] ? x[i] : acc;
    return acc;
  } else if constexpr (kKind == Reduce::kMin) {
    Acc acc = identity<kKind, T>();
#pragma omp simd reduction(min : acc)
    for (int64_t i = 0; i < n; ++i) acc = x[i] < acc ? x[i] : acc;
    return acc;
  } else {
    Acc acc = 1;
    for (int64_t i = 0; i < n; ++i) acc = wrap_mul(acc, static_cast<Acc>(x[i]));
    return acc;
  }
}

// log(sum(exp(x))) of one contiguous row, shifted by its maximum so that exp cannot overflow.
template <typename T>
T log_sum_exp_row(const T* x, int64_t n) {
  const T peak = accumulate_row<Reduce::kMax, T>(x, n);
  if (!std::isfinite(static_cast<double>(peak))) return peak;  // empty, all -inf, inf or nan
  double sum = 0;
  if constexpr (std::is_same_v<T, float>) {
    sum = reduction::exp_shifted_sum(x, peak, nullptr, n);
  } else {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i] - peak));
  }
  return static_cast<T>(static_cast<double>(peak) + std::log(sum));
}

// Reduces `count` (<= kInnerTile) adjacent columns of an [extent, inner] block into out[0, count).
template <Reduce kKind, typename T>
void reduce_columns(const T* x, int64_t extent, int64_t inner, int64_t count, T* out) {
  if constexpr (kKind == Reduce::kLogSumExp) {
    T peak[kInnerTile];
    std::fill(peak, peak + count, identity<Reduce::kMax, T>());
    for (int64_t r = 0; r < extent; ++r) {
      for (int64_t j = 0; j < count; ++j) {
        peak[j] = combine<Reduce::kMax>(peak[j], x[r * inner + j]);
      }
    }
    double sum[kInnerTile] = {};
    for (int64_t r = 0; r < extent; ++r) {
      for (int64_t j = 0; j < count; ++j) sum[j] += std::exp(double(x[r * inner + j] - peak[j]));
    }
    for (int64_t j = 0; j < count; ++j) {
      const bool finite = std::isfinite(static_cast<double>(peak[j]));
      out[j] = finite ? static_cast<T>(static_cast<double>(peak[j]) + std::log(sum[j])) : peak[j];
    }
  } else {
    using Acc = Accumulator<kKind, T>;
    Acc acc[kInnerTile];
    std::fill(acc, acc + count, identity<kKind, T>());
    for (int64_t r = 0; r < extent; ++r) {
      const T* row = x + r * inner;
      if constexpr (is_sum_like(kKind)) {
        for (int64_t j = 0; j < count; ++j) acc[j] = wrap_add(acc[j], term<kKind, Acc>(row[j]));
      } else {
        for (int64_t j = 0; j < count; ++j) acc[j] = combine<kKind>(acc[j], Acc(row[j]));
      }
    }
    for (int64_t j = 0; j < count; ++j) out[j] = finish<kKind, T>(acc[j], extent);
  }
}

template <Reduce kKind, typename T>
T reduce_row(const T* x, int64_t n) {
  if constexpr (kKind == Reduce::kLogSumExp) {
    return log_sum_exp_row(x, n);
  } else {
    return finish<kKind, T>(accumulate_row<kKind>(x, n), n);
  }
}

// One long row on all threads: per-thread partial accumulators, combined in order.
template <Reduce kKind, typename T>
T reduce_row_in_parallel(const T* x, int64_t n) {
  using Acc = Accumulator<kKind, T>;
  const int threads = omp_get_max_threads();
  std::vector<Acc> partial(static_cast<size_t>(threads), identity<kKind, T>());
  const int64_t chunk = (n + threads - 1) / threads;
#pragma omp parallel for
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = std::min(n, t * chunk);
    partial[static_cast<size_t>(t)] =
        accumulate_row<kKind>(x + begin, std::min(n, begin + chunk) - begin);
  }
  Acc acc = identity<kKind, T>();
  for (Acc p : partial) acc = combine<kKind>(acc, p);
  return finish<kKind, T>(acc, n);
}

template <Reduce kKind, typename T>
void reduce_view(const T* x, const AxisView& view, T* out) {
  const int64_t work = view.outer * view.extent * view.inner;
  if (view.inner == 1) {
    if (kKind != Reduce::kLogSumExp && view.outer < omp_get_max_threads() && work > kParallelWork) {
      for (int64_t o = 0; o < view.outer; ++o) {
        out[o] = reduce_row_in_parallel<kKind>(x + o * view.extent, view.extent);
      }
      return;
    }
#pragma omp parallel for if (work > kParallelWork)
    for (int64_t o = 0; o < view.outer; ++o) {
      out[o] = reduce_row<kKind>(x + o * view.extent, view.extent);
    }
    return;
  }
  const int64_t tiles = view.tiles();
#pragma omp parallel for if (work > kParallelWork)
  for (int64_t task = 0; task < view.outer * tiles; ++task) {
    const int64_t o = task / tiles;
    const int64_t first = (task % tiles) * kInnerTile;
    const int64_t count = std::min(kInnerTile, view.inner - first);
    reduce_columns<kKind>(x + o * view.extent * view.inner + first, view.extent, view.inner, count,
                          out + o * view.inner + first);
  }
}

// Per dimension, whether the node reduces it: axes from the input when present, else from the
// attribute (infer validated the form for the opset). Axis values may only be known now.
std::vector<bool> reduced_dims(const Node& node, std::span<const Tensor> inputs) {
  const int64_t rank = inputs[0].rank();
  const bool from_input = inputs.size() > 1 && inputs[1].defined();
  const std::vector<int64_t> axes = from_input ? inputs[1].to_int64s() : node.attr_ints("axes");
  if (axes.empty()) {
    return std::vector<bool>(static_cast<size_t>(rank),
                             node.attr_int("noop_with_empty_axes", 0) == 0);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      throw InputError(node.label() + ": axis " + std::to_string(axis) +
                       " is out of range for rank " + std::to_string(rank));
    }
    reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  }
  return reduced;
}

// Copies x into dst with its dims reordered; `sizes` and `strides` (of x) are in dst's order.
template <typename T>
void permute_copy(const T* x, T* dst, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides) {
  const size_t last = sizes.size() - 1;
  std::vector<int64_t> coord(sizes.size(), 0);
  int64_t offset = 0;
  for (int64_t rows = numel(sizes) / sizes[last]; rows > 0; --rows) {
    const T* row = x + offset;
    if (strides[last] == 1) {
      std::copy(row, row + sizes[last], dst);
    } else {
      for (int64_t i = 0; i < sizes[last]; ++i) dst[i] = row[i * strides[last]];
    }
    dst += sizes[last];
    for (size_t d = last; d-- > 0;) {
      offset += strides[d];
      if (++coord[d] < sizes[d]) break;
      offset -= coord[d] * strides[d];
      coord[d] = 0;
    }
  }
}

template <Reduce kKind, typename T>
void run_reduce_typed(const Node& node, std::span<const Tensor> inputs, Tensor& output) {
  const Tensor& data = inputs[0];
  T* out = output.data<T>();
  const std::vector<bool> reduced = reduced_dims(node, inputs);
  if (data.numel() == 0) {  // every output element reduces an empty set
    std::fill(out, out + output.numel(), reduce_row<kKind, T>(nullptr, 0));
    return;
  }
  // Merge neighbouring dims that are alike; size-1 dims are neither.
  struct Run {
    int64_t size;
    int64_t stride;
    bool reduced;
  };
  std::vector<Run> runs;
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (data.dim(static_cast<int64_t>(d)) == 1) continue;
    if (!runs.empty() && runs.back().reduced == reduced[d]) {
      runs.back().size *= data.dim(static_cast<int64_t>(d));
      runs.back().stride = strides[d];
    } else {
      runs.push_back({data.dim(static_cast<int64_t>(d)), strides[d], reduced[d]});
    }
  }
  const auto reduced_runs =
      std::count_if(runs.begin(), runs.end(), [](const Run& r) { return r.reduced; });
  AxisView view;
  if (reduced_runs == 0) {
    view.inner = data.numel();
  } else if (reduced_runs == 1) {
    for (const Run& run : runs) {
      (run.reduced ? view.extent : view.extent > 1 ? view.inner : view.outer) *= run.size;
    }
  } else {
    // Interleaved reduced and kept dims: copy into [kept..., reduced..., last kept] order, which
    // keeps the innermost run innermost so that the copy moves contiguous rows.
    const bool kept_last = !runs.back().reduced;
    std::vector<Run> order;
    for (size_t i = 0; i + (kept_last ? 1 : 0) < runs.size(); ++i) {
      if (!runs[i].reduced) order.push_back(runs[i]);
    }
    for (const Run& run : runs) {
      if (run.reduced) order.push_back(run);
    }
    if (kept_last) order.push_back(runs.back());
    std::vector<int64_t> sizes;
    std::vector<int64_t> source_strides;
    for (size_t i = 0; i < order.size(); ++i) {
      sizes.push_back(order[i].size);
      source_strides.push_back(order[i].stride);
      const bool inner = kept_last && i + 1 == order.size();
      (order[i].reduced ? view.extent : inner ? view.inner : view.outer) *= order[i].size;
    }
    Tensor transposed = Tensor::allocate(data.dtype(), data.shape());
    permute_copy(data.data<T>(), transposed.data<T>(), sizes, source_strides);
    reduce_view<kKind>(transposed.data<T>(), view, out);
    return;
  }
  reduce_view<kKind>(data.data<T>(), view, out);
}

template <Reduce kKind>
void run_reduce(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  dispatch_numeric(inputs[0].dtype(), [&]<typename T>() {
    constexpr bool kOrdersOnly = std::is_same_v<T, bool> || sizeof(T) == 1;
    if constexpr (kOrdersOnly && kKind != Reduce::kMax && kKind != Reduce::kMin) {
      throw InputError(node.label() + ": no CPU kernel for " +
                       std::string(dtype_name(inputs[0].dtype())));
    } else {
      run_reduce_typed<kKind, T>(node, inputs, outputs[0]);
    }
  });
}

// The index of the best element of a contiguous row: a vectorised extreme, then a search for it.
template <bool kMax, typename T>
int64_t arg_reduce_row(const T* x, int64_t n, bool last) {
  const T best = kMax ? accumulate_row<Reduce::kMax>(x, n) : accumulate_row<Reduce::kMin>(x, n);
  if (last) {
    for (int64_t i = n; i-- > 0;) {
      if (x[i] == best) return i;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] == best) return i;
    }
  }
  return 0;  // only NaNs
}

// The index of the best element along one axis; ties go to the first (or last) index.
template <bool kMax, typename T>
void arg_reduce_typed(const Tensor& data, int64_t axis, bool last, int64_t* out) {
  const AxisView view = reduction::view_around(data.shape(), static_cast<size_t>(axis),
                                               static_cast<size_t>(axis) + 1);
  const T* x = data.data<T>();
  const auto better = [last](T candidate, T best) {
    if constexpr (kMax) return last ? candidate >= best : candidate > best;
    return last ? candidate <= best : candidate < best;
  };
  if (view.inner == 1) {
#pragma omp parallel for if (data.numel() > kParallelWork)
    for (int64_t o = 0; o < view.outer; ++o) {
      out[o] = arg_reduce_row<kMax>(x + o * view.extent, view.extent, last);
    }
    return;
  }
  const int64_t tiles = view.tiles();
#pragma omp parallel for if (data.numel() > kParallelWork)
  for (int64_t task = 0; task < view.outer * tiles; ++task) {
    const int64_t o = task / tiles;
    const int64_t first = (task % tiles) * kInnerTile;
    const int64_t count = std::min(kInnerTile, view.inner - first);
    const T* block = x + o * view.extent * view.inner + first;
    T best[kInnerTile];
    int64_t index[kInnerTile] = {};
    std::copy(block, block + count, best);
    for (int64_t r = 1; r < view.extent; ++r) {
      const T* row = block + r * view.inner;
      for (int64_t j = 0; j < count; ++j) {
        if (better(row[j], best[j])) {
          best[j] = row[j];
          index[j] = r;
        }
      }
    }
    std::copy(index, index + count, out + o * view.inner + first);
  }
}

template <bool kMax>
void run_arg_reduce(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), data.rank());
  if (data.dim(axis) == 0) {
    throw InputError(node.label() + ": cannot pick an index on an empty axis");
  }
  const bool last = node.attr_int("select_last_index", 0) != 0;
  dispatch_numeric(data.dtype(), [&]<typename T>() {
    arg_reduce_typed<kMax, T>(data, axis, last, outputs[0].data<int64_t>());
  });
}

}  // namespace

void register_reduction_kernels(KernelRegistry& registry) {
  registry.add("ReduceSum", &run_reduce<Reduce::kSum>);
  registry.add("ReduceMean", &run_reduce<Reduce::kMean>);
  registry.add("ReduceMax", &run_reduce<Reduce::kMax>);
  registry.add("ReduceMin", &run_reduce<Reduce::kMin>);
  registry.add("ReduceProd", &run_reduce<Reduce::kProd>);
  registry.add("ReduceL1", &run_reduce<Reduce::kL1>);
  registry.add("ReduceL2", &run_reduce<Reduce::kL2>);
  registry.add("ReduceSumSquare", &run_reduce<Reduce::kSumSquare>);
  registry.add("ReduceLogSum", &run_reduce<Reduce::kLogSum>);
  registry.add("ReduceLogSumExp", &run_reduce<Reduce::kLogSumExp>);
  registry.add("ArgMax", &run_arg_reduce<true>);
  registry.add("ArgMin", &run_arg_reduce<false>);
  reduction::register_softmax_kernels(registry);
  reduction::register_normalization_kernels(registry);
  reduction::register_cumsum_kernel(registry);
}

}  // namespace tandem::cpu
