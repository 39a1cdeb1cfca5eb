#pragma once
// Loop machinery shared by the CPU elementwise kernels: grains and broadcasting (their ranges
// per thread: parallel_ranges.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/parallel_ranges.h"
#include "ir/error.h"
#include "ir/tensor.h"

namespace tandem::cpu {

[[noreturn]] inline void throw_unsupported_dtype(const Node& node, DType dtype) {
  throw InputError(node.label() + ": no CPU kernel for dtype " + std::string(dtype_name(dtype)));
}

// dispatch_numeric, naming the node when the dtype has no CPU kernel (float16 outside Cast...).
template <typename Fn>
decltype(auto) dispatch_kernel_dtype(const Node& node, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUndefined: throw_unsupported_dtype(node, dtype);
    default: return dispatch_numeric(dtype, std::forward<Fn>(fn));
  }
}

// Outputs smaller than this many elements stay on one thread: below it the cost of waking the
// OpenMP team exceeds the work. Expensive ops (exp, erf...) pass a smaller grain.
inline constexpr int64_t kCheapGrain = int64_t{1} << 16;
inline constexpr int64_t kExpensiveGrain = int64_t{1} << 13;

// How N inputs are read while walking a contiguous output: dims collapsed as far as the
// inputs allow; each input's stride is 0 on the dims it is broadcast along. In the innermost dim
// every input has stride 1 (contiguous) or 0 (one value for the whole row).
template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> strides;
  int64_t total = 0;

  BroadcastPlan(const Shape& out, const std::array<const Shape*, N>& inputs) {
    total = numel(out);
    const size_t rank = out.size();
    std::array<std::vector<int64_t>, N> full;
    for (size_t k = 0; k < N; ++k) {
      const Shape& in = *inputs[k];
      const std::vector<int64_t> own = contiguous_strides(in);
      full[k].assign(rank, 0);
      for (size_t d = rank - in.size(); d < rank; ++d) {
        const size_t id = d - (rank - in.size());
        full[k][d] = in[id] == 1 ? 0 : own[id];
      }
    }
    for (size_t d = 0; d < rank; ++d) {
      if (out[d] == 1) continue;
      bool mergeable = !dims.empty();
      for (size_t k = 0; k < N && mergeable; ++k) {
        mergeable = strides[k].back() == full[k][d] * out[d];
      }
      if (mergeable) {
        dims.back() *= out[d];
        for (size_t k = 0; k < N; ++k) strides[k].back() = full[k][d];
      } else {
        dims.push_back(out[d]);
        for (size_t k = 0; k < N; ++k) strides[k].push_back(full[k][d]);
      }
    }
    if (dims.empty()) {  // a single element
      dims.push_back(1);
      for (size_t k = 0; k < N; ++k) strides[k].push_back(1);
    }
  }

  int64_t inner() const { return dims.back(); }
  bool contiguous(size_t k) const { return strides[k].back() != 0; }

  // Calls fn(out_offset, in_offsets, length) for runs of the output that lie in one row,
  // in parallel over the output when it has at least `grain` elements.
  template <typename SegmentFn>
  void for_each_segment(int64_t grain, SegmentFn&& fn) const {
    parallel_ranges(total, grain, [&](int64_t begin, int64_t end) { walk(begin, end, fn); });
  }

 private:
  template <typename SegmentFn>
  void walk(int64_t begin, int64_t end, SegmentFn& fn) const {
    const size_t outer = dims.size() - 1;
    const int64_t row_length = inner();
    std::vector<int64_t> coord(outer, 0);
    std::array<int64_t, N> row_offsets{};
    int64_t row = begin / row_length;
    for (size_t d = outer; d-- > 0;) {
      coord[d] = row % dims[d];
      row /= dims[d];
      for (size_t k = 0; k < N; ++k) row_offsets[k] += coord[d] * strides[k][d];
    }
    int64_t column = begin % row_length;
    for (int64_t position = begin; position < end;) {
      const int64_t length = std::min(row_length - column, end - position);
      std::array<int64_t, N> offsets;
      for (size_t k = 0; k < N; ++k) offsets[k] = row_offsets[k] + column * strides[k].back();
      fn(position, offsets, length);
      position += length;
      column = 0;
      for (size_t d = outer; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) row_offsets[k] += strides[k][d];
        if (++coord[d] < dims[d]) break;
        for (size_t k = 0; k < N; ++k) row_offsets[k] -= strides[k][d] * dims[d];
        coord[d] = 0;
      }
    }
  }
};

// One row of a binary op; each operand is a contiguous run or a single repeated value.
template <bool kContiguousA, bool kContiguousB, typename A, typename B, typename Out, typename Op>
void binary_row(const A* a, const B* b, Out* out, int64_t length, const Op& op) {
  const A a0 = *a;
  const B b0 = *b;
  for (int64_t i = 0; i < length; ++i) {
    out[i] = op(kContiguousA ? a[i] : a0, kContiguousB ? b[i] : b0);
  }
}

// out = op(a, b) with numpy broadcasting; `out` has the broadcast shape and may be `a` itself.
template <typename A, typename B, typename Out, typename Op>
void broadcast_binary(const Tensor& a, const Tensor& b, const Tensor& out, const Op& op,
                      int64_t grain = kCheapGrain) {
  const BroadcastPlan<2> plan(out.shape(), {&a.shape(), &b.shape()});
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out.data<Out>();
  const bool ca = plan.contiguous(0);
  const bool cb = plan.contiguous(1);
  plan.for_each_segment(grain, [&](int64_t o, const std::array<int64_t, 2>& in, int64_t length) {
    if (ca && cb) {
      binary_row<true, true>(pa + in[0], pb + in[1], po + o, length, op);
    } else if (ca) {
      binary_row<true, false>(pa + in[0], pb + in[1], po + o, length, op);
    } else if (cb) {
      binary_row<false, true>(pa + in[0], pb + in[1], po + o, length, op);
    } else {
      binary_row<false, false>(pa + in[0], pb + in[1], po + o, length, op);
    }
  });
}

// out[i] = op(in[i]) over same-shape contiguous tensors.
template <typename In, typename Out, typename Op>
void map_unary(const Tensor& in, const Tensor& out, const Op& op, int64_t grain = kCheapGrain) {
  const In* src = in.data<In>();
  Out* dst = out.data<Out>();
  parallel_ranges(out.numel(), grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = op(src[i]);
  });
}

// The family's kernels, registered by register_elementwise_kernels.
void register_elementwise_unary_kernels(KernelRegistry& registry);
void register_elementwise_cast_kernels(KernelRegistry& registry);

}  // namespace tandem::cpu
