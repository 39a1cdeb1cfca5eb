// The linalg family's own kernels: epilogues, Gemm's C broadcast, plane copies and pools.
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/linalg_launch.h"

namespace tandem::cuda {
namespace {

// The type a linalg kernel computes in: float, double for float64 (integer pools too).
template <typename T>
using ComputeT = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
__device__ __forceinline__ ComputeT<T> load(const T* p) {
  return static_cast<ComputeT<T>>(widen(*p));
}

// The most negative finite value of T, in T's compute type: what a maximum over no input
// elements is (as the CPU kernel's initial value).
template <typename T>
__device__ __forceinline__ ComputeT<T> lowest();
template <>
__device__ __forceinline__ float lowest<float>() {
  return -FLT_MAX;
}
template <>
__device__ __forceinline__ double lowest<double>() {
  return -DBL_MAX;
}
template <>
__device__ __forceinline__ float lowest<__half>() {
  return -65504.0f;
}
template <>
__device__ __forceinline__ float lowest<__nv_bfloat16>() {
  return -3.38953139e38f;
}
template <>
__device__ __forceinline__ float lowest<int8_t>() {
  return -128.0f;
}
template <>
__device__ __forceinline__ float lowest<uint8_t>() {
  return 0.0f;
}

// Calls f(Tag<T>{}) for the element types of `elem` that carry floating-point data; returns
// false for the others.
template <typename F>
bool dispatch_float(Elem elem, F&& f) {
  switch (elem) {
    case Elem::kF32: f(Tag<float>{}); return true;
    case Elem::kF16: f(Tag<__half>{}); return true;
    case Elem::kBF16: f(Tag<__nv_bfloat16>{}); return true;
    case Elem::kF64: f(Tag<double>{}); return true;
    default: return false;
  }
}

template <typename A>
__device__ __forceinline__ A clamp01(A x) {
  return x < A(0) ? A(0) : (x > A(1) ? A(1) : x);
}

template <typename A>
__device__ __forceinline__ A activate(A x, const Activation& act) {
  switch (act.kind) {
    case ActivationKind::kNone: return x;
    case ActivationKind::kRelu: return x > A(0) ? x : A(0);
    case ActivationKind::kLeakyRelu: return x > A(0) ? x : A(act.alpha) * x;
    case ActivationKind::kClip: {
      // As std::min(std::max(x, alpha), beta): NaN passes through.
      const A low = x < A(act.alpha) ? A(act.alpha) : x;
      return A(act.beta) < low ? A(act.beta) : low;
    }
    case ActivationKind::kHardSwish: return x * clamp01(x / A(6) + A(0.5));
    case ActivationKind::kHardSigmoid: return clamp01(A(act.alpha) * x + A(act.beta));
    case ActivationKind::kSigmoid: return A(1) / (A(1) + exp(-x));
    case ActivationKind::kTanh: return tanh(x);
    case ActivationKind::kGelu: return A(0.5) * x * (A(1) + erf(x * A(0.70710678118654752440)));
  }
  return x;
}

template <typename T>
__global__ void epilogue_kernel(T* data, const T* bias, const T* residual, int64_t count,
                                int64_t channels, int64_t inner, Activation act) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    ComputeT<T> v = load(data + i);
    if (bias) v += load(bias + (i / inner) % channels);
    if (residual) v += load(residual + i);
    data[i] = narrow<T>(activate(v, act));
  }
}

template <typename T>
__global__ void broadcast_matrix_kernel(const T* c, int64_t row_stride, int64_t col_stride,
                                        ComputeT<T> scale, T* out, int64_t rows, int64_t cols) {
  const int64_t count = rows * cols;
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const int64_t row = i / cols, col = i % cols;
    out[i] = narrow<T>(scale * load(c + row * row_stride + col * col_stride));
  }
}

template <typename T>
__global__ void copy_planes_kernel(const T* in, T* out, PlaneCopy copy) {
  const int64_t count = copy.planes * copy.out_h * copy.out_w;
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const int64_t x = i % copy.out_w;
    const int64_t y = (i / copy.out_w) % copy.out_h;
    const int64_t plane = i / (copy.out_w * copy.out_h);
    const int64_t in_y = y - copy.top, in_x = x - copy.left;
    const bool inside = in_y >= 0 && in_y < copy.in_h && in_x >= 0 && in_x < copy.in_w;
    out[i] = inside ? in[(plane * copy.in_h + in_y) * copy.in_w + in_x] : T{0};
  }
}

