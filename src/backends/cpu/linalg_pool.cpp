// MaxPool, AveragePool (oneDNN for float32, loops for the rest and for the Indices output) and
// the global pools.
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "backends/cpu/conv_layout.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/linalg_dnnl.h"
#include "ir/ops/linalg_window.h"

namespace tandem::cpu {
namespace {

using dnnl::memory;

// Planes (N*C) at least this large in total make a pool worth spreading over threads.
constexpr int64_t kParallelWork = 1 << 15;

// A pooling window over 3 spatial axes; lower-rank pools get leading axes of size 1.
struct Window3d {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
};

enum class PoolKind { kMax, kAverage, kAverageWithPad };

// Reference pooling for every dtype, the Indices output and the corner oneDNN counts otherwise.
template <typename T>
void pool_loop(PoolKind kind, const Window3d& w, const Tensor& x, Tensor& y, int64_t* indices,
               bool column_major) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  // Flat index of an input position within its plane, in the requested storage order.
  const int64_t row_stride[3] = {w.in[1] * w.in[2], w.in[2], 1};
  const int64_t column_stride[3] = {1, w.in[0], w.in[0] * w.in[1]};
  const int64_t* index_stride = column_major ? column_stride : row_stride;
#pragma omp parallel for if (planes * w.out_plane() > kParallelWork)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* in = px + plane * w.in_plane();
    int64_t o = plane * w.out_plane();
    for (int64_t od = 0; od < w.out[0]; ++od) {
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
          const int64_t start[3] = {od * w.stride[0] - w.pad_begin[0],
                                    oh * w.stride[1] - w.pad_begin[1],
                                    ow * w.stride[2] - w.pad_begin[2]};
          T best = std::numeric_limits<T>::lowest();
          int64_t best_index = 0;
          double sum = 0;
          int64_t count = 0, padded_count = 1;
          for (int64_t a = 0; a < 3; ++a) {
            // Taps inside the explicitly padded input count for count_include_pad.
            int64_t taps = 0;
            for (int64_t k = 0; k < w.kernel[a]; ++k) {
              const int64_t pos = start[a] + k * w.dilation[a];
              taps += pos >= -w.pad_begin[a] && pos < w.in[a] + w.pad_end[a];
            }
            padded_count *= taps;
          }
          for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
            const int64_t d = start[0] + kd * w.dilation[0];
            if (d < 0 || d >= w.in[0]) continue;
            for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
              const int64_t h = start[1] + kh * w.dilation[1];
              if (h < 0 || h >= w.in[1]) continue;
              for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
                const int64_t c = start[2] + kw * w.dilation[2];
                if (c < 0 || c >= w.in[2]) continue;
                const T v = in[(d * w.in[1] + h) * w.in[2] + c];
                sum += static_cast<double>(v);
                ++count;
                if (v > best) {
                  best = v;
                  best_index = d * index_stride[0] + h * index_stride[1] + c * index_stride[2];
                }
              }
            }
          }
          if (kind == PoolKind::kMax) {
            py[o] = best;
            if (indices) indices[o] = plane * w.in_plane() + best_index;
          } else {
            const int64_t divisor = kind == PoolKind::kAverage ? count : padded_count;
            py[o] = divisor > 0 ? static_cast<T>(sum / static_cast<double>(divisor)) : T{};
          }
        }
      }
    }
  }
}

class PoolKernel final : public Kernel {
 public:
  explicit PoolKernel(const KernelSpec& spec)
      : node_(spec.node),
        kind_(spec.node.op_type == "MaxPool"                    ? PoolKind::kMax
              : spec.node.attr_int("count_include_pad", 0) != 0 ? PoolKind::kAverageWithPad
                                                                : PoolKind::kAverage),
        with_indices_(spec.output_types.size() > 1 && spec.node.outputs.size() > 1 &&
                      spec.node.outputs[1] >= 0),
        use_dnnl_(spec.input_types[0].dtype == DType::kFloat32 && !with_indices_) {
    if (is_static(spec.input_types[0].shape)) build(spec.input_types[0].shape);
  }

