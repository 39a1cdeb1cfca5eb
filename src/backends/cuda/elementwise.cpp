// CUDA kernels of the elementwise family: broadcasting binary and variadic ops, Pow, Where,
// unary math and activations, Clip, Cast/CastLike and (inference-mode) Dropout. The schemas
// (ir/ops/elementwise.cpp) have checked dtypes, shapes and attribute values; the kernels follow
// the CPU backend's semantics (backends/cpu/elementwise*.cpp) and also take float16/bfloat16.
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/elementwise_launch.h"
#include "backends/cuda/kernel_common.h"
#include "ir/error.h"

namespace tandem::cuda {
namespace {

// The operand types an op's kernel takes: the schema's set, less int16.
enum class Operands { kAny, kNumbers, kSigned, kFloats, kBool };

bool accepts(Operands operands, DType dtype) {
  switch (operands) {
    case Operands::kAny: return elem_of(dtype).has_value();
    case Operands::kNumbers: return elem_of(dtype).has_value() && dtype != DType::kBool;
    case Operands::kSigned:
      return is_floating(dtype) || dtype == DType::kInt64 || dtype == DType::kInt32 ||
             dtype == DType::kInt8;
    case Operands::kFloats: return is_floating(dtype);
    case Operands::kBool: return dtype == DType::kBool;
  }
  return false;
}

// Refuses types outside the kernels (int16 anywhere), ranks above kMaxRank, and operand
// `kOperand` outside `kOperands`.
template <Operands kOperands, size_t kOperand = 0>
std::string operand_refusal(const Node& node, const Graph& graph) {
  std::string why = dtype_refusal(node, graph, kNumericTypes);
  if (why.empty()) why = rank_refusal(node, graph);
  const DType dtype = input_dtype(node, graph, kOperand);
  if (why.empty() && !accepts(kOperands, dtype)) {
    why = node.op_type + " of " + std::string(dtype_name(dtype)) +
          " is not implemented on the CUDA backend";
  }
  return why;
}

// out = op(a, b) with a and b read through their broadcast views of out.
void broadcast_binary(BinaryOp op, Elem elem, const Tensor& a, const Tensor& b, const Tensor& out,
                      CudaContext& context) {
  launch_binary(op, elem, a.raw(), broadcast_to(a.shape(), out.shape()), b.raw(),
                broadcast_to(b.shape(), out.shape()), out.raw(), context.stream());
}

// ---- Binary, variadic, Pow, Where ----

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(BinaryOp op, Elem elem, CudaContext& context)
      : op_(op), elem_(elem), context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    broadcast_binary(op_, elem_, inputs[0], inputs[1], outputs[0], context_);
  }

 private:
  const BinaryOp op_;
  const Elem elem_;
  CudaContext& context_;
};

template <BinaryOp kOp>
std::unique_ptr<Kernel> make_binary(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<BinaryKernel>(kOp, input_elem(spec, 0), context);
}

// Floats always take C's fmod; integers the divisor's sign unless fmod=1.
std::unique_ptr<Kernel> make_mod(const KernelSpec& spec, CudaContext& context) {
  const bool c_style = spec.node.attr_int("fmod", 0) == 1 || is_floating(spec.input_types[0].dtype);
  return std::make_unique<BinaryKernel>(c_style ? BinaryOp::kTruncMod : BinaryOp::kFloorMod,
                                        input_elem(spec, 0), context);
}

// Max, Min, Sum and Mean fold their inputs pairwise into the output, as the CPU backend does.
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(BinaryOp op, bool mean, Elem elem, CudaContext& context)
      : op_(op), mean_(mean), elem_(elem), context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& out = outputs[0];
    if (inputs.size() == 1) {
      copy_tensor(inputs[0], out, context_);
      return;
    }
    broadcast_binary(op_, elem_, inputs[0], inputs[1], out, context_);
    for (size_t k = 2; k < inputs.size(); ++k) {
      broadcast_binary(op_, elem_, out, inputs[k], out, context_);
    }
    if (mean_) {
      UnaryParams params;
      params.alpha = static_cast<float>(inputs.size());
      launch_unary(UnaryOp::kDivide, elem_, out.raw(), out.raw(), out.numel(), params,
                   context_.stream());
    }
  }

 private:
  const BinaryOp op_;
  const bool mean_;
  const Elem elem_;
  CudaContext& context_;
};

