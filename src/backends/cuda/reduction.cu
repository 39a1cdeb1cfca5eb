// CUDA kernels of the reduction family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax, the
// normalisations and CumSum. Each output element (or line of a normalisation) is worked on by
// one block, whose threads stride through its elements and combine through warp shuffles and
// shared memory, or by one thread when lines are short or neighbouring lines are neighbours in
// memory. Semantics follow the CPU backend (backends/cpu/reduction*.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/reduction_launch.h"

namespace tandem::cuda {
namespace {

[[noreturn]] void unsupported(const char* what) {
  throw std::invalid_argument(std::string("no CUDA reduction kernel for ") + what);
}

// ---- Scalar math ----

__device__ float exp_of(float x) { return expf(x); }
__device__ double exp_of(double x) { return exp(x); }
__device__ float log_of(float x) { return logf(x); }
__device__ double log_of(double x) { return log(x); }
__device__ float sqrt_of(float x) { return sqrtf(x); }
__device__ double sqrt_of(double x) { return sqrt(x); }

// Max and Min that propagate NaN.
template <typename A>
__device__ A max_of(A a, A b) {
  return (b > a || b != b) ? b : a;
}
template <typename A>
__device__ A min_of(A a, A b) {
  return (b < a || b != b) ? b : a;
}

// The lowest and highest values of a storage type (infinities for floats), as Acc.
template <typename T, typename Acc>
__device__ Acc lowest_as() {
  if constexpr (kIsFloat<T>) {
    return static_cast<Acc>(-INFINITY);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<Acc>(INT64_MIN);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<Acc>(INT32_MIN);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return static_cast<Acc>(INT8_MIN);
  } else {
    return Acc{0};  // uint8, bool
  }
}
template <typename T, typename Acc>
__device__ Acc highest_as() {
  if constexpr (kIsFloat<T>) {
    return static_cast<Acc>(INFINITY);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<Acc>(INT64_MAX);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<Acc>(INT32_MAX);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return static_cast<Acc>(INT8_MAX);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<Acc>(UINT8_MAX);
  } else {
    return Acc{1};  // bool
  }
}

// Element offset of dense index `index` in a strided view.
__device__ int64_t offset_of(const Dims& dims, int64_t index) {
  if (dims.rank == 0) return 0;
  int64_t offset = 0;
  for (int d = dims.rank - 1; d > 0; --d) {
    offset += (index % dims.size[d]) * dims.stride[d];
    index /= dims.size[d];
  }
  return offset + index * dims.stride[0];
}

// Offset of the first element of line `line` of an AxisView; its elements are `inner` apart.
__device__ int64_t line_start(const AxisView& view, int64_t line) {
  return (line / view.inner) * view.extent * view.inner + line % view.inner;
}

// ---- Teams: who works on one line ----

constexpr unsigned kFullMask = 0xffffffffu;

template <typename V>
__device__ V shuffle_down(V value, int offset) {
  return __shfl_down_sync(kFullMask, value, offset);
}

// A candidate of ArgMax/ArgMin; index -1 for none. No initialisers: it lives in shared memory.
template <typename Acc>
struct Candidate {
  Acc value;
  int64_t index;
};

template <typename Acc>
__device__ Candidate<Acc> shuffle_down(Candidate<Acc> candidate, int offset) {
  return {shuffle_down(candidate.value, offset), shuffle_down(candidate.index, offset)};
}

template <typename V, typename Combine>
__device__ V warp_reduce(V value, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = combine(value, shuffle_down(value, offset));
  }
  return value;
}

// The combination of every thread's value, returned to all threads (blockDim.x is a multiple
// of 32, at most 1024).
template <typename V, typename Combine>
__device__ V block_reduce(V value, V identity, Combine combine) {
  __shared__ V partial[32];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  value = warp_reduce(value, combine);
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = warp_reduce(lane < blockDim.x / 32 ? partial[lane] : identity, combine);
    if (lane == 0) partial[0] = value;
  }
  __syncthreads();
  value = partial[0];
  __syncthreads();  // partial is reused by the next call
  return value;
}

