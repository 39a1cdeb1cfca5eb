// CUDA kernels of the reduction family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax,
// LayerNormalization, InstanceNormalization, BatchNormalization (inference), LpNormalization
// and CumSum. The schemas (ir/ops/reduction*.cpp) have checked dtypes, shapes and attribute
// values; the kernels follow the CPU backend (backends/cpu/reduction*.cpp) and also take
// float16/bfloat16, computing in float32.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernel_common.h"
#include "backends/cuda/reduction_launch.h"
#include "ir/error.h"

namespace tandem::cuda {
namespace {

// Types outside the kernels (int16 anywhere), ranks above kMaxRank, and an input 0 of a type
// `accepts` refuses.
std::string refusal_unless(const Node& node, const Graph& graph, bool (*accepts)(DType)) {
  std::string why = dtype_refusal(node, graph, kNumericTypes);
  if (why.empty()) why = rank_refusal(node, graph);
  const DType dtype = input_dtype(node, graph, 0);
  if (why.empty() && !accepts(dtype)) {
    why = node.op_type + " of " + std::string(dtype_name(dtype)) +
          " is not implemented on the CUDA backend";
  }
  return why;
}

int64_t input_rank(const KernelSpec& spec) {
  return static_cast<int64_t>(spec.input_types[0].shape.size());
}

AxisView view_around(const Shape& shape, size_t first, size_t end) {
  return {extent_of(shape, 0, first), extent_of(shape, first, end),
          extent_of(shape, end, shape.size())};
}

// `shape` (dense) split into the dims kept and the dims reduced, each run of neighbouring dims
// of one kind merged into one; dims of extent 1 are left out.
ReduceLayout reduce_layout(const Shape& shape, const std::vector<bool>& reduced) {
  ReduceLayout layout;
  const std::vector<int64_t> strides = contiguous_strides(shape);
  std::optional<bool> previous_reduced;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    Dims& dims = reduced[d] ? layout.reduced : layout.kept;
    if (previous_reduced == reduced[d]) {
      dims.size[dims.rank - 1] *= shape[d];
    } else {
      dims.size[dims.rank++] = shape[d];
    }
    dims.stride[dims.rank - 1] = strides[d];
    previous_reduced = reduced[d];
  }
  return layout;
}

// ---- Reduce* ----

struct ReduceInfo {
  ReduceOp op;
  int axes_input_since;  // opset from which `axes` is an input instead of an attribute
  bool orders_only;      // Max/Min: bool and 8-bit integers too
};

constexpr ReduceInfo info_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return {op, 13, false};
    case ReduceOp::kMax:
    case ReduceOp::kMin: return {op, 18, true};
    default: return {op, 18, false};
  }
}

// The axes of a Reduce* node; nullopt when they come from an input that is not a constant.
// `axes` is that input's value (null when not a constant) and `axes_shape` its shape (null when
// the input is absent).
std::optional<std::vector<int64_t>> axes_of(const Node& node, int opset, const ReduceInfo& info,
                                            const Tensor* axes, const Shape* axes_shape) {
  if (opset < info.axes_input_since) return node.attr_ints("axes");
  if (!axes_shape) return std::vector<int64_t>{};
  if (axes) return axes->to_int64s();
  if (is_static(*axes_shape) && numel(*axes_shape) == 0) return std::vector<int64_t>{};
  return std::nullopt;
}

template <ReduceOp kOp>
bool reduce_accepts(DType dtype) {
  if (is_floating(dtype) || dtype == DType::kInt32 || dtype == DType::kInt64) return true;
  return info_of(kOp).orders_only &&
         (dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kBool);
}

template <ReduceOp kOp>
std::string reduce_refusal(const Node& node, const Graph& graph) {
  constexpr ReduceInfo kInfo = info_of(kOp);
  std::string why = refusal_unless(node, graph, &reduce_accepts<kOp>);
  if (!why.empty()) return why;
  const bool axes_present = has_input(node, 1);
  const Value* axes = axes_present ? &graph.values[static_cast<size_t>(node.inputs[1])] : nullptr;
  if (!axes_of(node, graph.opset, kInfo, axes && axes->is_constant() ? &axes->constant : nullptr,
               axes ? &axes->type.shape : nullptr)) {
    return "axes that are not a constant (the CUDA kernels need them when compiled)";
  }
  return "";
}

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(ReduceOp op, Elem elem, std::vector<bool> reduced, CudaContext& context)
      : op_(op), elem_(elem), reduced_(std::move(reduced)), context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    launch_reduce(op_, elem_, inputs[0].raw(), reduce_layout(inputs[0].shape(), reduced_),
                  outputs[0].raw(), context_.stream());
  }

 private:
  const ReduceOp op_;
  const Elem elem_;
  const std::vector<bool> reduced_;  // per input dim
  CudaContext& context_;
};

