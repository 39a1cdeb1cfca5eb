// Depthwise convolution (one filter per channel) on plain NCHW: oneDNN's blocked kernel is
// fast, but reordering activations into its layout and back costs more than the convolution.
#include <algorithm>
#include <vector>

#include "backends/cpu/linalg_dnnl.h"

namespace tandem::cpu {
namespace {

constexpr int64_t kMaxKernelSide = 16;

// Where the calling thread keeps one channel plane of input, padded with zeros. Each padded row
// is split by column phase (column mod stride_w: `phases` blocks of `block` floats), so that
// the inputs of consecutive outputs are adjacent for every kernel column, whatever the stride.
struct PaddedPlane {
  float* data;
  int64_t pitch, block, top;  // floats per row and per phase; zero rows above the input
  const float* zeros;         // a row of zeros, for kernel rows above or below the input
  float* flat;                // stride 1: results with the padded row pitch
};

// Adds the taps of R kernel rows to `acc` (or to `bias` when FIRST) for `count` outputs; output
// i reads in[r][i + offsets[kw]]. R and KW fixed at compile time (KW = 0: from the arguments)
// keep the weights in registers and let the compiler vectorise along the outputs.
template <bool FIRST, int R, int KW>
void add_kernel_rows(const float* const* in, const float* __restrict w,
                     const int64_t* __restrict offsets, int64_t kernel_w, int64_t count, float bias,
                     float* __restrict acc) {
  const int64_t taps = KW > 0 ? KW : kernel_w;
  for (int64_t i = 0; i < count; ++i) {
    float sum = FIRST ? bias : acc[i];
    for (int64_t r = 0; r < R; ++r) {
      const float* __restrict row = in[r] + i;
      for (int64_t kw = 0; kw < taps; ++kw) sum += w[r * taps + kw] * row[offsets[kw]];
    }
    acc[i] = sum;
  }
}

// acc = bias + every tap, kernel row kh read from in[kh]. A 3x3 kernel runs in one pass (its
// nine weights fit in registers); larger ones run one kernel row per pass.
template <int KW>
void add_taps(const Window2d& g, const float* const* in, const float* w, const int64_t* offsets,
              float bias, int64_t count, float* acc) {
  if (KW == 3 && g.kernel_h == 3) {
    add_kernel_rows<true, 3, KW>(in, w, offsets, g.kernel_w, count, bias, acc);
    return;
  }
  add_kernel_rows<true, 1, KW>(in, w, offsets, g.kernel_w, count, bias, acc);
  for (int64_t kh = 1; kh < g.kernel_h; ++kh) {
    add_kernel_rows<false, 1, KW>(in + kh, w + kh * g.kernel_w, offsets, g.kernel_w, count, bias,
                                  acc);
  }
}

// Copies rows between two pitches. A plain loop: most rows are short, where a memcpy call per
// row costs more than the copy.
void copy_rows(const float* __restrict src, int64_t src_pitch, float* __restrict dst,
               int64_t dst_pitch, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
#pragma GCC unroll 4
    for (int64_t c = 0; c < width; ++c) dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

// Copies every S-th element (S = 0: `stride`); S = 2 vectorises with shuffles.
template <int S>
void gather_columns(const float* __restrict src, int64_t stride, int64_t count,
                    float* __restrict dst) {
  const int64_t step = S > 0 ? S : stride;
  for (int64_t k = 0; k < count; ++k) dst[k] = src[k * step];
}

// Fills the padded plane's interior (its zero padding never changes) with one input plane.
void load_plane(const Window2d& g, const float* in, const PaddedPlane& p) {
  float* first_row = p.data + p.top * p.pitch;
  if (g.stride_w == 1) {
    copy_rows(in, g.in_w, first_row + g.pad_w, p.pitch, g.in_h, g.in_w);
    return;
  }
  const int64_t s = g.stride_w;
  for (int64_t phase = 0; phase < s; ++phase) {
    // The first input column whose padded column (pad_w + j) has this phase.
    const int64_t first = ((phase - g.pad_w) % s + s) % s;
    if (first >= g.in_w) continue;
    const int64_t start = phase * p.block + (g.pad_w + first) / s;
    const int64_t count = (g.in_w - first + s - 1) / s;
    for (int64_t ih = 0; ih < g.in_h; ++ih) {
      const float* src = in + ih * g.in_w + first;
      float* dst = first_row + ih * p.pitch + start;
      if (s == 2) {
        gather_columns<2>(src, s, count, dst);
      } else {
        gather_columns<0>(src, s, count, dst);
      }
    }
  }
}

template <int KW>
void depthwise_plane(const Window2d& g, const float* in, const float* w, float bias,
                     const float* residual, float* out, const PaddedPlane& p,
                     const FusedActivation& activation) {
  load_plane(g, in, p);
  // Output i of a row reads padded column i * stride + kw * dilation: phase and offset per kw.
  int64_t offsets[kMaxKernelSide];
  for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
    const int64_t column = kw * g.dilation_w;
    offsets[kw] = (column % g.stride_w) * p.block + column / g.stride_w;
  }
  const float* rows[kMaxKernelSide];
  if (g.stride_h == 1 && g.stride_w == 1) {
    // The padded plane is read as one flat array with the row pitch of the padding, so the plane
    // is one long vectorised pass (computing pitch - out_w wasted columns per row). Short rows
    // (14x14, 7x7) run several times faster this way than row by row.
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) rows[kh] = p.data + kh * g.dilation_h * p.pitch;
    add_taps<KW>(g, rows, w, offsets, bias, g.out_h * p.pitch, p.flat);
    copy_rows(p.flat, p.pitch, out, g.out_w, g.out_h, g.out_w);
  } else {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
        const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
        rows[kh] = ih >= 0 && ih < g.in_h ? p.data + (p.top + ih) * p.pitch : p.zeros;
      }
      add_taps<KW>(g, rows, w, offsets, bias, g.out_w, out + oh * g.out_w);
    }
  }
  const int64_t count = g.out_h * g.out_w;
  if (residual) {
    for (int64_t i = 0; i < count; ++i) out[i] += residual[i];
  }
  activation.apply(out, count);
}