// One block per line: its threads stride through the line's elements.
struct BlockTeam {
  __device__ static int64_t first_line() { return blockIdx.x; }
  __device__ static int64_t line_step() { return gridDim.x; }
  __device__ static int64_t first() { return threadIdx.x; }
  __device__ static int64_t step() { return blockDim.x; }
  __device__ static bool leader() { return threadIdx.x == 0; }
  template <typename V, typename Combine>
  __device__ static V all(V value, V identity, Combine combine) {
    return block_reduce(value, identity, combine);
  }
};

// One thread per line.
struct ThreadTeam {
  __device__ static int64_t first_line() { return first_index(); }
  __device__ static int64_t line_step() { return grid_stride(); }
  __device__ static int64_t first() { return 0; }
  __device__ static int64_t step() { return 1; }
  __device__ static bool leader() { return true; }
  template <typename V, typename Combine>
  __device__ static V all(V value, V, Combine) {
    return value;
  }
};

// The most threads plan_lines gives a block (32 warps, as block_reduce and block_scan take);
// the kernels are built to fit it.
constexpr unsigned kMaxThreads = 1024;

struct LineLaunch {
  bool per_thread;
  unsigned blocks;
  unsigned threads;
};

// A thread per line when lines are short, or when they are not contiguous but there are
// enough of them that neighbouring threads read neighbouring elements; else a block per line,
// sized so that each thread takes about 8 elements.
LineLaunch plan_lines(int64_t lines, int64_t count, bool contiguous) {
  if (count <= 16 || (!contiguous && lines >= 16384)) {
    return {true, blocks_for(lines), static_cast<unsigned>(kThreads)};
  }
  unsigned threads = 32;
  while (threads < kMaxThreads && threads * int64_t{8} < count) threads *= 2;
  return {false, static_cast<unsigned>(std::min(lines, kMaxBlocks)), threads};
}

// Calls launch(team) with the team type of `plan`.
template <typename Launch>
void with_team(const LineLaunch& plan, Launch&& launch) {
  if (plan.per_thread) {
    launch(ThreadTeam{});
  } else {
    launch(BlockTeam{});
  }
}

bool innermost_is_contiguous(const Dims& dims) {
  return dims.rank > 0 && dims.stride[dims.rank - 1] == 1;
}

// ---- Reduce* ----

// What a reduction accumulates: float (double for float64) for floats; for integers int64 for
// sums and products (wrapping as the narrower type would), an int wide enough for Max and Min,
// double for LogSumExp.
template <ReduceOp kOp, typename T>
struct Reducer {
  static constexpr bool kOrders = kOp == ReduceOp::kMax || kOp == ReduceOp::kMin;
  using Acc = std::conditional_t<
      kIsFloat<T>, Compute<T>,
      std::conditional_t<kOp == ReduceOp::kLogSumExp, double,
                         std::conditional_t<kOrders && sizeof(T) < 8, int32_t, int64_t>>>;

  __device__ static Acc identity() {
    if constexpr (kOp == ReduceOp::kProd) {
      return Acc{1};
    } else if constexpr (kOp == ReduceOp::kMax) {
      return lowest_as<T, Acc>();
    } else if constexpr (kOp == ReduceOp::kMin) {
      return highest_as<T, Acc>();
    } else {
      return Acc{0};
    }
  }

