// Conv and ConvTranspose through cuDNN's legacy API, as 2-D NCHW convolutions (1-D ones with
// height 1). Descriptors and the algorithm are chosen once per input and weight shape. Conv's
// bias, residual and activation: float32 with a bias and ReLU runs
// cudnnConvolutionBiasActivationForward (the residual as its z); everything else runs the
// convolution, then the own epilogue kernel. ConvTranspose is the data gradient of the Conv
// that maps its output to its input (cudnnConvolutionBackwardData), then the epilogue.
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/kernel_common.h"
#include "backends/cuda/linalg_internal.h"
#include "ir/error.h"
#include "ir/ops/linalg_window.h"

namespace tandem::cuda {
namespace {

using DnnFilter = OwnedHandle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using DnnConvolution = OwnedHandle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using DnnActivation = OwnedHandle<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

// Workspace an algorithm may ask for; those that want more are passed over.
constexpr size_t kMaxWorkspaceBytes = size_t{512} << 20;

// A Conv's or ConvTranspose's window over cuDNN's two spatial axes (1-D ones have height 1).
struct Window2d {
  int64_t in_h = 0, in_w = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

// Window `g` of input x [N, C, (H,) W] and weights w [., ., (kH,) kW].
Window2d window_2d(const WindowGeometry& g, const Shape& x, const Shape& w) {
  const bool two_d = x.size() == 4;
  const size_t h = 0, wi = two_d ? 1 : 0;  // the axes of height (2-D only) and width
  Window2d c;
  c.in_h = two_d ? x[2] : 1;
  c.in_w = x.back();
  c.kernel_h = two_d ? w[2] : 1;
  c.kernel_w = w.back();
  c.out_h = two_d ? g.output[h] : 1;
  c.out_w = g.output[wi];
  if (two_d) {
    c.stride_h = g.strides[h];
    c.dilation_h = g.dilations[h];
    c.pad_top = g.pads_begin[h];
    c.pad_bottom = g.pads_end[h];
  }
  c.stride_w = g.strides[wi];
  c.dilation_w = g.dilations[wi];
  c.pad_left = g.pads_begin[wi];
  c.pad_right = g.pads_end[wi];
  return c;
}

// The spatial dims of an input (N, C, ...) or of a weight tensor's kernel (O, I, ...).
std::vector<int64_t> spatial_dims(const Shape& shape) { return {shape.begin() + 2, shape.end()}; }

// A Conv as a 2-D convolution: weights [out_channels, channels / groups, kernel_h, kernel_w].
struct Conv2d : Window2d {
  int64_t batch = 0, channels = 0, out_channels = 0, groups = 1;