template <BinaryOp kOp, bool kMean = false>
std::unique_ptr<Kernel> make_variadic(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<VariadicKernel>(kOp, kMean, input_elem(spec, 0), context);
}

// A constant scalar exponent of 0.5, 1, 2 or 3 on a float base is computed without pow, as on
// the CPU backend, when the output has the base's shape.
class PowKernel final : public Kernel {
 public:
  PowKernel(const KernelSpec& spec, CudaContext& context)
      : base_(input_elem(spec, 0)), exponent_(input_elem(spec, 1)), context_(context) {
    const Tensor* exponent = spec.constant_inputs[1];
    if (!is_floating(spec.input_types[0].dtype) || !exponent || exponent->numel() != 1) return;
    const double value = exponent->to_doubles()[0];
    if (value == 1.0) {
      exponent_one_ = true;
    } else if (value == 2.0) {
      by_unary_ = UnaryOp::kSquare;
    } else if (value == 3.0) {
      by_unary_ = UnaryOp::kCube;
    } else if (value == 0.5) {
      by_unary_ = UnaryOp::kSqrt;
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& base = inputs[0];
    const Tensor& exponent = inputs[1];
    const Tensor& out = outputs[0];
    if (base.shape() == out.shape()) {
      if (exponent_one_) {
        copy_tensor(base, out, context_);
        return;
      }
      if (by_unary_) {
        launch_unary(*by_unary_, base_, base.raw(), out.raw(), out.numel(), {}, context_.stream());
        return;
      }
    }
    launch_pow(base_, exponent_, base.raw(), broadcast_to(base.shape(), out.shape()),
               exponent.raw(), broadcast_to(exponent.shape(), out.shape()), out.raw(),
               context_.stream());
  }

 private:
  const Elem base_;
  const Elem exponent_;
  CudaContext& context_;
  bool exponent_one_ = false;
  std::optional<UnaryOp> by_unary_;
};

class WhereKernel final : public Kernel {
 public:
  WhereKernel(const KernelSpec&, CudaContext& context) : context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& out = outputs[0];
    const Shape& shape = out.shape();
    launch_where(static_cast<int>(dtype_size(out.dtype())), inputs[0].raw(),
                 broadcast_to(inputs[0].shape(), shape), inputs[1].raw(),
                 broadcast_to(inputs[1].shape(), shape), inputs[2].raw(),
                 broadcast_to(inputs[2].shape(), shape), out.raw(), context_.stream());
  }

 private:
  CudaContext& context_;
};

// ---- Unary ops ----

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(UnaryOp op, Elem elem, const UnaryParams& params, CudaContext& context)
      : op_(op), elem_(elem), params_(params), context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    launch_unary(op_, elem_, inputs[0].raw(), outputs[0].raw(), outputs[0].numel(), params_,
                 context_.stream());
  }

 private:
  const UnaryOp op_;
  const Elem elem_;
  const UnaryParams params_;
  CudaContext& context_;
};

// The attributes an op reads, with the CPU backend's defaults.
UnaryParams params_of(UnaryOp op, const Node& node) {
  UnaryParams params;
  switch (op) {
    case UnaryOp::kIsInf:
      params.detect_negative = node.attr_int("detect_negative", 1) != 0;
      params.detect_positive = node.attr_int("detect_positive", 1) != 0;
      break;
    case UnaryOp::kLeakyRelu: params.alpha = node.attr_float("alpha", 0.01f); break;
    case UnaryOp::kElu:
    case UnaryOp::kCelu: params.alpha = node.attr_float("alpha", 1.0f); break;
    case UnaryOp::kSelu:
      params.alpha = node.attr_float("alpha", 1.67326319217681884765625f);
      params.gamma = node.attr_float("gamma", 1.05070102214813232421875f);
      break;
    case UnaryOp::kHardSigmoid:
      params.alpha = node.attr_float("alpha", 0.2f);
      params.beta = node.attr_float("beta", 0.5f);
      break;
    default: break;
  }
  return params;
}

template <UnaryOp kOp>
std::unique_ptr<Kernel> make_unary(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<UnaryKernel>(kOp, input_elem(spec, 0), params_of(kOp, spec.node),
                                       context);
}

std::unique_ptr<Kernel> make_gelu(const KernelSpec& spec, CudaContext& context) {
  const bool tanh = spec.node.attr_string("approximate", "none") == "tanh";
  return std::make_unique<UnaryKernel>(tanh ? UnaryOp::kGeluTanh : UnaryOp::kGelu,
                                       input_elem(spec, 0), UnaryParams{}, context);
}