  // The contribution of one element.
  __device__ static Acc term(T x) {
    const auto v = static_cast<Acc>(widen(x));
    if constexpr (kOp == ReduceOp::kL1) {
      return v < 0 ? wrap_mul(v, Acc(-1)) : v;
    } else if constexpr (kOp == ReduceOp::kL2 || kOp == ReduceOp::kSumSquare) {
      return wrap_mul(v, v);
    } else {
      return v;
    }
  }

  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (kOp == ReduceOp::kProd) {
      return wrap_mul(a, b);
    } else if constexpr (kOp == ReduceOp::kMax) {
      return max_of(a, b);
    } else if constexpr (kOp == ReduceOp::kMin) {
      return min_of(a, b);
    } else {
      return wrap_add(a, b);
    }
  }

  __device__ static T finish(Acc acc, int64_t count) {
    if constexpr (kOp == ReduceOp::kMean) {
      if constexpr (kIsFloat<T>) return narrow<T>(acc / static_cast<Acc>(count));
      return static_cast<T>(count ? acc / count : 0);
    } else if constexpr (kOp == ReduceOp::kL2) {
      if constexpr (kIsFloat<T>) return narrow<T>(sqrt_of(acc));
      return static_cast<T>(sqrt(static_cast<double>(acc)));
    } else if constexpr (kOp == ReduceOp::kLogSum) {
      if constexpr (kIsFloat<T>) return narrow<T>(log_of(acc));
      return static_cast<T>(log(static_cast<double>(acc)));
    } else {
      return narrow<T>(acc);
    }
  }
};

template <typename Team, ReduceOp kOp, typename T>
__global__ void __launch_bounds__(kMaxThreads)
    reduce_kernel(const T* in, ReduceLayout layout, T* out, int64_t outputs, int64_t count) {
  using R = Reducer<kOp, T>;
  using Acc = typename R::Acc;
  for (int64_t o = Team::first_line(); o < outputs; o += Team::line_step()) {
    const T* base = in + offset_of(layout.kept, o);
    if constexpr (kOp == ReduceOp::kLogSumExp) {
      // Shifted by the maximum so that exp cannot overflow; an infinite or NaN maximum (or an
      // empty set, whose maximum is -inf) is the result.
      const auto take_max = [](Acc a, Acc b) { return max_of(a, b); };
      const auto add = [](Acc a, Acc b) { return a + b; };
      const Acc low = lowest_as<float, Acc>();
      Acc peak = low;
      for (int64_t r = Team::first(); r < count; r += Team::step()) {
        peak = max_of(peak, static_cast<Acc>(widen(base[offset_of(layout.reduced, r)])));
      }
      peak = Team::all(peak, low, take_max);
      const bool finite = isfinite(peak);
      Acc sum = 0;
      for (int64_t r = Team::first(); finite && r < count; r += Team::step()) {
        sum += exp_of(static_cast<Acc>(widen(base[offset_of(layout.reduced, r)])) - peak);
      }
      sum = Team::all(sum, Acc{0}, add);
      if (Team::leader()) out[o] = narrow<T>(finite ? peak + log_of(sum) : peak);
    } else {
      const auto combine = [](Acc a, Acc b) { return R::combine(a, b); };
      Acc acc = R::identity();
      for (int64_t r = Team::first(); r < count; r += Team::step()) {
        acc = R::combine(acc, R::term(base[offset_of(layout.reduced, r)]));
      }
      acc = Team::all(acc, R::identity(), combine);
      if (Team::leader()) out[o] = R::finish(acc, count);
    }
  }
}

template <ReduceOp kOp, typename T>
constexpr bool reduce_accepts() {
  if constexpr (kOp == ReduceOp::kMax || kOp == ReduceOp::kMin) return true;
  return kIsFloat<T> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
}

template <ReduceOp kOp>
void run_reduce(Elem elem, const void* in, const ReduceLayout& layout, void* out,
                cudaStream_t stream) {
  const int64_t outputs = element_count(layout.kept);
  const int64_t count = element_count(layout.reduced);
  if (outputs == 0) return;
  const LineLaunch plan = plan_lines(outputs, count, innermost_is_contiguous(layout.reduced));
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (reduce_accepts<kOp, T>()) {
      with_team(plan, [&](auto team) {
        reduce_kernel<decltype(team), kOp, T><<<plan.blocks, plan.threads, 0, stream>>>(
            static_cast<const T*>(in), layout, static_cast<T*>(out), outputs, count);
      });
    } else {
      unsupported("this reduction and element type");
    }
  });
}