template <ReduceOp kOp>
std::unique_ptr<Kernel> make_reduce(const KernelSpec& spec, CudaContext& context) {
  const Node& node = spec.node;
  const bool axes_present = has_input(node, 1);
  const std::optional<std::vector<int64_t>> axes =
      axes_of(node, spec.opset, info_of(kOp), axes_present ? spec.constant_inputs[1] : nullptr,
              axes_present ? &spec.input_types[1].shape : nullptr);
  if (!axes) throw InputError(node.label() + ": axes must be a constant on the CUDA backend");
  const int64_t rank = input_rank(spec);
  // No axes reduce every dim, unless noop_with_empty_axes makes the op elementwise.
  std::vector<bool> reduced(static_cast<size_t>(rank),
                            axes->empty() && node.attr_int("noop_with_empty_axes", 0) == 0);
  for (int64_t axis : *axes) {
    if (axis < -rank || axis >= rank) {
      throw InputError(node.label() + ": axis " + std::to_string(axis) +
                       " is out of range for rank " + std::to_string(rank));
    }
    reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  }
  return std::make_unique<ReduceKernel>(kOp, input_elem(spec, 0), std::move(reduced), context);
}

// ---- ArgMax, ArgMin ----

bool arg_reduce_accepts(DType dtype) { return dtype != DType::kBool; }

std::string arg_reduce_refusal(const Node& node, const Graph& graph) {
  return refusal_unless(node, graph, &arg_reduce_accepts);
}

class ArgReduceKernel final : public Kernel {
 public:
  ArgReduceKernel(const KernelSpec& spec, bool argmax, CudaContext& context)
      : node_(spec.node),
        argmax_(argmax),
        select_last_(spec.node.attr_int("select_last_index", 0) != 0),
        axis_(static_cast<size_t>(normalize_axis(spec.node.attr_int("axis", 0), input_rank(spec)))),
        elem_(input_elem(spec, 0)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    if (data.dim(static_cast<int64_t>(axis_)) == 0) {
      throw InputError(node_.label() + ": cannot pick an index on an empty axis");
    }
    std::vector<bool> reduced(data.shape().size(), false);
    reduced[axis_] = true;
    launch_arg_reduce(argmax_, select_last_, elem_, data.raw(),
                      reduce_layout(data.shape(), reduced), outputs[0].data<int64_t>(),
                      context_.stream());
  }

 private:
  const Node& node_;
  const bool argmax_;
  const bool select_last_;
  const size_t axis_;
  const Elem elem_;
  CudaContext& context_;
};

template <bool kArgMax>
std::unique_ptr<Kernel> make_arg_reduce(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<ArgReduceKernel>(spec, kArgMax, context);
}

// ---- Softmax, LogSoftmax, LpNormalization ----

// Every input and output a float (data, normalisation parameters, statistics).
std::string float_refusal(const Node& node, const Graph& graph) {
  std::string why = dtype_refusal(node, graph, kFloatTypes);
  if (why.empty()) why = rank_refusal(node, graph);
  return why;
}

// From opset 13 along `axis` (default -1); before it, over the input coerced to 2-D at `axis`
// (default 1).
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const KernelSpec& spec, bool log_softmax, CudaContext& context)
      : log_softmax_(log_softmax),
        coerce_to_2d_(spec.opset < 13),
        axis_(static_cast<size_t>(
            normalize_axis(spec.node.attr_int("axis", coerce_to_2d_ ? 1 : -1), input_rank(spec)))),
        elem_(input_elem(spec, 0)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Shape& shape = inputs[0].shape();
    const AxisView view = view_around(shape, axis_, coerce_to_2d_ ? shape.size() : axis_ + 1);
    launch_softmax(log_softmax_, elem_, inputs[0].raw(), outputs[0].raw(), view, context_.stream());
  }

 private:
  const bool log_softmax_;
  const bool coerce_to_2d_;
  const size_t axis_;
  const Elem elem_;
  CudaContext& context_;
};