  std::string describe() const {
    const auto s = [](int64_t v) { return std::to_string(v); };
    return s(batch) + "x" + s(channels) + "x" + s(in_h) + "x" + s(in_w) + " by " + s(out_channels) +
           "x" + s(channels / groups) + "x" + s(kernel_h) + "x" + s(kernel_w) + ", groups " +
           s(groups) + ", strides " + s(stride_h) + "," + s(stride_w) + ", dilations " +
           s(dilation_h) + "," + s(dilation_w) + ", pads " + s(pad_top) + "," + s(pad_left) + "," +
           s(pad_bottom) + "," + s(pad_right);
  }
};

Conv2d conv_geometry(const Node& node, const Shape& x, const Shape& w) {
  const WindowGeometry g =
      resolve_window(node, spatial_dims(x), spatial_dims(w), /*ceil_mode=*/false);
  Conv2d c{window_2d(g, x, w)};
  c.batch = x[0];
  c.channels = x[1];
  c.out_channels = w[0];
  c.groups = node.attr_int("group", 1);
  return c;
}

// Conv's and ConvTranspose's bias (per channel), residual and activation over y, where any is
// present.
void apply_epilogue(Elem elem, Tensor& y, const Tensor& bias, const Tensor& residual,
                    const Activation& activation, cudaStream_t stream) {
  if (!bias.defined() && !residual.defined() && activation.kind == ActivationKind::kNone) return;
  launch_epilogue(elem, y.raw(), bias.defined() ? bias.raw() : nullptr,
                  residual.defined() ? residual.raw() : nullptr, y.numel(), y.dim(1),
                  y.numel() / (y.dim(0) * y.dim(1)), activation, stream);
}

DnnFilter make_filter(DType dtype, int64_t k, int64_t c, int64_t h, int64_t w) {
  cudnnFilterDescriptor_t desc = nullptr;
  check(cudnnCreateFilterDescriptor(&desc), "cudnnCreateFilterDescriptor");
  DnnFilter owned(desc);
  check(cudnnSetFilter4dDescriptor(desc, dnn_type(dtype), CUDNN_TENSOR_NCHW, static_cast<int>(k),
                                   static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)),
        "cudnnSetFilter4dDescriptor");
  return owned;
}

// Whether float32 must stay exact fp32 (no TF32 tensor cores).
bool exact_fp32(DType dtype) { return dtype == DType::kFloat32 && !tf32_enabled(); }

DnnConvolution make_convolution(DType dtype, int64_t pad_h, int64_t pad_w, int64_t stride_h,
                                int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                                int64_t groups) {
  cudnnConvolutionDescriptor_t desc = nullptr;
  check(cudnnCreateConvolutionDescriptor(&desc), "cudnnCreateConvolutionDescriptor");
  DnnConvolution owned(desc);
  // float16 and bfloat16 accumulate in float (cuDNN's pseudo-half configurations).
  check(cudnnSetConvolution2dDescriptor(desc, static_cast<int>(pad_h), static_cast<int>(pad_w),
                                        static_cast<int>(stride_h), static_cast<int>(stride_w),
                                        static_cast<int>(dilation_h), static_cast<int>(dilation_w),
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionGroupCount(desc, static_cast<int>(groups)),
        "cudnnSetConvolutionGroupCount");
  // FMA math keeps float32 off TF32 tensor cores, which the default math type allows.
  const cudnnMathType_t math = exact_fp32(dtype)          ? CUDNN_FMA_MATH
                               : dtype == DType::kFloat32 ? CUDNN_DEFAULT_MATH
                                                          : CUDNN_TENSOR_OP_MATH;
  check(cudnnSetConvolutionMathType(desc, math), "cudnnSetConvolutionMathType");
  return owned;
}

bool tensor_op_math(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Takes into `plan` the first of cuDNN's `count` ranked `results` that runs here (exact fp32:
// without tensor cores) within the workspace limit, `workspace_size(algo, &bytes)` asking cuDNN
// for its workspace; false when none does.
template <typename Perf, typename Plan, typename WorkspaceSize>
bool take_first_algorithm(const Perf* results, int count, DType dtype, Plan& plan,
                          WorkspaceSize&& workspace_size) {
  const bool exact = exact_fp32(dtype);
  for (int i = 0; i < count; ++i) {
    const Perf& result = results[i];
    if (result.status != CUDNN_STATUS_SUCCESS || (exact && tensor_op_math(result.mathType))) {
      continue;
    }
    if (!exact) {
      check(cudnnSetConvolutionMathType(plan.convolution.get(), result.mathType),
            "cudnnSetConvolutionMathType");
    }
    size_t bytes = 0;
    if (workspace_size(result.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxWorkspaceBytes) {
      continue;
    }
    plan.algo = result.algo;
    plan.workspace_bytes = bytes;
    return true;
  }
  return false;
}

// One input and weight shape's convolution, ready to run.
struct ConvPlan {
  Conv2d geometry;
  // cuDNN pads both sides alike; unequal pads copy the input into a buffer holding the excess
  // first (with the padding both sides share left to cuDNN).
  bool pre_pad = false;
  PlaneCopy pad_copy{};
  Shape padded_shape;
  DnnTensor x, y, bias;
  DnnFilter w;
  DnnConvolution convolution;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes = 0;
  bool fused = false;  // cudnnConvolutionBiasActivationForward runs bias, residual and ReLU
};

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, node_)),
        activation_(fused_activation(node_)),
        fusable_(dtype_ == DType::kFloat32 && activation_.kind == ActivationKind::kRelu &&
                 spec.input_types.size() > 2 && spec.input_types[2].dtype != DType::kUndefined) {
    if (fusable_) {
      cudnnActivationDescriptor_t relu = nullptr;
      check(cudnnCreateActivationDescriptor(&relu), "cudnnCreateActivationDescriptor");
      relu_.reset(relu);
      check(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN,
                                         std::numeric_limits<double>::max()),
            "cudnnSetActivationDescriptor");
    }
    const Shape& x = spec.input_types[0].shape;
    const Shape& w = spec.input_types[1].shape;
    if (is_static(x) && is_static(w) && numel(x) > 0 && numel(w) > 0) plan_for(x, w);
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    const Tensor& w = inputs[1];
    const Tensor bias = inputs.size() > 2 ? inputs[2] : Tensor();
    const Tensor residual = inputs.size() > 3 ? inputs[3] : Tensor();
    Tensor& y = outputs[0];
    if (y.numel() == 0) return;
    const cudaStream_t stream = context_.stream();
    const auto epilogue = [&] { apply_epilogue(elem_, y, bias, residual, activation_, stream); };
    if (x.numel() == 0 || w.numel() == 0) {
      // No input channels: every sum is empty.
      check(cudaMemsetAsync(y.raw(), 0, y.nbytes(), stream), "cudaMemsetAsync");
      epilogue();
      return;
    }
    std::lock_guard lock(mutex_);
    ConvPlan& plan = plan_for(x.shape(), w.shape());
    const void* source = x.raw();
    Tensor padded;
    if (plan.pre_pad) {
      padded = context_.allocate(dtype_, plan.padded_shape);
      launch_copy_planes(static_cast<int>(dtype_size(dtype_)), x.raw(), padded.raw(), plan.pad_copy,
                         stream);
      source = padded.raw();
    }
    void* workspace = plan.workspace_bytes > 0 ? context_.workspace(plan.workspace_bytes) : nullptr;
    const float one = 1, zero = 0;
    if (plan.fused && bias.defined()) {
      // Without a residual, z is y itself, weighted 0.
      const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
          context_.dnn(), &one, plan.x.get(), source, plan.w.get(), w.raw(), plan.convolution.get(),
          plan.algo, workspace, plan.workspace_bytes, residual.defined() ? &one : &zero,
          plan.y.get(), residual.defined() ? residual.raw() : y.raw(), plan.bias.get(), bias.raw(),
          relu_.get(), plan.y.get(), y.raw());
      const cudnnStatus_t category = static_cast<cudnnStatus_t>(CUDNN_STATUS_CATEGORY(status));
      if (status == CUDNN_STATUS_SUCCESS) return;
      if (category != CUDNN_STATUS_NOT_SUPPORTED && category != CUDNN_STATUS_BAD_PARAM) {
        check(status, "cudnnConvolutionBiasActivationForward");
      }
      // The fused path declines this configuration (before any work): run it in parts from now.
      plan.fused = false;
    }
    check(cudnnConvolutionForward(context_.dnn(), &one, plan.x.get(), source, plan.w.get(), w.raw(),
                                  plan.convolution.get(), plan.algo, workspace,
                                  plan.workspace_bytes, &zero, plan.y.get(), y.raw()),
          "cudnnConvolutionForward");
    epilogue();
  }

