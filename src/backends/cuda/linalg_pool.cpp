// MaxPool, AveragePool and the global pools. cudnnPoolingForward runs the windows it expresses
// exactly (1-D and 2-D, no dilation, equal pads on both sides, cuDNN's output size the ONNX
// one; float32, float16, float64); the own kernel runs the rest (3-D, dilations, unequal pads,
// the windows ceil_mode adds, bfloat16, int8, uint8) with the CPU backend's semantics. The
// global pools are one reduction block per plane.
#include <algorithm>
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

using DnnPooling = OwnedHandle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

PoolKind pool_kind(const Node& node) {
  if (node.op_type == "MaxPool") return PoolKind::kMax;
  return node.attr_int("count_include_pad", 0) != 0 ? PoolKind::kAverageWithPad
                                                    : PoolKind::kAverage;
}

struct PoolPlan {
  int64_t planes = 0;  // N * C
  PoolWindow window{};
  // Set where cuDNN runs the pool.
  DnnPooling pooling;
  DnnTensor x, y;
};

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, node_)),
        kind_(pool_kind(node_)),
        ceil_mode_(node_.attr_int("ceil_mode", 0) != 0),
        kernel_shape_(node_.attr_ints("kernel_shape")) {
    const Shape& x = spec.input_types[0].shape;
    if (is_static(x)) plan_for(x);
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    Tensor& y = outputs[0];
    if (y.numel() == 0) return;
    std::lock_guard lock(mutex_);
    const PoolPlan& plan = plan_for(x.shape());
    if (!plan.pooling) {
      launch_pool(elem_, kind_, x.raw(), y.raw(), plan.planes, plan.window, context_.stream());
      return;
    }
    const double one64 = 1, zero64 = 0;
    const float one32 = 1, zero32 = 0;
    const bool wide = dtype_ == DType::kFloat64;
    check(cudnnPoolingForward(context_.dnn(), plan.pooling.get(),
                              wide ? static_cast<const void*>(&one64) : &one32, plan.x.get(),
                              x.raw(), wide ? static_cast<const void*>(&zero64) : &zero32,
                              plan.y.get(), y.raw()),
          "cudnnPoolingForward");
  }

 private:
  const PoolPlan& plan_for(const Shape& x) {
    return cached_plan(plans_, x, [&] { return make_plan(x); });
  }

  PoolPlan make_plan(const Shape& x) const {
    const std::vector<int64_t> spatial(x.begin() + 2, x.end());
    const WindowGeometry g = resolve_window(node_, spatial, kernel_shape_, ceil_mode_);
    PoolPlan plan;
    plan.planes = x[0] * x[1];
    plan.window = window_3d<PoolWindow>(g, x);
    const PoolWindow& w = plan.window;
    if (!dnn_expresses(g)) return plan;
    const int64_t n = x[0], c = x[1];
    // 1-D pools are 2-D ones of height 1 (the leading 3-D axis stays 1).
    if (!fits_dnn(n, c, w.in[1], w.in[2]) || !fits_dnn(n, c, w.out[1], w.out[2])) return plan;
    cudnnPoolingDescriptor_t pooling = nullptr;
    check(cudnnCreatePoolingDescriptor(&pooling), "cudnnCreatePoolingDescriptor");
    DnnPooling owned(pooling);
    const cudnnPoolingMode_t mode = kind_ == PoolKind::kMax ? CUDNN_POOLING_MAX
                                    : kind_ == PoolKind::kAverage
                                        ? CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    check(cudnnSetPooling2dDescriptor(pooling, mode, CUDNN_NOT_PROPAGATE_NAN, i(w.kernel[1]),
                                      i(w.kernel[2]), i(w.pad_begin[1]), i(w.pad_begin[2]),
                                      i(w.stride[1]), i(w.stride[2])),
          "cudnnSetPooling2dDescriptor");
    DnnTensor x_desc = make_dnn_tensor(dtype_, n, c, w.in[1], w.in[2]);
    int dims[4] = {};
    check(cudnnGetPooling2dForwardOutputDim(pooling, x_desc.get(), &dims[0], &dims[1], &dims[2],
                                            &dims[3]),
          "cudnnGetPooling2dForwardOutputDim");
    // With ceil_mode's extra window cuDNN's (floor) size is smaller: the own kernel runs it.
    if (dims[2] != w.out[1] || dims[3] != w.out[2]) return plan;
    plan.pooling = std::move(owned);
    plan.x = std::move(x_desc);
    plan.y = make_dnn_tensor(dtype_, n, c, w.out[1], w.out[2]);
    return plan;
  }

  // Whether cuDNN's pooling descriptor can state this window: its dtypes, 2 spatial axes at
  // most, no dilation, the same padding at both ends, ints.
  bool dnn_expresses(const WindowGeometry& g) const {
    if (dtype_ != DType::kFloat32 && dtype_ != DType::kFloat16 && dtype_ != DType::kFloat64) {
      return false;
    }
    if (g.rank() > 2) return false;
    for (size_t a = 0; a < g.kernel.size(); ++a) {
      if (g.dilations[a] != 1 || g.pads_begin[a] != g.pads_end[a]) return false;
      for (int64_t v : {g.kernel[a], g.strides[a], g.pads_begin[a]}) {
        if (v > kMaxDnnValue) return false;
      }
    }
    return true;
  }

  const Node& node_;
  CudaContext& context_;
  const DType dtype_;
  const Elem elem_;
  const PoolKind kind_;
  const bool ceil_mode_;
  const std::vector<int64_t> kernel_shape_;
  std::mutex mutex_;
  std::map<Shape, PoolPlan> plans_;
};