// ---- ArgMax, ArgMin ----

// Which of two candidates wins: the better value, NaN losing to any number; on ties the lower
// index (the higher with select_last); two NaNs keep the lower index.
template <typename Acc>
__device__ Candidate<Acc> better_of(Candidate<Acc> a, Candidate<Acc> b, bool argmax,
                                    bool select_last) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const bool a_nan = a.value != a.value;
  const bool b_nan = b.value != b.value;
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return a.index < b.index ? a : b;
    return a_nan ? b : a;
  }
  if (a.value == b.value) return (select_last ? b.index > a.index : b.index < a.index) ? b : a;
  return (argmax ? b.value > a.value : b.value < a.value) ? b : a;
}

template <typename T>
using ArgAcc = std::conditional_t<kIsFloat<T>, Compute<T>,
                                  std::conditional_t<sizeof(T) < 8, int32_t, int64_t>>;

template <typename Team, typename T>
__global__ void __launch_bounds__(kMaxThreads)
    arg_reduce_kernel(const T* in, ReduceLayout layout, int64_t* out, int64_t outputs,
                      int64_t count, bool argmax, bool select_last) {
  using Acc = ArgAcc<T>;
  using Best = Candidate<Acc>;
  const auto better = [argmax, select_last](Best a, Best b) {
    return better_of(a, b, argmax, select_last);
  };
  for (int64_t o = Team::first_line(); o < outputs; o += Team::line_step()) {
    const T* base = in + offset_of(layout.kept, o);
    Best best{Acc{0}, -1};
    for (int64_t r = Team::first(); r < count; r += Team::step()) {
      best = better(best, Best{static_cast<Acc>(widen(base[offset_of(layout.reduced, r)])), r});
    }
    best = Team::all(best, Best{Acc{0}, -1}, better);
    if (Team::leader()) out[o] = best.index < 0 ? 0 : best.index;
  }
}

// ---- Softmax, LogSoftmax ----

// A line of only -inf gives NaN, as on the CPU backend.
template <typename Team, typename T>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_kernel(const T* in, T* out, AxisView view, int64_t lines, bool log_softmax) {
  using Acc = Compute<T>;
  const auto take_max = [](Acc a, Acc b) { return max_of(a, b); };
  const auto add = [](Acc a, Acc b) { return a + b; };
  const int64_t stride = view.inner;
  for (int64_t line = Team::first_line(); line < lines; line += Team::line_step()) {
    const int64_t start = line_start(view, line);
    const T* x = in + start;
    T* y = out + start;
    const Acc low = lowest_as<float, Acc>();
    Acc peak = low;
    for (int64_t k = Team::first(); k < view.extent; k += Team::step()) {
      peak = max_of(peak, widen(x[k * stride]));
    }
    peak = Team::all(peak, low, take_max);
    Acc sum = 0;
    for (int64_t k = Team::first(); k < view.extent; k += Team::step()) {
      sum += exp_of(widen(x[k * stride]) - peak);
    }
    sum = Team::all(sum, Acc{0}, add);
    if (log_softmax) {
      const Acc log_sum = log_of(sum);
      for (int64_t k = Team::first(); k < view.extent; k += Team::step()) {
        y[k * stride] = narrow<T>((widen(x[k * stride]) - peak) - log_sum);
      }
    } else {
      const Acc scale = Acc{1} / sum;
      for (int64_t k = Team::first(); k < view.extent; k += Team::step()) {
        y[k * stride] = narrow<T>(exp_of(widen(x[k * stride]) - peak) * scale);
      }
    }
  }
}

// ---- LayerNormalization, InstanceNormalization ----