 private:
  ConvPlan& plan_for(const Shape& x, const Shape& w) {
    return cached_plan(plans_, shape_key({&x, &w}), [&] { return make_plan(x, w); });
  }

  ConvPlan make_plan(const Shape& x_shape, const Shape& w_shape) const {
    ConvPlan plan;
    Conv2d& c = plan.geometry;
    c = conv_geometry(node_, x_shape, w_shape);
    const int64_t pad_h = std::min(c.pad_top, c.pad_bottom);
    const int64_t pad_w = std::min(c.pad_left, c.pad_right);
    int64_t in_h = c.in_h, in_w = c.in_w;
    if (c.pad_top != c.pad_bottom || c.pad_left != c.pad_right) {
      plan.pre_pad = true;
      in_h += c.pad_top + c.pad_bottom - 2 * pad_h;
      in_w += c.pad_left + c.pad_right - 2 * pad_w;
      plan.pad_copy = {c.batch * c.channels, c.in_h, c.in_w, in_h, in_w, c.pad_top - pad_h,
                       c.pad_left - pad_w};
      plan.padded_shape = {c.batch, c.channels, in_h, in_w};
    }
    const int64_t values[] = {pad_h,        pad_w,        c.stride_h, c.stride_w,
                              c.dilation_h, c.dilation_w, c.groups};
    const bool ints = std::all_of(std::begin(values), std::end(values),
                                  [](int64_t v) { return v <= kMaxDnnValue; });
    if (!ints || !fits_dnn(c.batch, c.channels, in_h, in_w) ||
        !fits_dnn(c.batch, c.out_channels, c.out_h, c.out_w) ||
        !fits_dnn(c.out_channels, c.channels / c.groups, c.kernel_h, c.kernel_w)) {
      throw InputError(node_.label() + ": the convolution " + c.describe() +
                       " exceeds cuDNN's 32-bit sizes");
    }
    plan.x = make_dnn_tensor(dtype_, c.batch, c.channels, in_h, in_w);
    plan.y = make_dnn_tensor(dtype_, c.batch, c.out_channels, c.out_h, c.out_w);
    plan.w = make_filter(dtype_, c.out_channels, c.channels / c.groups, c.kernel_h, c.kernel_w);
    plan.convolution = make_convolution(dtype_, pad_h, pad_w, c.stride_h, c.stride_w, c.dilation_h,
                                        c.dilation_w, c.groups);
    int dims[4] = {};
    check(cudnnGetConvolution2dForwardOutputDim(plan.convolution.get(), plan.x.get(), plan.w.get(),
                                                &dims[0], &dims[1], &dims[2], &dims[3]),
          "cudnnGetConvolution2dForwardOutputDim");
    if (dims[0] != c.batch || dims[1] != c.out_channels || dims[2] != c.out_h ||
        dims[3] != c.out_w) {
      throw InputError(node_.label() + ": cuDNN computes another output size for " + c.describe());
    }
    choose_algorithm(plan);
    plan.fused = fusable_;
    if (plan.fused) plan.bias = make_dnn_tensor(dtype_, 1, c.out_channels, 1, 1);
    return plan;
  }