class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context),
        elem_(require_elem(spec.input_types[0].dtype, spec.node)),
        is_max_(spec.node.op_type == "GlobalMaxPool") {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    Tensor& y = outputs[0];
    if (y.numel() == 0) return;
    const int64_t planes = x.dim(0) * x.dim(1);
    launch_global_pool(elem_, is_max_, x.raw(), y.raw(), planes, x.numel() / planes,
                       context_.stream());
  }

 private:
  CudaContext& context_;
  const Elem elem_;
  const bool is_max_;
};

std::string spatial_refusal(const Node& node, const Graph& graph) {
  const size_t rank = graph.values[static_cast<size_t>(node.inputs[0])].type.shape.size();
  if (rank < 3 || rank > 5) {
    return node.op_type + " input of rank " + std::to_string(rank) +
           " (the CUDA kernels pool 1 to 3 spatial axes)";
  }
  return "";
}

std::string max_pool_refusal(const Node& node, const Graph& graph) {
  if (std::string refusal =
          dtype_refusal(node, graph,
                        {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                         DType::kInt8, DType::kUInt8, DType::kInt64});
      !refusal.empty()) {
    return refusal;
  }
  if (input_dtype(node, graph, 0) == DType::kInt64) return "int64 " + node.op_type + " input";
  if (node.outputs.size() > 1 && node.outputs[1] >= 0 &&
      graph.last_uses()[static_cast<size_t>(node.outputs[1])] >= 0) {
    return "MaxPool's Indices output is not implemented on the CUDA backend";
  }
  return spatial_refusal(node, graph);
}

std::string float_pool_refusal(const Node& node, const Graph& graph) {
  if (std::string refusal = dtype_refusal(node, graph, kFloatTypes); !refusal.empty()) {
    return refusal;
  }
  return spatial_refusal(node, graph);
}

}  // namespace

std::vector<CudaOp> pool_ops() {
  return {{"MaxPool", max_pool_refusal, make_kernel<PoolKernel>},
          {"AveragePool", float_pool_refusal, make_kernel<PoolKernel>},
          {"GlobalMaxPool", float_pool_refusal, make_kernel<GlobalPoolKernel>},
          {"GlobalAveragePool", float_pool_refusal, make_kernel<GlobalPoolKernel>}};
}

}  // namespace tandem::cuda
