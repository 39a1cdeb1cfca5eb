// Conv and ConvTranspose through oneDNN, float32. Activations are plain NCHW between ops, or
// channels-last between two convolutions (conv_layout.h); the primitive may compute in another
// layout, with reorders in and out around it.
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "backends/cpu/conv_layout.h"
#include "backends/cpu/linalg_dnnl.h"
#include "ir/ops/linalg_window.h"

namespace tandem::cpu {
namespace {

using dnnl::memory;

int64_t product(const memory::dims& dims, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < dims.size(); ++i) p *= dims[i];
  return p;
}

// One convolution as oneDNN sees it.
struct ConvProblem {
  memory::dims src, dst, weights;
  memory::desc weights_user;  // the ONNX weights tensor, described in `weights` dims
  memory::dims strides, dilates, pad_begin, pad_end;
  int64_t group = 1;
  WindowGeometry window;
};

size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const KernelSpec& spec, bool transposed)
      : node_(spec.node),
        transposed_(transposed),
        bf16_(spec.precision == MatrixPrecision::kBFloat16),
        activation_(spec.node) {
    if (spec.input_types[0].dtype != DType::kFloat32) {
      throw InputError(node_.label() + ": the CPU runs " + node_.op_type + " in float32 only");
    }
    if (spec.constant_inputs.size() > 1 && spec.constant_inputs[1]) {
      constant_weights_ = *spec.constant_inputs[1];
    }
    const bool all_static = std::all_of(spec.input_types.begin(), spec.input_types.end(),
                                        [](const TensorType& t) { return is_static(t.shape); });
    if (all_static) {
      build(spec.input_types[0].shape, spec.input_types[1].shape, present(spec.input_types, 2),
            present(spec.input_types, 3));
    }
  }

  std::string implementation() const override {
    std::lock_guard lock(mutex_);
    return implementation_;
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    const Tensor& w = inputs[1];
    const Tensor bias = inputs.size() > 2 ? inputs[2] : Tensor();
    const Tensor residual = inputs.size() > 3 ? inputs[3] : Tensor();
    Tensor& out = outputs[0];
    if (out.numel() == 0) return;
    std::lock_guard lock(mutex_);
    if (!built_ || x.shape() != x_shape_ || w.shape() != w_shape_ || bias.defined() != has_bias_ ||
        residual.defined() != has_residual_) {
      build(x.shape(), w.shape(), bias.defined(), residual.defined());
    }
    if (depthwise_) {
      depthwise_conv_nchw({x.data<float>(), w.data<float>(),
                           bias.defined() ? bias.data<float>() : nullptr,
                           residual.defined() ? residual.data<float>() : nullptr, out.data<float>(),
                           x.dim(0), x.dim(1), *depthwise_, &activation_});
      return;
    }
    dnnl::stream& stream = dnnl_stream();
    // One thread-local buffer holds the blocked source, destination and weights.
    char* scratch = static_cast<char*>(thread_scratch(scratch_bytes_));
    src_user_.set_data_handle(x.raw());
    memory src = src_user_;
    if (src_reorder_) {
      src_buffer_.set_data_handle(scratch);
      execute_reorder(*src_reorder_, src_user_, src_buffer_);
      src = src_buffer_;
    }
    memory weights = weights_memory(w, scratch + weights_offset_);
    dst_user_.set_data_handle(out.raw());
    memory dst = dst_user_;
    if (dst_reorder_) {
      dst_buffer_.set_data_handle(scratch + dst_offset_);
      dst = dst_buffer_;
    }
    if (residual.defined()) {
      // The sum post-op adds what the destination holds: the residual, in its layout.
      if (residual_reorder_) {
        residual_user_.set_data_handle(residual.raw());
        execute_reorder(*residual_reorder_, residual_user_, dst);
      } else {
        std::memcpy(dst.get_data_handle(), residual.raw(), out.nbytes());
      }
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (bias.defined()) {
      bias_.set_data_handle(bias.raw());
      args.emplace(DNNL_ARG_BIAS, bias_);
    }
    execute_primitive(*primitive_, args);
    if (dst_reorder_) execute_reorder(*dst_reorder_, dst_buffer_, dst_user_);
    stream.wait();
  }

 private:
  static bool present(std::span<const TensorType> types, size_t i) {
    return types.size() > i && types[i].dtype != DType::kUndefined;
  }

  memory weights_memory(const Tensor& w, char* scratch) {
    if (packed_weights_) return *packed_weights_;
    weights_user_.set_data_handle(w.raw());
    if (!weights_reorder_) return weights_user_;
    weights_buffer_.set_data_handle(scratch);
    execute_reorder(*weights_reorder_, weights_user_, weights_buffer_);
    return weights_buffer_;
  }

  ConvProblem describe(const Shape& x, const Shape& w) const {
    const std::vector<int64_t> spatial(x.begin() + 2, x.end());
    const std::vector<int64_t> kernel(w.begin() + 2, w.end());
    ConvProblem p;
    p.group = node_.attr_int("group", 1);
    p.window = transposed_ ? resolve_transposed_window(node_, spatial, kernel)
                           : resolve_window(node_, spatial, kernel, false);
    const WindowGeometry& g = p.window;
    const int64_t in_channels = x[1];
    const int64_t out_channels = transposed_ ? w[1] * p.group : w[0];
    p.src = to_dims(x);
    p.dst = {x[0], out_channels};
    p.dst.insert(p.dst.end(), g.output.begin(), g.output.end());
    const int64_t taps = product(to_dims(w), 2);
    const int64_t in_per_group = in_channels / p.group, out_per_group = out_channels / p.group;
    // ONNX weights: Conv [G*Cout/G, Cin/G, k...], ConvTranspose [G*Cin/G, Cout/G, k...];
    // oneDNN wants [G,] Cout/G, Cin/G, k..., which for ConvTranspose is a transposed view.
    memory::dims kernel_strides = contiguous_strides(kernel);
    if (p.group > 1) p.weights.push_back(p.group);
    p.weights.push_back(out_per_group);
    p.weights.push_back(in_per_group);
    p.weights.insert(p.weights.end(), kernel.begin(), kernel.end());
    memory::dims strides;
    if (p.group > 1) strides.push_back(in_per_group * out_per_group * taps);
    if (transposed_) {
      strides.push_back(taps);
      strides.push_back(out_per_group * taps);
    } else {
      strides.push_back(in_per_group * taps);
      strides.push_back(taps);
    }
    strides.insert(strides.end(), kernel_strides.begin(), kernel_strides.end());
    p.weights_user = memory::desc(p.weights, memory::data_type::f32, strides);
    for (int64_t i = 0; i < g.rank(); ++i) {
      const size_t axis = static_cast<size_t>(i);
      p.strides.push_back(g.strides[axis]);
      p.dilates.push_back(g.dilations[axis] - 1);  // oneDNN counts the gaps
      p.pad_begin.push_back(g.pads_begin[axis]);
      // ConvTranspose: output_padding enlarges the end, which oneDNN takes as negative padding.
      p.pad_end.push_back(transposed_ ? (spatial[axis] - 1) * g.strides[axis] + g.extent(axis) -
                                            g.pads_begin[axis] - g.output[axis]
                                      : g.pads_end[axis]);
    }
    return p;
  }

  void build(const Shape& x, const Shape& w, bool has_bias, bool has_residual) {
    built_ = false;
    try {
      create_primitive(x, w, has_bias, has_residual);
    } catch (const dnnl::error& e) {
      throw InputError(node_.label() + ": oneDNN cannot run it: " + e.what());
    }
    x_shape_ = x;
    w_shape_ = w;
    has_bias_ = has_bias;
    has_residual_ = has_residual;
    built_ = true;
  }

  void create_primitive(const Shape& x, const Shape& w, bool has_bias, bool has_residual) {
    problem_ = describe(x, w);
    const ConvProblem& p = problem_;
    // The depthwise loop takes NCHW only; within a channels-last chain oneDNN runs it.
    const bool nchw = !node_.has(kSrcLayoutAttribute) && !node_.has(kDstLayoutAttribute) &&
                      !node_.has(kResidualLayoutAttribute);
    depthwise_ = nchw ? depthwise_window(p, x) : std::nullopt;
    implementation_ = depthwise_ ? "tandem depthwise NCHW" : "";
    if (depthwise_) return;
    // In bf16 the source and weights are converted on their way in (with the reorders a blocked
    // layout takes anyway); the destination stays float32.
    const memory::data_type computed = bf16_ ? memory::data_type::bf16 : memory::data_type::f32;
    const auto any = [](const memory::dims& dims, memory::data_type type) {
      return memory::desc(dims, type, memory::format_tag::any);
    };
    const memory::desc src_plain = plain_desc(p.src), dst_plain = plain_desc(p.dst);
    // How the tensors are laid out in memory: NCHW, or channels-last where the CPU keeps a
    // chain of convolutions so (conv_layout.h).
    const auto user_desc = [&](const char* attribute, const memory::dims& dims) {
      return node_.attr_string(attribute, "") == kChannelsLast
                 ? memory::desc(dims, memory::data_type::f32, memory::format_tag::nhwc)
                 : plain_desc(dims);
    };
    const memory::desc src_user = user_desc(kSrcLayoutAttribute, p.src);
    const memory::desc dst_user = user_desc(kDstLayoutAttribute, p.dst);
    const memory::desc residual_user = user_desc(kResidualLayoutAttribute, p.dst);
    // Plain NCHW only where both sides are: a channels-last side is what oneDNN computes in.
    const bool plain = !bf16_ && src_user == src_plain && dst_user == dst_plain &&
                       prefer_plain_layout(x[1], p.group, product(p.weights, p.group > 1 ? 3 : 2),
                                           product(p.dst, 2));
    const memory::desc bias_md = has_bias ? plain_desc({p.dst[1]}) : memory::desc();
    dnnl::primitive_attr attr = with_user_scratchpad();
    dnnl::post_ops post_ops;
    if (has_residual) post_ops.append_sum(1);
    activation_.append_to(post_ops);
    attr.set_post_ops(post_ops);
    const memory::desc src_md = plain ? src_plain : any(p.src, computed);
    const memory::desc dst_md = plain ? dst_plain : any(p.dst, memory::data_type::f32);
    const auto& engine = dnnl_engine();
    memory::desc src_chosen, dst_chosen;
    if (transposed_) {
      const dnnl::deconvolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src_md,
          any(p.weights, computed), bias_md, dst_md, p.strides, p.dilates, p.pad_begin, p.pad_end);
      const dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine);
      primitive_ = dnnl::deconvolution_forward(pd);
      implementation_ = std::string("oneDNN ") + pd.impl_info_str() + computed_mark(bf16_);
      src_chosen = pd.src_desc();
      dst_chosen = pd.dst_desc();
      weights_desc_ = pd.weights_desc();
    } else {
      const dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
          any(p.weights, computed), bias_md, dst_md, p.strides, p.dilates, p.pad_begin, p.pad_end);
      const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
      primitive_ = dnnl::convolution_forward(pd);
      implementation_ = std::string("oneDNN ") + pd.impl_info_str() + computed_mark(bf16_);
      src_chosen = pd.src_desc();
      dst_chosen = pd.dst_desc();
      weights_desc_ = pd.weights_desc();
    }
    src_user_ = memory(src_user, engine, nullptr);
    dst_user_ = memory(dst_user, engine, nullptr);
    residual_user_ = memory(residual_user, engine, nullptr);
    weights_user_ = memory(p.weights_user, engine, nullptr);
    bias_ = memory(bias_md, engine, nullptr);
    src_reorder_.reset();
    dst_reorder_.reset();
    residual_reorder_.reset();
    weights_reorder_.reset();
    // Constant weights are reordered once, and again only if a rebuild wants another layout.
    if (constant_weights_.defined() &&
        (!packed_weights_ || packed_weights_->get_desc() != weights_desc_)) {
      packed_weights_ = reorder_to(weights_desc_, p.weights_user, constant_weights_.raw());
    }
    size_t bytes = 0;
    if (src_chosen != src_user) {
      src_buffer_ = memory(src_chosen, engine, nullptr);
      src_reorder_ = make_reorder(src_user_, src_buffer_);
      bytes = aligned(src_chosen.get_size());
    }
    dst_offset_ = bytes;
    if (dst_chosen != dst_user) {
      dst_buffer_ = memory(dst_chosen, engine, nullptr);
      dst_reorder_ = make_reorder(dst_buffer_, dst_user_);
      bytes += aligned(dst_chosen.get_size());
    }
    if (has_residual && residual_user != dst_chosen) {
      residual_reorder_ = make_reorder(residual_user_, dst_reorder_ ? dst_buffer_ : dst_user_);
    }
    weights_offset_ = bytes;
    if (!constant_weights_.defined() && weights_desc_ != p.weights_user) {
      weights_buffer_ = memory(weights_desc_, engine, nullptr);
      weights_reorder_ = make_reorder(weights_user_, weights_buffer_);
      bytes += aligned(weights_desc_.get_size());
    }
    scratch_bytes_ = std::max<size_t>(bytes, 64);
  }

  // The window of a depthwise Conv over 1 or 2 spatial axes, which the NCHW loop runs.
  std::optional<Window2d> depthwise_window(const ConvProblem& p, const Shape& x) const {
    const WindowGeometry& g = p.window;
    if (transposed_ || p.group == 1 || p.group != x[1] || p.dst[1] != x[1] || g.rank() > 2) {
      return std::nullopt;
    }
    const size_t h = 0, w = g.rank() == 2 ? 1 : 0;
    const bool two_d = g.rank() == 2;
    const Window2d window{
        two_d ? x[2] : 1,           x.back(),       two_d ? g.output[h] : 1,     g.output[w],
        two_d ? g.kernel[h] : 1,    g.kernel[w],    two_d ? g.strides[h] : 1,    g.strides[w],
        two_d ? g.dilations[h] : 1, g.dilations[w], two_d ? g.pads_begin[h] : 0, g.pads_begin[w]};
    // Large kernels over tiny planes (5x5 at 7x7): the loop's per-plane overhead dominates, and
    // oneDNN's blocked kernel with its reorders is faster (85 us against 139 us for 1152
    // channels, one thread).
    const bool tiny_plane = window.out_h * window.out_w <= 64;
    if (!depthwise_loop_supports(window) || (tiny_plane && window.kernel_h * window.kernel_w > 9)) {
      return std::nullopt;
    }
    return window;
  }

  const Node& node_;
  const bool transposed_;
  const bool bf16_;
  FusedActivation activation_;
  Tensor constant_weights_;
  mutable std::mutex mutex_;
  Shape x_shape_, w_shape_;
  bool built_ = false, has_bias_ = false, has_residual_ = false;
  std::optional<Window2d> depthwise_;
  std::string implementation_;  // guarded by mutex_
  ConvProblem problem_;
  std::optional<dnnl::primitive> primitive_;
  memory::desc weights_desc_;
  std::optional<memory> packed_weights_;
  memory src_user_, dst_user_, residual_user_, weights_user_, bias_;
  memory src_buffer_, dst_buffer_, weights_buffer_;
  std::optional<dnnl::reorder> src_reorder_, dst_reorder_, residual_reorder_, weights_reorder_;
  size_t scratch_bytes_ = 64, dst_offset_ = 0, weights_offset_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const KernelSpec& spec) {
  return std::make_unique<ConvKernel>(spec, /*transposed=*/false);
}

std::unique_ptr<Kernel> make_conv_transpose_kernel(const KernelSpec& spec) {
  return std::make_unique<ConvKernel>(spec, /*transposed=*/true);
}

}  // namespace tandem::cpu