  // The first forward algorithm of cuDNN's heuristic ranking that runs here.
  void choose_algorithm(ConvPlan& plan) const {
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
    int count = 0;
    check(cudnnGetConvolutionForwardAlgorithm_v7(context_.dnn(), plan.x.get(), plan.w.get(),
                                                 plan.convolution.get(), plan.y.get(),
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    const auto workspace_size = [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
      return cudnnGetConvolutionForwardWorkspaceSize(context_.dnn(), plan.x.get(), plan.w.get(),
                                                     plan.convolution.get(), plan.y.get(), algo,
                                                     bytes);
    };
    if (take_first_algorithm(results, count, dtype_, plan, workspace_size)) return;
    throw InputError(node_.label() + ": cuDNN has no forward algorithm for the " +
                     std::string(dtype_name(dtype_)) + " convolution " + plan.geometry.describe());
  }

  const Node& node_;
  CudaContext& context_;
  const DType dtype_;
  const Elem elem_;
  const Activation activation_;
  const bool fusable_;  // float32 with a bias and a fused ReLU
  DnnActivation relu_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, ConvPlan> plans_;
};

// A ConvTranspose as the data gradient of a 2-D convolution from its output (out_channels) to
// its input (in_channels); weights [in_channels, out_channels / groups, kernel_h, kernel_w].
// pad_top and pad_left: what is cropped off the start of the full result (the end pads are
// not used).
struct Deconv2d : Window2d {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;

  std::string describe() const {
    const auto s = [](int64_t v) { return std::to_string(v); };
    return s(batch) + "x" + s(in_channels) + "x" + s(in_h) + "x" + s(in_w) + " by " +
           s(in_channels) + "x" + s(out_channels / groups) + "x" + s(kernel_h) + "x" + s(kernel_w) +
           " to " + s(out_h) + "x" + s(out_w) + ", groups " + s(groups) + ", strides " +
           s(stride_h) + "," + s(stride_w) + ", dilations " + s(dilation_h) + "," + s(dilation_w);
  }
};

Deconv2d deconv_geometry(const Node& node, const Shape& x, const Shape& w) {
  const WindowGeometry g = resolve_transposed_window(node, spatial_dims(x), spatial_dims(w));
  Deconv2d c{window_2d(g, x, w)};
  c.groups = node.attr_int("group", 1);
  c.batch = x[0];
  c.in_channels = x[1];
  c.out_channels = w[1] * c.groups;
  return c;
}

// How one spatial axis of a ConvTranspose maps onto cuDNN: the padding of the forward
// convolution and the size of the gradient cuDNN writes, and where the output starts in it.
struct DeconvAxis {
  int64_t pad = 0, size = 0, start = 0;
};

DeconvAxis deconv_axis(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                       int64_t pad_begin) {
  const int64_t extent = (kernel - 1) * dilation + 1;
  // cuDNN pads both ends by the same amount and needs its forward size from `out` to be `in`;
  // output_padding and unequal pads often allow that directly.
  const int64_t rest = out + 2 * pad_begin - extent - (in - 1) * stride;
  if (rest >= 0 && rest < stride) return {pad_begin, out, 0};
  // Otherwise cuDNN writes the full transposed result, which the output is cut from (zeros
  // where it reaches past it).
  return {0, (in - 1) * stride + extent, pad_begin};
}

struct DeconvPlan {
  Deconv2d geometry;
  bool crop = false;  // the gradient is written to a buffer, and the output copied out of it
  Shape full_shape;
  PlaneCopy crop_copy{};
  DnnTensor x, gradient;
  DnnFilter w;
  DnnConvolution convolution;
  cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  size_t workspace_bytes = 0;
};

class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, node_)),
        activation_(fused_activation(node_)) {
    const Shape& x = spec.input_types[0].shape;
    const Shape& w = spec.input_types[1].shape;
    if (is_static(x) && is_static(w) && numel(x) > 0 && numel(w) > 0) plan_for(x, w);
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    const Tensor& w = inputs[1];
    const Tensor bias = inputs.size() > 2 ? inputs[2] : Tensor();
    Tensor& y = outputs[0];
    if (y.numel() == 0) return;
    const cudaStream_t stream = context_.stream();
    const auto epilogue = [&] { apply_epilogue(elem_, y, bias, Tensor(), activation_, stream); };
    if (x.numel() == 0 || w.numel() == 0) {
      check(cudaMemsetAsync(y.raw(), 0, y.nbytes(), stream), "cudaMemsetAsync");
      epilogue();
      return;
    }
    std::lock_guard lock(mutex_);
    const DeconvPlan& plan = plan_for(x.shape(), w.shape());
    Tensor full;
    void* gradient = y.raw();
    if (plan.crop) {
      full = context_.allocate(dtype_, plan.full_shape);
      gradient = full.raw();
    }
    void* workspace = plan.workspace_bytes > 0 ? context_.workspace(plan.workspace_bytes) : nullptr;
    const float one = 1, zero = 0;
    check(cudnnConvolutionBackwardData(context_.dnn(), &one, plan.w.get(), w.raw(), plan.x.get(),
                                       x.raw(), plan.convolution.get(), plan.algo, workspace,
                                       plan.workspace_bytes, &zero, plan.gradient.get(), gradient),
          "cudnnConvolutionBackwardData");
    if (plan.crop) {
      launch_copy_planes(static_cast<int>(dtype_size(dtype_)), full.raw(), y.raw(), plan.crop_copy,
                         stream);
    }
    epilogue();
  }

 private:
  const DeconvPlan& plan_for(const Shape& x, const Shape& w) {
    return cached_plan(plans_, shape_key({&x, &w}), [&] { return make_plan(x, w); });
  }

  DeconvPlan make_plan(const Shape& x_shape, const Shape& w_shape) const {
    DeconvPlan plan;
    Deconv2d& c = plan.geometry;
    c = deconv_geometry(node_, x_shape, w_shape);
    const DeconvAxis h =
        deconv_axis(c.in_h, c.out_h, c.kernel_h, c.stride_h, c.dilation_h, c.pad_top);
    const DeconvAxis w =
        deconv_axis(c.in_w, c.out_w, c.kernel_w, c.stride_w, c.dilation_w, c.pad_left);
    plan.crop = h.size != c.out_h || w.size != c.out_w || h.start != 0 || w.start != 0;
    if (plan.crop) {
      plan.full_shape = {c.batch, c.out_channels, h.size, w.size};
      plan.crop_copy = {
          c.batch * c.out_channels, h.size, w.size, c.out_h, c.out_w, -h.start, -w.start};
    }
    const int64_t values[] = {h.pad,        w.pad,        c.stride_h, c.stride_w,
                              c.dilation_h, c.dilation_w, c.groups};
    const bool ints = std::all_of(std::begin(values), std::end(values),
                                  [](int64_t v) { return v <= kMaxDnnValue; });
    if (!ints || !fits_dnn(c.batch, c.in_channels, c.in_h, c.in_w) ||
        !fits_dnn(c.batch, c.out_channels, h.size, w.size) ||
        !fits_dnn(c.batch, c.out_channels, c.out_h, c.out_w) ||
        !fits_dnn(c.in_channels, c.out_channels / c.groups, c.kernel_h, c.kernel_w)) {
      throw InputError(node_.label() + ": the transposed convolution " + c.describe() +
                       " exceeds cuDNN's 32-bit sizes");
    }
    plan.x = make_dnn_tensor(dtype_, c.batch, c.in_channels, c.in_h, c.in_w);
    plan.gradient = make_dnn_tensor(dtype_, c.batch, c.out_channels, h.size, w.size);
    plan.w = make_filter(dtype_, c.in_channels, c.out_channels / c.groups, c.kernel_h, c.kernel_w);
    plan.convolution = make_convolution(dtype_, h.pad, w.pad, c.stride_h, c.stride_w, c.dilation_h,
                                        c.dilation_w, c.groups);
    int dims[4] = {};
    check(
        cudnnGetConvolution2dForwardOutputDim(plan.convolution.get(), plan.gradient.get(),
                                              plan.w.get(), &dims[0], &dims[1], &dims[2], &dims[3]),
        "cudnnGetConvolution2dForwardOutputDim");
    if (dims[0] != c.batch || dims[1] != c.in_channels || dims[2] != c.in_h || dims[3] != c.in_w) {
      throw InputError(node_.label() + ": cuDNN's convolution does not invert to " + c.describe());
    }
    choose_algorithm(plan);
    return plan;
  }

  // As ConvKernel::choose_algorithm, among the data-gradient algorithms.
  void choose_algorithm(DeconvPlan& plan) const {
    cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {};
    int count = 0;
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              context_.dnn(), plan.w.get(), plan.x.get(), plan.convolution.get(),
              plan.gradient.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, results),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    const auto workspace_size = [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
      return cudnnGetConvolutionBackwardDataWorkspaceSize(context_.dnn(), plan.w.get(),
                                                          plan.x.get(), plan.convolution.get(),
                                                          plan.gradient.get(), algo, bytes);
    };
    if (take_first_algorithm(results, count, dtype_, plan, workspace_size)) return;
    throw InputError(node_.label() + ": cuDNN has no algorithm for the " +
                     std::string(dtype_name(dtype_)) + " transposed convolution " +
                     plan.geometry.describe());
  }

  const Node& node_;
  CudaContext& context_;
  const DType dtype_;
  const Elem elem_;
  const Activation activation_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, DeconvPlan> plans_;
};