template <typename T>
__global__ void pool_kernel(const T* in, T* out, int64_t planes, PoolWindow w, PoolKind kind) {
  const int64_t out_plane = w.out[0] * w.out[1] * w.out[2];
  const int64_t in_plane = w.in[0] * w.in[1] * w.in[2];
  const int64_t count = planes * out_plane;
  using A = ComputeT<T>;
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    const int64_t ow = i % w.out[2];
    const int64_t oh = (i / w.out[2]) % w.out[1];
    const int64_t od = (i / (w.out[2] * w.out[1])) % w.out[0];
    const T* plane = in + (i / out_plane) * in_plane;
    const int64_t start[3] = {od * w.stride[0] - w.pad_begin[0], oh * w.stride[1] - w.pad_begin[1],
                              ow * w.stride[2] - w.pad_begin[2]};
    A best = lowest<T>();
    A sum = 0;
    int64_t taps = 0;
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
      const int64_t d = start[0] + kd * w.dilation[0];
      if (d < 0 || d >= w.in[0]) continue;
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
        const int64_t h = start[1] + kh * w.dilation[1];
        if (h < 0 || h >= w.in[1]) continue;
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
          const int64_t c = start[2] + kw * w.dilation[2];
          if (c < 0 || c >= w.in[2]) continue;
          const A v = load(plane + (d * w.in[1] + h) * w.in[2] + c);
          if (v > best) best = v;
          sum += v;
          ++taps;
        }
      }
    }
    if (kind == PoolKind::kMax) {
      out[i] = narrow<T>(best);
      continue;
    }
    int64_t divisor = taps;
    if (kind == PoolKind::kAverageWithPad) {
      // Taps inside the explicitly padded input, per axis.
      divisor = 1;
      for (int a = 0; a < 3; ++a) {
        int64_t inside = 0;
        for (int64_t k = 0; k < w.kernel[a]; ++k) {
          const int64_t pos = start[a] + k * w.dilation[a];
          inside += pos >= -w.pad_begin[a] && pos < w.in[a] + w.pad_end[a];
        }
        divisor *= inside;
      }
    }
    out[i] = narrow<T>(divisor > 0 ? sum / static_cast<A>(divisor) : A(0));
  }
}

template <typename A>
__device__ __forceinline__ A combine(A a, A b, bool is_max) {
  return is_max ? (a < b ? b : a) : a + b;
}

// One block per plane: each thread folds a strided part, then warps and the block combine.
template <typename T>
__global__ void global_pool_kernel(const T* in, T* out, int64_t planes, int64_t plane_size,
                                   bool is_max) {
  using A = ComputeT<T>;
  __shared__ A partial[kThreads / 32];
  const A identity = is_max ? A(-INFINITY) : A(0);
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const T* p = in + plane * plane_size;
    A v = identity;
    for (int64_t i = threadIdx.x; i < plane_size; i += blockDim.x) {
      v = combine(v, load(p + i), is_max);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      v = combine(v, __shfl_down_sync(0xffffffffu, v, offset), is_max);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
      v = lane < kThreads / 32 ? partial[lane] : identity;
      for (int offset = 16; offset > 0; offset /= 2) {
        v = combine(v, __shfl_down_sync(0xffffffffu, v, offset), is_max);
      }
      if (lane == 0) {
        out[plane] = narrow<T>(is_max || plane_size == 0 ? v : v / static_cast<A>(plane_size));
      }
    }
    __syncthreads();  // `partial` is reused by the next plane
  }
}

}  // namespace

void launch_epilogue(Elem elem, void* data, const void* bias, const void* residual, int64_t count,
                     int64_t channels, int64_t inner, const Activation& activation,
                     cudaStream_t stream) {
  if (count <= 0) return;
  dispatch_float(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    epilogue_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<T*>(data), static_cast<const T*>(bias), static_cast<const T*>(residual), count,
        channels, inner, activation);
  });
}

void launch_broadcast_matrix(Elem elem, const void* c, int64_t row_stride, int64_t col_stride,
                             double scale, void* out, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_float(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    broadcast_matrix_kernel<T><<<blocks_for(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(c), row_stride, col_stride, static_cast<ComputeT<T>>(scale),
        static_cast<T*>(out), rows, cols);
  });
}

void launch_copy_planes(int element_bytes, const void* in, void* out, const PlaneCopy& copy,
                        cudaStream_t stream) {
  const int64_t count = copy.planes * copy.out_h * copy.out_w;
  if (count <= 0) return;
  by_size(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    copy_planes_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(in),
                                                                   static_cast<T*>(out), copy);
  });
}

void launch_pool(Elem elem, PoolKind kind, const void* in, void* out, int64_t planes,
                 const PoolWindow& window, cudaStream_t stream) {
  const int64_t count = planes * window.out[0] * window.out[1] * window.out[2];
  if (count <= 0) return;
  const auto launch = [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), planes, window, kind);
  };
  if (dispatch_float(elem, launch)) return;
  if (elem == Elem::kI8) launch(Tag<int8_t>{});
  if (elem == Elem::kU8) launch(Tag<uint8_t>{});
}

void launch_global_pool(Elem elem, bool is_max, const void* in, void* out, int64_t planes,
                        int64_t plane_size, cudaStream_t stream) {
  if (planes <= 0) return;
  const unsigned blocks = static_cast<unsigned>(planes < 65536 ? planes : 65536);
  dispatch_float(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    global_pool_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), planes, plane_size, is_max);
  });
}

}  // namespace tandem::cuda