// Clip's optional min (input 1) and max (input 2): taken from constants when the kernel is
// made, else read back from the device at each run (a synchronisation).
class ClipKernel final : public Kernel {
 public:
  ClipKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        elem_(input_elem(spec, 0)),
        element_size_(dtype_size(spec.input_types[0].dtype)),
        context_(context) {
    for (size_t i = 0; i < bounds_.size(); ++i) {
      Bound& bound = bounds_[i];
      bound.present = has_input(node_, i + 1);
      if (!bound.present || !spec.constant_inputs[i + 1]) continue;
      const Tensor& constant = *spec.constant_inputs[i + 1];
      require_one_value(constant, i);
      std::memcpy(bound.value.data(), constant.raw(), element_size_);
      bound.known = true;
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    std::array<const void*, 2> host_bounds = {nullptr, nullptr};
    for (size_t i = 0; i < bounds_.size(); ++i) {
      Bound& bound = bounds_[i];
      if (!bound.present) continue;
      if (!bound.known) {
        const Tensor& value = inputs[i + 1];
        require_one_value(value, i);
        context_.read_back(bound.value.data(), value.raw(), element_size_);
      }
      host_bounds[i] = bound.value.data();
    }
    launch_clip(elem_, inputs[0].raw(), outputs[0].raw(), outputs[0].numel(), host_bounds[0],
                host_bounds[1], context_.stream());
  }

 private:
  struct Bound {
    bool present = false;
    bool known = false;  // from a constant
    std::array<std::byte, 8> value{};
  };

  void require_one_value(const Tensor& bound, size_t index) const {
    if (bound.numel() != 1) {
      throw InputError(node_.label() + ": " + (index == 0 ? "min" : "max") +
                       " must hold one value, not " + shape_str(bound.shape()));
    }
  }

  const Node& node_;
  const Elem elem_;
  const size_t element_size_;
  CudaContext& context_;
  std::array<Bound, 2> bounds_;
};

// ---- Cast, CastLike, Dropout ----

class CastKernel final : public Kernel {
 public:
  CastKernel(DType from, DType to, const Node& node, CudaContext& context)
      : same_(from == to),
        from_(require_elem(from, node)),
        to_(require_elem(to, node)),
        context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    if (same_) {
      copy_tensor(inputs[0], outputs[0], context_);
    } else {
      launch_cast(from_, to_, inputs[0].raw(), outputs[0].raw(), outputs[0].numel(),
                  context_.stream());
    }
  }

 private:
  const bool same_;
  const Elem from_;
  const Elem to_;
  CudaContext& context_;
};

// Cast and CastLike: the output's dtype is the target.
std::unique_ptr<Kernel> make_cast(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<CastKernel>(spec.input_types[0].dtype, spec.output_types[0].dtype,
                                      spec.node, context);
}

// Inference: output 0 is the input; the optional mask (output 1) keeps every element.
class DropoutKernel final : public Kernel {
 public:
  DropoutKernel(const KernelSpec&, CudaContext& context) : context_(context) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    copy_tensor(inputs[0], outputs[0], context_);
    if (outputs.size() > 1 && outputs[1].defined() && outputs[1].nbytes() > 0) {
      check(cudaMemsetAsync(outputs[1].raw(), 1, outputs[1].nbytes(), context_.stream()),
            "cudaMemsetAsync");
    }
  }

 private:
  CudaContext& context_;
};

// The schema refuses a constant training_mode of true; one known only at run time could turn
// training on, which the kernel cannot do.
std::string dropout_refusal(const Node& node, const Graph& graph) {
  std::string why = operand_refusal<Operands::kFloats>(node, graph);
  if (why.empty() && has_input(node, 2) &&
      !graph.values[static_cast<size_t>(node.inputs[2])].is_constant()) {
    why = "a training_mode that is not a constant (training is not supported)";
  }
  return why;
}

}  // namespace

