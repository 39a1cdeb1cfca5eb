// Dynamic int8 MatMul and Gemm (`--precision int8`), as ONNX Runtime's dynamic quantization
// computes them: constant weights quantized once, symmetric per output column, to int8; the
// activation quantized on every run, asymmetric over the whole tensor, to uint8; oneDNN
// multiplies them in int32 and scales the result back to float32.
//
// oneDNN 2.6 runs its fast int8 kernel (brgemm) only with scales fixed when the primitive is
// built, so the activation's scale and zero point enter as post-ops whose operands change per
// run: a multiply by the activation's scale, then an add per column that takes out the zero
// point (zp * scale * weight scale * the column's sum) and adds the bias.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>

#include "backends/cpu/linalg_dnnl.h"

namespace tandem::cpu {
namespace {

using dnnl::memory;

struct ActivationQuantization {
  float scale;
  int zero_point;
};

// x -> round(x / scale) + zero_point in [0, 255], the range widened to hold 0 exactly.
ActivationQuantization quantize_activation(const Node& node, const float* x, int64_t count,
                                           uint8_t* q) {
  float low = 0, high = 0;
  constexpr int64_t kParallel = 1 << 13;  // below this a thread team costs more than it saves
#pragma omp parallel for simd reduction(min : low) reduction(max : high) if (count > kParallel)
  for (int64_t i = 0; i < count; ++i) {
    low = std::min(low, x[i]);
    high = std::max(high, x[i]);
  }
  if (!std::isfinite(low) || !std::isfinite(high))
    throw InputError(node.label() + ": int8: its input holds an infinity; run it in fp32");
  const float scale = high > low ? (high - low) / 255.0f : 1.0f;
  const int zero_point = std::clamp(static_cast<int>(std::lround(-low / scale)), 0, 255);
  const float inverse = 1.0f / scale, offset = static_cast<float>(zero_point) + 0.5f;
#pragma omp parallel for simd if (count > kParallel)
  for (int64_t i = 0; i < count; ++i) {
    // Clamped so that a NaN becomes 0; v >= 0.5 after it, so truncation rounds half up.
    float v = x[i] * inverse + offset;
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.5f ? v : 255.5f;
    q[i] = static_cast<uint8_t>(static_cast<int>(v));
  }
  return {scale, zero_point};
}

// The product's shape as the int8 kernel takes it: A [rows, k] (leading dims folded) times a
// constant W [k, n], plus an optional bias row of n.
struct Int8Product {
  int64_t k = 0, n = 0;
  bool trans_b = false;
  float alpha = 1, beta = 1;
};

std::optional<Int8Product> qualifies(const KernelSpec& spec) {
  const bool gemm = spec.node.op_type == "Gemm";
  const TensorType& a = spec.input_types[0];
  const TensorType& b = spec.input_types[1];
  const bool weights_constant = spec.constant_inputs.size() > 1 && spec.constant_inputs[1];
  if (a.dtype != DType::kFloat32 || !weights_constant || b.shape.size() != 2 || a.shape.empty() ||
      !is_static(b.shape) || a.shape.back() < 0)
    return std::nullopt;
  Int8Product p;
  if (gemm) {
    if (spec.node.attr_int("transA", 0) != 0) return std::nullopt;
    p.trans_b = spec.node.attr_int("transB", 0) != 0;
    p.alpha = spec.node.attr_float("alpha", 1);
    p.beta = spec.node.attr_float("beta", 1);
  }
  p.k = b.shape[p.trans_b ? 1 : 0];
  p.n = b.shape[p.trans_b ? 0 : 1];
  if (a.shape.back() != p.k || p.k == 0 || p.n == 0) return std::nullopt;
  if (gemm && spec.input_types.size() > 2 && spec.input_types[2].dtype != DType::kUndefined) {
    const Shape& c = spec.input_types[2].shape;
    const bool row =
        !c.empty() && c.back() == p.n && (c.size() == 1 || (c.size() == 2 && c[0] == 1));
    if (!row) return std::nullopt;
  }
  return p;
}

class DynamicInt8MatMul final : public Kernel {
 public:
  DynamicInt8MatMul(const KernelSpec& spec, const Int8Product& product)
      : node_(spec.node), product_(product), activation_(spec.node) {
    quantize_weights(*spec.constant_inputs[1]);
    multiplier_ = memory(plain_desc({1, 1}), dnnl_engine());
    column_add_ = memory(plain_desc({1, product_.n}), dnnl_engine());
    const Shape& a = spec.input_types[0].shape;
    if (is_static(a) && numel(a) > 0) build(numel(a) / product_.k);
  }

