#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/linalg_dnnl.h"

namespace tandem::cpu {

const dnnl::engine& dnnl_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::primitive_attr with_user_scratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute_primitive(const dnnl::primitive& primitive,
                       std::unordered_map<int, dnnl::memory> args) {
  const dnnl_memory_desc_t* scratchpad =
      dnnl_primitive_desc_query_md(primitive.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  if (scratchpad != nullptr) {
    const dnnl::memory::desc desc(*scratchpad);
    if (const size_t bytes = desc.get_size()) {
      // Its own buffer: kernels keep their blocked copies in thread_scratch meanwhile.
      thread_local Tensor buffer;
      if (static_cast<size_t>(buffer.numel()) < bytes)
        buffer = Tensor::allocate(DType::kUInt8, {static_cast<int64_t>(bytes)});
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(desc, dnnl_engine(), buffer.raw()));
    }
  }
  primitive.execute(dnnl_stream(), args);
}

dnnl::reorder make_reorder(const dnnl::memory& from, const dnnl::memory& to) {
  return dnnl::reorder(from, to, with_user_scratchpad());
}

void execute_reorder(const dnnl::reorder& reorder, const dnnl::memory& from,
                     const dnnl::memory& to) {
  execute_primitive(reorder, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

dnnl::memory::dims to_dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  return {dims, type, contiguous_strides(Shape(dims.begin(), dims.end()))};
}

std::string precision_refusal(MatrixPrecision precision) {
  if (precision != MatrixPrecision::kBFloat16) return "";
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & bf16) == bf16) return "";
  return "this CPU has no bf16 instructions oneDNN uses (AVX512_BF16 or AMX); emulated, bf16 "
         "runs slower than fp32";
}

std::string computed_mark(bool bf16) {
  return precision_mark(bf16 ? MatrixPrecision::kBFloat16 : MatrixPrecision::kFloat32);
}

bool cpu_has_int8_dot_product() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto vnni = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_vnni);
  const auto avx2_vnni = static_cast<unsigned>(dnnl::cpu_isa::avx2_vnni);
  return (isa & vnni) == vnni || (isa & avx2_vnni) == avx2_vnni;
}

dnnl::memory reorder_to(const dnnl::memory::desc& wanted, const dnnl::memory::desc& user,
                        void* data) {
  dnnl::memory source(user, dnnl_engine(), data);
  if (wanted == user) return source;
  dnnl::memory target(wanted, dnnl_engine());
  execute_reorder(make_reorder(source, target), source, target);
  dnnl_stream().wait();
  return target;
}

void* thread_scratch(size_t bytes) {
  thread_local Tensor buffer;
  if (static_cast<size_t>(buffer.numel()) < bytes) {
    buffer = Tensor::allocate(DType::kUInt8, {static_cast<int64_t>(bytes)});
  }
  return buffer.raw();
}

FusedActivation::FusedActivation(const Node& node) {
  const std::string name = node.attr_string("activation", "");
  if (name.empty()) return;
  const float lowest = std::numeric_limits<float>::lowest();
  const float highest = std::numeric_limits<float>::max();
  // Defaults follow the ONNX ops of the same name.
  struct Default {
    const char* name;
    Kind kind;
    float alpha, beta;
  };
  static constexpr Default kDefaults[] = {{"Relu", Kind::kRelu, 0, 0},
                                          {"LeakyRelu", Kind::kLeakyRelu, 0.01f, 0},
                                          {"Clip", Kind::kClip, 0, 0},
                                          {"HardSwish", Kind::kHardSwish, 0, 0},
                                          {"HardSigmoid", Kind::kHardSigmoid, 0.2f, 0.5f},
                                          {"Sigmoid", Kind::kSigmoid, 0, 0},
                                          {"Tanh", Kind::kTanh, 0, 0},
                                          {"Gelu", Kind::kGelu, 0, 0}};
  for (const Default& d : kDefaults) {
    if (name != d.name) continue;
    kind_ = d.kind;
    const bool clip = kind_ == Kind::kClip;
    alpha_ = node.attr_float("activation_alpha", clip ? lowest : d.alpha);
    beta_ = node.attr_float("activation_beta", clip ? highest : d.beta);
    return;
  }
  throw InputError(node.label() + ": unsupported fused activation '" + name + "'");
}

void FusedActivation::append_to(dnnl::post_ops& ops) const {
  using dnnl::algorithm;
  switch (kind_) {
    case Kind::kNone: return;
    case Kind::kRelu: return ops.append_eltwise(1, algorithm::eltwise_relu, 0, 0);
    case Kind::kLeakyRelu: return ops.append_eltwise(1, algorithm::eltwise_relu, alpha_, 0);
    case Kind::kClip: return ops.append_eltwise(1, algorithm::eltwise_clip_v2, alpha_, beta_);
    case Kind::kHardSwish: return ops.append_eltwise(1, algorithm::eltwise_hardswish, 0, 0);
    case Kind::kHardSigmoid:
      // max(0, min(1, alpha * x + beta)): oneDNN 2.6 has no hardsigmoid.
      ops.append_eltwise(1, algorithm::eltwise_linear, alpha_, beta_);
      return ops.append_eltwise(1, algorithm::eltwise_clip_v2, 0, 1);
    case Kind::kSigmoid: return ops.append_eltwise(1, algorithm::eltwise_logistic, 0, 0);
    case Kind::kTanh: return ops.append_eltwise(1, algorithm::eltwise_tanh, 0, 0);
    case Kind::kGelu: return ops.append_eltwise(1, algorithm::eltwise_gelu_erf, 0, 0);
  }
}

double FusedActivation::apply(double x) const {
  switch (kind_) {
    case Kind::kNone: return x;
    case Kind::kRelu: return x > 0 ? x : 0;
    case Kind::kLeakyRelu: return x > 0 ? x : alpha_ * x;
    case Kind::kClip: return std::min<double>(std::max<double>(x, alpha_), beta_);
    case Kind::kHardSwish: return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case Kind::kHardSigmoid: return std::clamp(alpha_ * x + beta_, 0.0, 1.0);
    case Kind::kSigmoid: return 1 / (1 + std::exp(-x));
    case Kind::kTanh: return std::tanh(x);
    case Kind::kGelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  }
  return x;
}

void FusedActivation::apply(float* data, int64_t count) const {
  // One loop per kind, so that the simple ones vectorise.
  switch (kind_) {
    case Kind::kNone: return;
    case Kind::kRelu:
      for (int64_t i = 0; i < count; ++i) data[i] = std::max(data[i], 0.0f);
      return;
    case Kind::kClip:
      for (int64_t i = 0; i < count; ++i) data[i] = std::min(std::max(data[i], alpha_), beta_);
      return;
    case Kind::kHardSwish:
      for (int64_t i = 0; i < count; ++i) {
        data[i] *= std::min(std::max(data[i] * (1.0f / 6) + 0.5f, 0.0f), 1.0f);
      }
      return;
    default:
      for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>(apply(data[i]));
  }
}

void register_linalg_kernels(KernelRegistry& registry) {
  registry.add("MatMul", make_matmul_kernel);
  registry.add("Gemm", make_gemm_kernel);
  registry.add("Conv", make_conv_kernel, Elements::kFloat32);
  registry.add("ConvTranspose", make_conv_transpose_kernel, Elements::kFloat32);
  registry.add("MaxPool", make_pool_kernel);
  registry.add("AveragePool", make_pool_kernel);
  registry.add("GlobalMaxPool", global_max_pool);
  registry.add("GlobalAveragePool", global_average_pool);
}

}  // namespace tandem::cpu