std::vector<CudaOp> elementwise_ops() {
  constexpr auto kAny = &operand_refusal<Operands::kAny>;
  constexpr auto kNumbers = &operand_refusal<Operands::kNumbers>;
  constexpr auto kSigned = &operand_refusal<Operands::kSigned>;
  constexpr auto kFloats = &operand_refusal<Operands::kFloats>;
  constexpr auto kBool = &operand_refusal<Operands::kBool>;
  return {
      {"Add", kNumbers, &make_binary<BinaryOp::kAdd>},
      {"Sub", kNumbers, &make_binary<BinaryOp::kSub>},
      {"Mul", kNumbers, &make_binary<BinaryOp::kMul>},
      {"Div", kNumbers, &make_binary<BinaryOp::kDiv>},
      {"Mod", kNumbers, &make_mod},
      {"Pow", kNumbers, &make_kernel<PowKernel>},
      {"PRelu", kSigned, &make_binary<BinaryOp::kPRelu>},
      {"Equal", kAny, &make_binary<BinaryOp::kEqual>},
      {"Less", kNumbers, &make_binary<BinaryOp::kLess>},
      {"LessOrEqual", kNumbers, &make_binary<BinaryOp::kLessOrEqual>},
      {"Greater", kNumbers, &make_binary<BinaryOp::kGreater>},
      {"GreaterOrEqual", kNumbers, &make_binary<BinaryOp::kGreaterOrEqual>},
      {"And", kBool, &make_binary<BinaryOp::kAnd>},
      {"Or", kBool, &make_binary<BinaryOp::kOr>},
      {"Xor", kBool, &make_binary<BinaryOp::kXor>},
      {"Max", kNumbers, &make_variadic<BinaryOp::kMax>},
      {"Min", kNumbers, &make_variadic<BinaryOp::kMin>},
      {"Sum", kFloats, &make_variadic<BinaryOp::kAdd>},
      {"Mean", kFloats, &make_variadic<BinaryOp::kAdd, true>},
      {"Where", &operand_refusal<Operands::kAny, 1>, &make_kernel<WhereKernel>},
      {"Neg", kSigned, &make_unary<UnaryOp::kNeg>},
      {"Abs", kNumbers, &make_unary<UnaryOp::kAbs>},
      {"Sign", kNumbers, &make_unary<UnaryOp::kSign>},
      {"Relu", kSigned, &make_unary<UnaryOp::kRelu>},
      {"Not", kBool, &make_unary<UnaryOp::kNot>},
      {"IsInf", kFloats, &make_unary<UnaryOp::kIsInf>},
      {"IsNaN", kFloats, &make_unary<UnaryOp::kIsNaN>},
      {"Reciprocal", kFloats, &make_unary<UnaryOp::kReciprocal>},
      {"Sqrt", kFloats, &make_unary<UnaryOp::kSqrt>},
      {"Exp", kFloats, &make_unary<UnaryOp::kExp>},
      {"Log", kFloats, &make_unary<UnaryOp::kLog>},
      {"Sin", kFloats, &make_unary<UnaryOp::kSin>},
      {"Cos", kFloats, &make_unary<UnaryOp::kCos>},
      {"Erf", kFloats, &make_unary<UnaryOp::kErf>},
      {"Floor", kFloats, &make_unary<UnaryOp::kFloor>},
      {"Ceil", kFloats, &make_unary<UnaryOp::kCeil>},
      {"Round", kFloats, &make_unary<UnaryOp::kRound>},
      {"Sigmoid", kFloats, &make_unary<UnaryOp::kSigmoid>},
      {"Tanh", kFloats, &make_unary<UnaryOp::kTanh>},
      {"Softplus", kFloats, &make_unary<UnaryOp::kSoftplus>},
      {"Softsign", kFloats, &make_unary<UnaryOp::kSoftsign>},
      {"LeakyRelu", kFloats, &make_unary<UnaryOp::kLeakyRelu>},
      {"Elu", kFloats, &make_unary<UnaryOp::kElu>},
      {"Celu", kFloats, &make_unary<UnaryOp::kCelu>},
      {"Selu", kFloats, &make_unary<UnaryOp::kSelu>},
      {"HardSigmoid", kFloats, &make_unary<UnaryOp::kHardSigmoid>},
      {"HardSwish", kFloats, &make_unary<UnaryOp::kHardSwish>},
      {"Gelu", kFloats, &make_gelu},
      {"Clip", kNumbers, &make_kernel<ClipKernel>},
      {"Cast", kAny, &make_cast},
      {"CastLike", kAny, &make_cast},
      {"Dropout", &dropout_refusal, &make_kernel<DropoutKernel>},
  };
}

}  // namespace tandem::cuda