using PlaneFn = void (*)(const Window2d&, const float*, const float*, float, const float*, float*,
                         const PaddedPlane&, const FusedActivation&);

PlaneFn plane_function(const Window2d& g) {
  switch (g.kernel_w) {
    case 3: return depthwise_plane<3>;
    case 5: return depthwise_plane<5>;
    case 7: return depthwise_plane<7>;
    default: return depthwise_plane<0>;
  }
}

}  // namespace

bool depthwise_loop_supports(const Window2d& window) {
  return window.kernel_h <= kMaxKernelSide && window.kernel_w <= kMaxKernelSide;
}

void depthwise_conv_nchw(const DepthwiseArgs& args) {
  const Window2d& g = args.window;
  const int64_t planes = args.batch * args.channels;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const bool flat = g.stride_h == 1 && g.stride_w == 1;
  // Padded rows reach the last tap of the last output column; in the flat form, the rows
  // also cover the top padding and the last output row's taps, plus one row for its overrun.
  const int64_t reach = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  const int64_t block = (std::max(reach, g.pad_w + g.in_w) + g.stride_w - 1) / g.stride_w;
  const int64_t pitch = block * g.stride_w;
  const int64_t top = flat ? g.pad_h : 0;
  const int64_t rows =
      flat ? std::max(top + g.in_h, g.out_h + (g.kernel_h - 1) * g.dilation_h) + 1 : g.in_h + 1;
  const int64_t padded_floats = rows * pitch;
  const int64_t flat_floats = flat ? g.out_h * pitch : 0;
  const PlaneFn plane_fn = plane_function(g);
#pragma omp parallel if (planes * out_plane * g.kernel_h * g.kernel_w > (1 << 16))
  {
    float* data = static_cast<float*>(
        thread_scratch(static_cast<size_t>(padded_floats + flat_floats) * sizeof(float)));
    std::fill(data, data + padded_floats, 0.0f);
    const PaddedPlane padded{
        data, pitch, block, top, data + (rows - 1) * pitch, data + padded_floats};
#pragma omp for
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t channel = plane % args.channels;
      plane_fn(g, args.src + plane * in_plane, args.weights + channel * g.kernel_h * g.kernel_w,
               args.bias ? args.bias[channel] : 0.0f,
               args.residual ? args.residual + plane * out_plane : nullptr,
               args.dst + plane * out_plane, padded, *args.activation);
    }
  }
}

}  // namespace tandem::cpu