const Shape& input_shape(const Node& node, const Graph& graph, size_t i) {
  return graph.values[static_cast<size_t>(node.inputs[i])].type.shape;
}

// What cuDNN's int-sized descriptors cannot take, where the graph already says so.
std::string dnn_range_refusal(const Node& node, const Graph& graph) {
  for (const char* name : {"strides", "dilations", "pads", "kernel_shape"}) {
    for (int64_t v : node.attr_ints(name)) {
      if (v > kMaxDnnValue) return "attribute '" + std::string(name) + "' beyond cuDNN's int range";
    }
  }
  if (node.attr_int("group", 1) > kMaxDnnValue) return "group beyond cuDNN's int range";
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id < 0) continue;
      const Value& value = graph.values[static_cast<size_t>(id)];
      double elements = 1;
      for (int64_t d : value.type.shape) elements *= static_cast<double>(std::max<int64_t>(d, 1));
      if (elements > static_cast<double>(kMaxDnnValue)) {
        return value.name + " has more elements than cuDNN's 2^31 - 1";
      }
    }
  }
  return "";
}

std::string conv_refusal(const Node& node, const Graph& graph) {
  if (std::string refusal =
          dtype_refusal(node, graph, {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
      !refusal.empty()) {
    return refusal + " (the CUDA backend's " + node.op_type +
           " takes float32, float16 and bfloat16)";
  }
  const size_t rank = input_shape(node, graph, 0).size();
  if (rank == 5) {
    return "3-D " + node.op_type + " is not implemented on the CUDA backend";
  }
  if (rank != 3 && rank != 4) return node.op_type + " input of rank " + std::to_string(rank);
  if (std::string refusal = dnn_range_refusal(node, graph); !refusal.empty()) return refusal;
  return activation_refusal(node);
}

}  // namespace

std::vector<CudaOp> conv_ops() {
  return {{"Conv", conv_refusal, make_kernel<ConvKernel>},
          {"ConvTranspose", conv_refusal, make_kernel<ConvTransposeKernel>}};
}

}  // namespace tandem::cuda