  std::string implementation() const override {
    std::lock_guard lock(mutex_);
    return implementation_;
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    Tensor& y = outputs[0];
    if (y.numel() == 0) return;
    std::lock_guard lock(mutex_);
    if (x.shape() != x_shape_) build(x.shape());
    if (primitive_) {
      src_.set_data_handle(x.raw());
      dst_.set_data_handle(y.raw());
      if (src_reorder_) {
        // Blocked copies in one thread-local buffer: the source, then the destination.
        char* scratch = static_cast<char*>(thread_scratch(scratch_bytes_));
        src_blocked_.set_data_handle(scratch);
        dst_blocked_.set_data_handle(scratch + dst_offset_);
        execute_reorder(*src_reorder_, src_, src_blocked_);
        execute_primitive(*primitive_,
                          {{DNNL_ARG_SRC, src_blocked_}, {DNNL_ARG_DST, dst_blocked_}});
        execute_reorder(*dst_reorder_, dst_blocked_, dst_);
      } else {
        execute_primitive(*primitive_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
      }
      dnnl_stream().wait();
      return;
    }
    int64_t* indices = with_indices_ && outputs.size() > 1 && outputs[1].defined()
                           ? outputs[1].data<int64_t>()
                           : nullptr;
    const bool column_major = node_.attr_int("storage_order", 0) == 1;
    dispatch_numeric(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        throw InputError(node_.label() + ": no CPU kernel for bool");
      } else {
        pool_loop<T>(kind_, window_, x, y, indices, column_major);
      }
    });
  }

 private:
  void build(const Shape& x) {
    implementation_.clear();
    primitive_.reset();
    src_reorder_.reset();
    dst_reorder_.reset();
    const std::vector<int64_t> spatial(x.begin() + 2, x.end());
    const bool ceil_mode = node_.attr_int("ceil_mode", 0) != 0;
    const WindowGeometry g =
        resolve_window(node_, spatial, node_.attr_ints("kernel_shape"), ceil_mode);
    window_ = window_3d<Window3d>(g, x);
    x_shape_ = x;
    primitive_.reset();
    memory::dims strides, kernel, dilation, pad_begin, pad_end;
    bool overhang = false;
    for (int64_t i = 0; i < g.rank(); ++i) {
      const size_t a = static_cast<size_t>(i);
      strides.push_back(g.strides[a]);
      kernel.push_back(g.kernel[a]);
      dilation.push_back(g.dilations[a] - 1);
      pad_begin.push_back(g.pads_begin[a]);
      // ceil_mode may let the last window run past the end padding; oneDNN needs the padding
      // that makes its output size match.
      const int64_t end =
          (g.output[a] - 1) * g.strides[a] + g.extent(a) - spatial[a] - g.pads_begin[a];
      overhang = overhang || end > g.pads_end[a];
      pad_end.push_back(end);
    }
    // With count_include_pad, ONNX does not count the overhang; oneDNN would.
    if (!use_dnnl_ || (kind_ == PoolKind::kAverageWithPad && overhang)) return;
    const dnnl::algorithm algorithm = kind_ == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                      : kind_ == PoolKind::kAverage
                                          ? dnnl::algorithm::pooling_avg_exclude_padding
                                          : dnnl::algorithm::pooling_avg_include_padding;
    Shape y = {x[0], x[1]};
    y.insert(y.end(), g.output.begin(), g.output.end());
    // NCHW, or channels-last where the CPU keeps a chain of convolutions so (conv_layout.h):
    // then oneDNN must run it, as the loop reads NCHW only.
    const auto user_desc = [&](const char* attribute, const Shape& shape) {
      return node_.attr_string(attribute, "") == kChannelsLast
                 ? memory::desc(to_dims(shape), memory::data_type::f32, memory::format_tag::nhwc)
                 : plain_desc(to_dims(shape));
    };
    const memory::desc src_md = user_desc(kSrcLayoutAttribute, x);
    const memory::desc dst_md = user_desc(kDstLayoutAttribute, y);
    const bool channels_last = src_md != plain_desc(to_dims(x)) || dst_md != plain_desc(to_dims(y));
    const auto make = [&](const memory::desc& src, const memory::desc& dst) {
      const dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, src,
                                                dst, strides, kernel, dilation, pad_begin, pad_end);
      return dnnl::pooling_v2_forward::primitive_desc(desc, with_user_scratchpad(), dnnl_engine());
    };
    try {
      const dnnl::pooling_v2_forward::primitive_desc plain = make(src_md, dst_md);
      src_ = memory(src_md, dnnl_engine(), nullptr);
      dst_ = memory(dst_md, dnnl_engine(), nullptr);
      // On the plain layout oneDNN often pools with its reference code (`simple_nchw`), ~50x
      // slower than its vectorised kernels on the channel-blocked one (ResNet-18's MaxPool:
      // 10 ms of a 54 ms run); reordering there and back costs two copies of the tensors.
      if (!channels_last && reference_kernel(plain) && use_channel_blocked(x, y, make)) return;
      primitive_ = dnnl::pooling_v2_forward(plain);
      implementation_ = std::string("oneDNN ") + plain.impl_info_str();
    } catch (const dnnl::error& error) {
      // the loop handles what oneDNN declines, on NCHW tensors
      if (channels_last) {
        throw std::runtime_error(node_.label() + ": oneDNN declined a channels-last pooling (" +
                                 error.what() + ")");
      }
    }
  }

  static bool reference_kernel(const dnnl::primitive_desc_base& pd) {
    const std::string name = pd.impl_info_str();
    return name.starts_with("simple") || name.starts_with("ref");
  }

  // Runs the pooling on the channel-blocked copies when oneDNN has a vectorised kernel there.
  template <typename Make>
  bool use_channel_blocked(const Shape& x, const Shape& y, const Make& make) {
    const std::optional<memory::format_tag> tag = channel_blocked(x.size());
    if (!tag) return false;
    const memory::desc src_blocked(to_dims(x), memory::data_type::f32, *tag);
    const memory::desc dst_blocked(to_dims(y), memory::data_type::f32, *tag);
    std::optional<dnnl::pooling_v2_forward::primitive_desc> blocked;
    try {
      blocked = make(src_blocked, dst_blocked);
    } catch (const dnnl::error&) {
      return false;
    }
    if (reference_kernel(*blocked)) return false;
    primitive_ = dnnl::pooling_v2_forward(*blocked);
    implementation_ = std::string("oneDNN ") + blocked->impl_info_str() + " (channel-blocked)";
    src_blocked_ = memory(src_blocked, dnnl_engine(), nullptr);
    dst_blocked_ = memory(dst_blocked, dnnl_engine(), nullptr);
    src_reorder_ = make_reorder(src_, src_blocked_);
    dst_reorder_ = make_reorder(dst_blocked_, dst_);
    dst_offset_ = (src_blocked.get_size() + 63) / 64 * 64;
    scratch_bytes_ = dst_offset_ + dst_blocked.get_size();
    return true;
  }

  // The channel-blocked layout of this rank that the CPU's vector width suits, if any.
  static std::optional<memory::format_tag> channel_blocked(size_t rank) {
    const bool wide = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
    if (rank == 4) return wide ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
    if (rank == 5) return wide ? memory::format_tag::nCdhw16c : memory::format_tag::nCdhw8c;
    return std::nullopt;
  }

  const Node& node_;
  const PoolKind kind_;
  const bool with_indices_;
  const bool use_dnnl_;  // float32 without the Indices output
  mutable std::mutex mutex_;
  std::string implementation_;  // the oneDNN primitive's; "" while the loop runs it
  Shape x_shape_;
  Window3d window_{};
  std::optional<dnnl::pooling_v2_forward> primitive_;
  memory src_, dst_;
  // Channel-blocked copies, where the primitive runs on them.
  memory src_blocked_, dst_blocked_;
  std::optional<dnnl::reorder> src_reorder_, dst_reorder_;
  size_t dst_offset_ = 0, scratch_bytes_ = 0;
};