  std::string implementation() const override {
    std::lock_guard lock(mutex_);
    return primitive_desc_.get(true) ? std::string("oneDNN ") + primitive_desc_.impl_info_str() +
                                           precision_mark(MatrixPrecision::kInt8)
                                     : "";
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& a = inputs[0];
    Tensor& out = outputs[0];
    if (out.numel() == 0) return;
    const int64_t rows = a.numel() / product_.k;
    std::lock_guard lock(mutex_);
    if (rows != rows_) build(rows);
    auto* quantized = static_cast<uint8_t*>(thread_scratch(static_cast<size_t>(a.numel())));
    const ActivationQuantization q =
        quantize_activation(node_, a.data<float>(), a.numel(), quantized);
    *static_cast<float*>(multiplier_.get_data_handle()) = q.scale;
    const bool has_bias = inputs.size() > 2 && inputs[2].defined() && product_.beta != 0;
    const float* bias = has_bias ? inputs[2].data<float>() : nullptr;
    auto* add = static_cast<float*>(column_add_.get_data_handle());
    for (int64_t j = 0; j < product_.n; ++j) {
      add[j] = -static_cast<float>(q.zero_point) * q.scale * column_scales_[j] * column_sums_[j];
      if (bias) add[j] += product_.beta * bias[j];
    }
    src_.set_data_handle(quantized);
    dst_.set_data_handle(out.raw());
    execute_primitive(primitive_,
                      {{DNNL_ARG_SRC, src_},
                       {DNNL_ARG_WEIGHTS, *packed_},
                       {DNNL_ARG_DST, dst_},
                       {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, multiplier_},
                       {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, column_add_}});
    dnnl_stream().wait();
  }

 private:
  // Per output column j: scale_j = max |W[:, j]| / levels, W ~ scale_j * q. Without VNNI, oneDNN
  // sums pairs of u8 x s8 products in int16, which 7-bit weights keep from saturating.
  void quantize_weights(const Tensor& weights) {
    const int64_t k = product_.k, n = product_.n;
    const float levels = cpu_has_int8_dot_product() ? 127.0f : 63.0f;
    const float* w = weights.data<float>();
    const auto at = [&](int64_t row, int64_t col) {
      return product_.trans_b ? w[col * k + row] : w[row * n + col];
    };
    column_scales_.assign(static_cast<size_t>(n), 0.0f);
    column_sums_.assign(static_cast<size_t>(n), 0.0f);
    quantized_weights_.resize(static_cast<size_t>(k * n));
    for (int64_t j = 0; j < n; ++j) {
      float largest = 0;
      for (int64_t i = 0; i < k; ++i) largest = std::max(largest, std::fabs(at(i, j)));
      if (!std::isfinite(largest))
        throw InputError(node_.label() + ": int8: its weights hold an infinity or NaN");
      const float scale = largest > 0 ? largest / levels : 1.0f;
      int64_t sum = 0;
      for (int64_t i = 0; i < k; ++i) {
        const auto value = static_cast<int8_t>(std::lround(at(i, j) / scale));
        quantized_weights_[static_cast<size_t>(i * n + j)] = value;
        sum += value;
      }
      column_scales_[static_cast<size_t>(j)] = scale * product_.alpha;
      column_sums_[static_cast<size_t>(j)] = static_cast<float>(sum);
    }
  }

  void build(int64_t rows) {
    const int64_t k = product_.k, n = product_.n;
    const memory::desc src_md = plain_desc({rows, k}, memory::data_type::u8);
    const memory::desc weights_md({k, n}, memory::data_type::s8, memory::format_tag::any);
    const memory::desc dst_md = plain_desc({rows, n});
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, column_scales_);
    dnnl::post_ops post_ops;
    post_ops.append_binary(dnnl::algorithm::binary_mul, plain_desc({1, 1}));
    post_ops.append_binary(dnnl::algorithm::binary_add, plain_desc({1, n}));
    activation_.append_to(post_ops);
    attr.set_post_ops(post_ops);
    try {
      primitive_desc_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_md, dst_md),
                                                     with_user_scratchpad(attr), dnnl_engine());
    } catch (const dnnl::error& e) {
      throw InputError(node_.label() + ": oneDNN cannot run it in int8: " + e.what());
    }
    primitive_ = dnnl::matmul(primitive_desc_);
    if (!packed_ || packed_->get_desc() != primitive_desc_.weights_desc()) {
      packed_ = reorder_to(primitive_desc_.weights_desc(),
                           plain_desc({k, n}, memory::data_type::s8), quantized_weights_.data());
    }
    src_ = memory(src_md, dnnl_engine(), nullptr);
    dst_ = memory(dst_md, dnnl_engine(), nullptr);
    rows_ = rows;
  }

  const Node& node_;
  Int8Product product_;
  FusedActivation activation_;
  std::vector<int8_t> quantized_weights_;  // [k, n]; packed_ may point into it
  std::vector<float> column_scales_, column_sums_;
  mutable std::mutex mutex_;
  int64_t rows_ = -1;
  dnnl::matmul::primitive_desc primitive_desc_;
  dnnl::matmul primitive_;
  std::optional<memory> packed_;
  memory src_, dst_, multiplier_, column_add_;
};

}  // namespace

std::unique_ptr<Kernel> make_dynamic_int8_matmul(const KernelSpec& spec) {
  const std::optional<Int8Product> product = qualifies(spec);
  if (!product) return nullptr;
  return std::make_unique<DynamicInt8MatMul>(spec, *product);
}

}  // namespace tandem::cpu