struct NormArgs {
  NormParam scale;
  NormParam bias;
  int64_t channels;  // > 0: one scale and bias per row's channel (InstanceNormalization)
  double epsilon;
  float* mean;  // optional outputs, one per row
  float* inv_std;
};

// Mean, then the mean squared deviation from it in a second pass (E[x^2] - E[x]^2 would cancel).
template <typename Team, typename T>
__global__ void __launch_bounds__(kMaxThreads)
    normalize_kernel(const T* in, T* out, int64_t rows, int64_t size, NormArgs args) {
  using Acc = Compute<T>;
  const auto add = [](Acc a, Acc b) { return a + b; };
  for (int64_t row = Team::first_line(); row < rows; row += Team::line_step()) {
    const T* x = in + row * size;
    T* y = out + row * size;
    Acc sum = 0;
    for (int64_t k = Team::first(); k < size; k += Team::step()) sum += widen(x[k]);
    const Acc mean = Team::all(sum, Acc{0}, add) / static_cast<Acc>(size);
    Acc squares = 0;
    for (int64_t k = Team::first(); k < size; k += Team::step()) {
      const Acc d = widen(x[k]) - mean;
      squares += d * d;
    }
    const Acc variance = Team::all(squares, Acc{0}, add) / static_cast<Acc>(size);
    const Acc inv_std = Acc{1} / sqrt_of(variance + static_cast<Acc>(args.epsilon));
    if (Team::leader() && args.mean) args.mean[row] = static_cast<float>(mean);
    if (Team::leader() && args.inv_std) args.inv_std[row] = static_cast<float>(inv_std);
    const NormParam& scale = args.scale;
    const NormParam& bias = args.bias;
    if (args.channels > 0) {
      const int64_t c = row % args.channels;
      const Acc gamma = load_as<Acc>(scale.data, scale.elem, c);
      const Acc beta = bias.data ? load_as<Acc>(bias.data, bias.elem, c) : Acc{0};
      for (int64_t k = Team::first(); k < size; k += Team::step()) {
        y[k] = narrow<T>((widen(x[k]) - mean) * inv_std * gamma + beta);
      }
    } else {
      for (int64_t k = Team::first(); k < size; k += Team::step()) {
        const Acc gamma = load_as<Acc>(scale.data, scale.elem, offset_of(scale.view, k));
        const Acc beta =
            bias.data ? load_as<Acc>(bias.data, bias.elem, offset_of(bias.view, k)) : Acc{0};
        y[k] = narrow<T>((widen(x[k]) - mean) * inv_std * gamma + beta);
      }
    }
  }
}

// ---- BatchNormalization ----

template <typename T, typename Index>
__global__ void batch_norm_kernel(const T* in, T* out, Index count, Index channels, Index inner,
                                  NormParam scale, NormParam bias, NormParam mean, NormParam var,
                                  double epsilon) {
  using Acc = Compute<T>;
  for (Index i = first_index<Index>(); i < count; i += grid_stride<Index>()) {
    const Index c = (i / inner) % channels;
    const Acc factor = load_as<Acc>(scale.data, scale.elem, c) /
                       sqrt_of(load_as<Acc>(var.data, var.elem, c) + static_cast<Acc>(epsilon));
    const Acc shift =
        load_as<Acc>(bias.data, bias.elem, c) - load_as<Acc>(mean.data, mean.elem, c) * factor;
    out[i] = narrow<T>(widen(in[i]) * factor + shift);
  }
}

// ---- LpNormalization ----