template <bool kLog>
std::unique_ptr<Kernel> make_softmax(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<SoftmaxKernel>(spec, kLog, context);
}

class LpNormKernel final : public Kernel {
 public:
  LpNormKernel(const KernelSpec& spec, CudaContext& context)
      : p_(static_cast<int>(spec.node.attr_int("p", 2))),
        axis_(
            static_cast<size_t>(normalize_axis(spec.node.attr_int("axis", -1), input_rank(spec)))),
        elem_(input_elem(spec, 0)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    launch_lp_norm(p_, elem_, inputs[0].raw(), outputs[0].raw(),
                   view_around(inputs[0].shape(), axis_, axis_ + 1), context_.stream());
  }

 private:
  const int p_;
  const size_t axis_;
  const Elem elem_;
  CudaContext& context_;
};

// ---- LayerNormalization, InstanceNormalization, BatchNormalization ----

// Input `index` as a normalisation parameter (absent: no data).
NormParam param_of(std::span<const Tensor> inputs, size_t index) {
  NormParam param;
  if (index >= inputs.size() || !inputs[index].defined()) return param;
  param.data = inputs[index].raw();
  param.elem = *elem_of(inputs[index].dtype());
  return param;
}

// A LayerNormalization scale or bias broadcast over the normalised dims (right-aligned; the
// schema checked that it broadcasts); one dense run when it has one value per element.
NormParam layer_norm_param(std::span<const Tensor> inputs, size_t index,
                           const Shape& normalised_shape) {
  NormParam param = param_of(inputs, index);
  if (!param.data) return param;
  const Tensor& tensor = inputs[index];
  if (tensor.numel() == numel(normalised_shape)) {
    param.view = contiguous({tensor.numel()});
  } else {
    param.view = broadcast_to(tensor.shape(), normalised_shape);
  }
  return param;
}

class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(const KernelSpec& spec, CudaContext& context)
      : axis_(
            static_cast<size_t>(normalize_axis(spec.node.attr_int("axis", -1), input_rank(spec)))),
        epsilon_(spec.node.attr_float("epsilon", 1e-5f)),
        elem_(input_elem(spec, 0)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Shape& shape = inputs[0].shape();
    const Shape normalised_shape(shape.begin() + static_cast<int64_t>(axis_), shape.end());
    const auto optional_output = [&](size_t i) {
      return i < outputs.size() && outputs[i].defined() ? outputs[i].data<float>() : nullptr;
    };
    launch_layer_norm(elem_, inputs[0].raw(), outputs[0].raw(), extent_of(shape, 0, axis_),
                      numel(normalised_shape), layer_norm_param(inputs, 1, normalised_shape),
                      layer_norm_param(inputs, 2, normalised_shape), epsilon_, optional_output(1),
                      optional_output(2), context_.stream());
  }

 private:
  const size_t axis_;
  const double epsilon_;
  const Elem elem_;
  CudaContext& context_;
};

class InstanceNormKernel final : public Kernel {
 public:
  InstanceNormKernel(const KernelSpec& spec, CudaContext& context)
      : epsilon_(spec.node.attr_float("epsilon", 1e-5f)),
        elem_(input_elem(spec, 0)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Shape& shape = inputs[0].shape();
    launch_instance_norm(elem_, inputs[0].raw(), outputs[0].raw(), extent_of(shape, 0, 2),
                         extent_of(shape, 2, shape.size()), shape[1], param_of(inputs, 1),
                         param_of(inputs, 2), epsilon_, context_.stream());
  }

 private:
  const double epsilon_;
  const Elem elem_;
  CudaContext& context_;
};

// Inference only (the schema refuses training); the optional running mean and variance outputs
// pass the inputs through unchanged.
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(const KernelSpec& spec, CudaContext& context)
      : epsilon_(spec.node.attr_float("epsilon", 1e-5f)),
        elem_(input_elem(spec, 0)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    const Shape& shape = data.shape();
    launch_batch_norm(elem_, data.raw(), outputs[0].raw(), data.numel(), shape[1],
                      extent_of(shape, 2, shape.size()), param_of(inputs, 1), param_of(inputs, 2),
                      param_of(inputs, 3), param_of(inputs, 4), epsilon_, context_.stream());
    for (size_t i = 1; i < outputs.size() && i < 3; ++i) {
      if (outputs[i].defined()) copy_tensor(inputs[i + 2], outputs[i], context_);
    }
  }

 private:
  const double epsilon_;
  const Elem elem_;
  CudaContext& context_;
};