// Reduces each (n, c) plane of a float tensor to one value.
template <typename Reduce>
void global_pool(const Node& node, const Tensor& x, Tensor& y, Reduce reduce) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  dispatch_numeric(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_floating_point_v<T>) {
      throw InputError(node.label() + ": no CPU kernel for " + std::string(dtype_name(x.dtype())));
    } else {
      const T* px = x.data<T>();
      T* py = y.data<T>();
#pragma omp parallel for if (x.numel() > kParallelWork)
      for (int64_t plane = 0; plane < planes; ++plane) py[plane] = reduce(px + plane * size, size);
    }
  });
}

}  // namespace

std::unique_ptr<Kernel> make_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<PoolKernel>(spec);
}

void global_max_pool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  global_pool(node, inputs[0], outputs[0], []<typename T>(const T* p, int64_t n) {
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) best = std::max(best, p[i]);
    return best;
  });
}

void global_average_pool(const Node& node, std::span<const Tensor> inputs,
                         std::span<Tensor> outputs) {
  global_pool(node, inputs[0], outputs[0], []<typename T>(const T* p, int64_t n) {
    // Eight running sums, which the compiler keeps in one vector register: one sum would wait
    // on each add in turn (squeeze-excite blocks pool a whole image per channel).
    constexpr int64_t kLanes = 8;
    T lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int64_t lane = 0; lane < kLanes; ++lane) lanes[lane] += p[i + lane];
    }
    T sum = 0;
    for (const T lane : lanes) sum += lane;
    for (; i < n; ++i) sum += p[i];
    return n > 0 ? static_cast<T>(sum / static_cast<T>(n)) : T{};
  });
}

}  // namespace tandem::cpu