template <typename Team, typename T>
__global__ void __launch_bounds__(kMaxThreads)
    lp_norm_kernel(const T* in, T* out, AxisView view, int64_t lines, int p) {
  using Acc = Compute<T>;
  const auto add = [](Acc a, Acc b) { return a + b; };
  const int64_t stride = view.inner;
  for (int64_t line = Team::first_line(); line < lines; line += Team::line_step()) {
    const int64_t start = line_start(view, line);
    const T* x = in + start;
    T* y = out + start;
    Acc sum = 0;
    for (int64_t k = Team::first(); k < view.extent; k += Team::step()) {
      const Acc v = widen(x[k * stride]);
      sum += p == 1 ? (v < 0 ? -v : v) : v * v;
    }
    sum = Team::all(sum, Acc{0}, add);
    const Acc norm = p == 1 ? sum : sqrt_of(sum);
    const Acc inv_norm = norm > 0 ? Acc{1} / norm : Acc{1};
    for (int64_t k = Team::first(); k < view.extent; k += Team::step()) {
      y[k * stride] = narrow<T>(widen(x[k * stride]) * inv_norm);
    }
  }
}

// ---- CumSum ----

// Running sums of floats accumulate in double, as on the CPU backend: their rounding errors
// would otherwise grow along the line.
template <typename T>
using ScanAcc = std::conditional_t<kIsFloat<T>, double, T>;

template <typename Acc>
struct Scan {
  Acc inclusive;
  Acc exclusive;
  Acc total;  // of the whole block
};

template <typename Acc>
__device__ Acc shuffle_up(Acc value, int offset) {
  return __shfl_up_sync(kFullMask, value, offset);
}

// Prefix sums of one value per thread, in thread order.
template <typename Acc>
__device__ Scan<Acc> block_scan(Acc value) {
  __shared__ Acc warp_sums[32];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned warps = blockDim.x / 32;
  Acc inclusive = value;
  for (int offset = 1; offset < 32; offset *= 2) {
    const Acc before = shuffle_up(inclusive, offset);
    if (lane >= static_cast<unsigned>(offset)) inclusive = wrap_add(inclusive, before);
  }
  Acc exclusive = shuffle_up(inclusive, 1);
  if (lane == 0) exclusive = Acc{0};
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    Acc sum = lane < warps ? warp_sums[lane] : Acc{0};
    for (int offset = 1; offset < 32; offset *= 2) {
      const Acc before = shuffle_up(sum, offset);
      if (lane >= static_cast<unsigned>(offset)) sum = wrap_add(sum, before);
    }
    warp_sums[lane] = sum;
  }
  __syncthreads();
  const Acc earlier_warps = warp > 0 ? warp_sums[warp - 1] : Acc{0};
  const Acc total = warp_sums[warps - 1];
  __syncthreads();  // warp_sums is reused by the next call
  return {wrap_add(earlier_warps, inclusive), wrap_add(earlier_warps, exclusive), total};
}

// A block per line, scanning it a block-sized tile at a time and carrying the sum so far.
template <typename T>
__global__ void __launch_bounds__(kMaxThreads)
    cumsum_block_kernel(const T* in, T* out, AxisView view, int64_t lines, bool exclusive,
                        bool reverse) {
  using Acc = ScanAcc<T>;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t start = line_start(view, line);
    Acc carry = 0;
    for (int64_t tile = 0; tile < view.extent; tile += blockDim.x) {
      const int64_t position = tile + threadIdx.x;
      const bool valid = position < view.extent;
      const int64_t at = start + (reverse ? view.extent - 1 - position : position) * view.inner;
      const Acc x = valid ? static_cast<Acc>(widen(in[at])) : Acc{0};
      const Scan<Acc> scan = block_scan(x);
      if (valid) out[at] = narrow<T>(wrap_add(carry, exclusive ? scan.exclusive : scan.inclusive));
      carry = wrap_add(carry, scan.total);
    }
  }
}

template <typename T>
__global__ void cumsum_thread_kernel(const T* in, T* out, AxisView view, int64_t lines,
                                     bool exclusive, bool reverse) {
  using Acc = ScanAcc<T>;
  for (int64_t line = first_index(); line < lines; line += grid_stride()) {
    const int64_t start = line_start(view, line);
    Acc running = 0;
    for (int64_t position = 0; position < view.extent; ++position) {
      const int64_t at = start + (reverse ? view.extent - 1 - position : position) * view.inner;
      const Acc x = static_cast<Acc>(widen(in[at]));
      if (exclusive) {
        out[at] = narrow<T>(running);
        running = wrap_add(running, x);
      } else {
        running = wrap_add(running, x);
        out[at] = narrow<T>(running);
      }
    }
  }
}