// ---- CumSum ----

bool cumsum_accepts(DType dtype) {
  return is_floating(dtype) || dtype == DType::kInt32 || dtype == DType::kInt64;
}

std::string cumsum_refusal(const Node& node, const Graph& graph) {
  return refusal_unless(node, graph, &cumsum_accepts);
}

// The axis comes from a constant when the kernel is made, else it is read back from the device
// at each run (a synchronisation).
class CumSumKernel final : public Kernel {
 public:
  CumSumKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        exclusive_(spec.node.attr_int("exclusive", 0) != 0),
        reverse_(spec.node.attr_int("reverse", 0) != 0),
        elem_(input_elem(spec, 0)),
        context_(context) {
    if (const Tensor* axis = spec.constant_inputs[1]) axis_ = axis->to_int64s().at(0);
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    const int64_t value = axis_ ? *axis_ : read_axis(inputs[1]);
    const int64_t rank = data.rank();
    if (value < -rank || value >= rank) {
      throw InputError(node_.label() + ": axis " + std::to_string(value) +
                       " is out of range for rank " + std::to_string(rank));
    }
    const auto axis = static_cast<size_t>(value < 0 ? value + rank : value);
    launch_cumsum(elem_, data.raw(), outputs[0].raw(), view_around(data.shape(), axis, axis + 1),
                  exclusive_, reverse_, context_.stream());
  }

 private:
  int64_t read_axis(const Tensor& axis) const {
    if (axis.numel() != 1) {
      throw InputError(node_.label() + ": axis must hold a single value, not shape " +
                       shape_str(axis.shape()));
    }
    if (axis.dtype() == DType::kInt32) {
      int32_t value = 0;
      context_.read_back(&value, axis.raw(), sizeof(value));
      return value;
    }
    int64_t value = 0;
    context_.read_back(&value, axis.raw(), sizeof(value));
    return value;
  }

  const Node& node_;
  const bool exclusive_;
  const bool reverse_;
  const Elem elem_;
  CudaContext& context_;
  std::optional<int64_t> axis_;
};

}  // namespace

std::vector<CudaOp> reduction_ops() {
  return {
      {"ReduceSum", &reduce_refusal<ReduceOp::kSum>, &make_reduce<ReduceOp::kSum>},
      {"ReduceMean", &reduce_refusal<ReduceOp::kMean>, &make_reduce<ReduceOp::kMean>},
      {"ReduceMax", &reduce_refusal<ReduceOp::kMax>, &make_reduce<ReduceOp::kMax>},
      {"ReduceMin", &reduce_refusal<ReduceOp::kMin>, &make_reduce<ReduceOp::kMin>},
      {"ReduceProd", &reduce_refusal<ReduceOp::kProd>, &make_reduce<ReduceOp::kProd>},
      {"ReduceL1", &reduce_refusal<ReduceOp::kL1>, &make_reduce<ReduceOp::kL1>},
      {"ReduceL2", &reduce_refusal<ReduceOp::kL2>, &make_reduce<ReduceOp::kL2>},
      {"ReduceSumSquare", &reduce_refusal<ReduceOp::kSumSquare>,
       &make_reduce<ReduceOp::kSumSquare>},
      {"ReduceLogSum", &reduce_refusal<ReduceOp::kLogSum>, &make_reduce<ReduceOp::kLogSum>},
      {"ReduceLogSumExp", &reduce_refusal<ReduceOp::kLogSumExp>,
       &make_reduce<ReduceOp::kLogSumExp>},
      {"ArgMax", &arg_reduce_refusal, &make_arg_reduce<true>},
      {"ArgMin", &arg_reduce_refusal, &make_arg_reduce<false>},
      {"Softmax", &float_refusal, &make_softmax<false>},
      {"LogSoftmax", &float_refusal, &make_softmax<true>},
      {"LayerNormalization", &float_refusal, &make_kernel<LayerNormKernel>},
      {"InstanceNormalization", &float_refusal, &make_kernel<InstanceNormKernel>},
      {"BatchNormalization", &float_refusal, &make_kernel<BatchNormKernel>},
      {"LpNormalization", &float_refusal, &make_kernel<LpNormKernel>},
      {"CumSum", &cumsum_refusal, &make_kernel<CumSumKernel>},
  };
}

}  // namespace tandem::cuda