int64_t lines_of(const AxisView& view) { return view.outer * view.inner; }

// Calls launch(team, Tag<T>{}, plan) for a float `elem` with the team and launch shape of
// `lines` lines of `extent` elements: the kernels that take only floats.
template <typename Launch>
void launch_float_lines(Elem elem, int64_t lines, int64_t extent, bool contiguous,
                        const char* refused, Launch&& launch) {
  const LineLaunch plan = plan_lines(lines, extent, contiguous);
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      with_team(plan, [&](auto team) { launch(team, tag, plan); });
    } else {
      unsupported(refused);
    }
  });
}

}  // namespace

void launch_reduce(ReduceOp op, Elem elem, const void* in, const ReduceLayout& layout, void* out,
                   cudaStream_t stream) {
  switch (op) {
    case ReduceOp::kSum: return run_reduce<ReduceOp::kSum>(elem, in, layout, out, stream);
    case ReduceOp::kMean: return run_reduce<ReduceOp::kMean>(elem, in, layout, out, stream);
    case ReduceOp::kMax: return run_reduce<ReduceOp::kMax>(elem, in, layout, out, stream);
    case ReduceOp::kMin: return run_reduce<ReduceOp::kMin>(elem, in, layout, out, stream);
    case ReduceOp::kProd: return run_reduce<ReduceOp::kProd>(elem, in, layout, out, stream);
    case ReduceOp::kL1: return run_reduce<ReduceOp::kL1>(elem, in, layout, out, stream);
    case ReduceOp::kL2: return run_reduce<ReduceOp::kL2>(elem, in, layout, out, stream);
    case ReduceOp::kSumSquare:
      return run_reduce<ReduceOp::kSumSquare>(elem, in, layout, out, stream);
    case ReduceOp::kLogSum: return run_reduce<ReduceOp::kLogSum>(elem, in, layout, out, stream);
    case ReduceOp::kLogSumExp:
      return run_reduce<ReduceOp::kLogSumExp>(elem, in, layout, out, stream);
  }
  unsupported("this reduction");
}

void launch_arg_reduce(bool argmax, bool select_last, Elem elem, const void* in,
                       const ReduceLayout& layout, int64_t* out, cudaStream_t stream) {
  const int64_t outputs = element_count(layout.kept);
  const int64_t count = element_count(layout.reduced);
  if (outputs == 0) return;
  const LineLaunch plan = plan_lines(outputs, count, innermost_is_contiguous(layout.reduced));
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      with_team(plan, [&](auto team) {
        arg_reduce_kernel<decltype(team), T><<<plan.blocks, plan.threads, 0, stream>>>(
            static_cast<const T*>(in), layout, out, outputs, count, argmax, select_last);
      });
    } else {
      unsupported("ArgMax/ArgMin of bool");
    }
  });
}

void launch_softmax(bool log_softmax, Elem elem, const void* in, void* out, const AxisView& view,
                    cudaStream_t stream) {
  const int64_t lines = lines_of(view);
  if (lines == 0 || view.extent == 0) return;
  launch_float_lines(elem, lines, view.extent, view.inner == 1, "Softmax of a non-float type",
                     [&](auto team, auto tag, const LineLaunch& plan) {
                       using T = typename decltype(tag)::type;
                       softmax_kernel<decltype(team), T><<<plan.blocks, plan.threads, 0, stream>>>(
                           static_cast<const T*>(in), static_cast<T*>(out), view, lines,
                           log_softmax);
                     });
}

namespace {

void run_normalize(Elem elem, const void* x, void* y, int64_t rows, int64_t size,
                   const NormArgs& args, cudaStream_t stream) {
  if (rows == 0) return;
  launch_float_lines(elem, rows, size, true, "a normalisation of a non-float type",
                     [&](auto team, auto tag, const LineLaunch& plan) {
                       using T = typename decltype(tag)::type;
                       normalize_kernel<decltype(team), T>
                           <<<plan.blocks, plan.threads, 0, stream>>>(
                               static_cast<const T*>(x), static_cast<T*>(y), rows, size, args);
                     });
}

}  // namespace

void launch_layer_norm(Elem elem, const void* x, void* y, int64_t rows, int64_t size,
                       const NormParam& scale, const NormParam& bias, double epsilon, float* mean,
                       float* inv_std, cudaStream_t stream) {
  run_normalize(elem, x, y, rows, size, NormArgs{scale, bias, 0, epsilon, mean, inv_std}, stream);
}

void launch_instance_norm(Elem elem, const void* x, void* y, int64_t rows, int64_t size,
                          int64_t channels, const NormParam& scale, const NormParam& bias,
                          double epsilon, cudaStream_t stream) {
  run_normalize(elem, x, y, rows, size, NormArgs{scale, bias, channels, epsilon, nullptr, nullptr},
                stream);
}

void launch_batch_norm(Elem elem, const void* x, void* y, int64_t count, int64_t channels,
                       int64_t inner, const NormParam& scale, const NormParam& bias,
                       const NormParam& mean, const NormParam& var, double epsilon,
                       cudaStream_t stream) {
  if (count == 0) return;
  const unsigned blocks = blocks_for(count);
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      const auto* in = static_cast<const T*>(x);
      auto* out = static_cast<T*>(y);
      // 32-bit indices where they suffice: two divisions per element.
      if (count <= INT32_MAX) {
        batch_norm_kernel<T, uint32_t><<<blocks, kThreads, 0, stream>>>(
            in, out, static_cast<uint32_t>(count), static_cast<uint32_t>(channels),
            static_cast<uint32_t>(inner), scale, bias, mean, var, epsilon);
      } else {
        batch_norm_kernel<T, int64_t><<<blocks, kThreads, 0, stream>>>(
            in, out, count, channels, inner, scale, bias, mean, var, epsilon);
      }
    } else {
      unsupported("BatchNormalization of a non-float type");
    }
  });
}

void launch_lp_norm(int p, Elem elem, const void* in, void* out, const AxisView& view,
                    cudaStream_t stream) {
  const int64_t lines = lines_of(view);
  if (lines == 0 || view.extent == 0) return;
  launch_float_lines(elem, lines, view.extent, view.inner == 1,
                     "LpNormalization of a non-float type",
                     [&](auto team, auto tag, const LineLaunch& plan) {
                       using T = typename decltype(tag)::type;
                       lp_norm_kernel<decltype(team), T><<<plan.blocks, plan.threads, 0, stream>>>(
                           static_cast<const T*>(in), static_cast<T*>(out), view, lines, p);
                     });
}

void launch_cumsum(Elem elem, const void* in, void* out, const AxisView& view, bool exclusive,
                   bool reverse, cudaStream_t stream) {
  const int64_t lines = lines_of(view);
  if (lines == 0 || view.extent == 0) return;
  const LineLaunch plan = plan_lines(lines, view.extent, view.inner == 1);
  dispatch(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const auto* x = static_cast<const T*>(in);
      auto* y = static_cast<T*>(out);
      if (plan.per_thread) {
        cumsum_thread_kernel<<<plan.blocks, plan.threads, 0, stream>>>(x, y, view, lines, exclusive,
                                                                       reverse);
      } else {
        cumsum_block_kernel<<<plan.blocks, plan.threads, 0, stream>>>(x, y, view, lines, exclusive,
                                                                      reverse);
      }
    } else {
      unsupported("CumSum of this element type");
    }
  });
}

}  // namespace tandem::cuda
