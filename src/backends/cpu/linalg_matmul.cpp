// MatMul and Gemm: oneDNN matmul primitives for float32, plain loops for the other dtypes.
#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/linalg_dnnl.h"

namespace tandem::cpu {
namespace {

using dnnl::memory;

// oneDNN matmul takes at most this many dims; higher ranks use the loop.
constexpr int64_t kMaxDnnlRank = DNNL_MAX_NDIMS;

// A [M,K] x [K,N] product, possibly batched, in the shapes oneDNN sees.
struct MatMulDims {
  memory::dims src, weights, dst;
};

// Numpy matmul shapes of A and B as oneDNN dims: 1-D operands become matrices, batch dims are
// padded to one rank, and when B has no batch the batch folds into M (one large GEMM).
MatMulDims matmul_dims(const Shape& a, const Shape& b) {
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  const bool b_has_batch = std::any_of(b2.begin(), b2.end() - 2, [](int64_t d) { return d != 1; });
  const int64_t m = a2[a2.size() - 2];
  const int64_t k = a2.back();
  const int64_t n = b2.back();
  if (!b_has_batch) {
    int64_t rows = 1;  // every dim of A but the last (k may be 0)
    for (size_t i = 0; i + 1 < a2.size(); ++i) rows *= a2[i];
    return {{rows, k}, {k, n}, {rows, n}};
  }
  const size_t rank = std::max(a2.size(), b2.size());
  a2.insert(a2.begin(), rank - a2.size(), 1);
  b2.insert(b2.begin(), rank - b2.size(), 1);
  MatMulDims dims{to_dims(a2), to_dims(b2), {}};
  for (size_t i = 0; i + 2 < rank; ++i) dims.dst.push_back(std::max(a2[i], b2[i]));
  dims.dst.push_back(m);
  dims.dst.push_back(n);
  return dims;
}

// Reference batched matmul with broadcasting, for the dtypes oneDNN does not cover.
template <typename T>
void matmul_loop(const Tensor& a, const Tensor& b, Tensor& out, const FusedActivation& act) {
  MatMulDims dims = matmul_dims(a.shape(), b.shape());
  const size_t rank = dims.dst.size();
  dims.src.insert(dims.src.begin(), rank - dims.src.size(), 1);
  dims.weights.insert(dims.weights.begin(), rank - dims.weights.size(), 1);
  const int64_t m = dims.dst[rank - 2], n = dims.dst[rank - 1], k = dims.src[rank - 1];
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batches *= dims.dst[i];
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  for (int64_t batch = 0; batch < batches; ++batch) {
    // Offsets of this batch in A and B, where a size-1 batch dim repeats.
    int64_t rest = batch, a_offset = 0, b_offset = 0, a_stride = m * k, b_stride = k * n;
    for (size_t i = rank - 2; i-- > 0;) {
      const int64_t index = rest % dims.dst[i];
      rest /= dims.dst[i];
      if (dims.src[i] != 1) a_offset += index * a_stride;
      if (dims.weights[i] != 1) b_offset += index * b_stride;
      a_stride *= dims.src[i];
      b_stride *= dims.weights[i];
    }
    T* c = po + batch * m * n;
    std::fill(c, c + m * n, T{});
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        const T av = pa[a_offset + i * k + p];
        const T* brow = pb + b_offset + p * n;
        for (int64_t j = 0; j < n; ++j) c[i * n + j] += av * brow[j];
      }
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (act.present()) {
      for (int64_t i = 0; i < out.numel(); ++i) po[i] = static_cast<T>(act.apply(po[i]));
    }
  }
}

dnnl::matmul::primitive_desc create_matmul(const Node& node, const dnnl::matmul::desc& desc,
                                           const dnnl::primitive_attr& attr) {
  try {
    return dnnl::matmul::primitive_desc(desc, with_user_scratchpad(attr), dnnl_engine());
  } catch (const dnnl::error& e) {
    throw InputError(node.label() + ": oneDNN cannot run it: " + e.what());
  }
}

// Weights that stay the same between runs, reordered once into the layout a primitive wants.
class PackedWeights {
 public:
  PackedWeights() = default;
  explicit PackedWeights(Tensor source) : source_(std::move(source)) {}
  bool available() const { return source_.defined(); }
  const memory& get(const memory::desc& wanted, const memory::desc& user) {
    if (!packed_ || packed_->get_desc() != wanted)
      packed_ = reorder_to(wanted, user, source_.raw());
    return *packed_;
  }

 private:
  Tensor source_;
  std::optional<memory> packed_;
};

// In bf16 (`--precision bf16`) a product's float32 operands are converted on every run into
// bf16 copies the primitive reads; constant weights are converted once, when packed.
class Bf16Operand {
 public:
  // `user`: the operand as it lies in memory; `computed`: the bf16 layout the primitive reads.
  void build(const memory::desc& user, const memory::desc& computed) {
    user_ = memory(user, dnnl_engine(), nullptr);
    computed_ = memory(computed, dnnl_engine(), nullptr);
    convert_ = make_reorder(user_, computed_);
  }
  size_t bytes() const { return convert_ ? (computed_.get_desc().get_size() + 63) / 64 * 64 : 0; }
  // The bf16 copy of `data`, written into `scratch` (bytes() of it).
  const memory& convert(const void* data, void* scratch) {
    user_.set_data_handle(const_cast<void*>(data));
    computed_.set_data_handle(scratch);
    execute_reorder(*convert_, user_, computed_);
    return computed_;
  }

 private:
  memory user_, computed_;
  std::optional<dnnl::reorder> convert_;
};

Tensor constant_input(const KernelSpec& spec, size_t index) {
  return spec.constant_inputs.size() > index && spec.constant_inputs[index]
             ? *spec.constant_inputs[index]
             : Tensor();
}

// Whether the oneDNN primitive can be built ahead: static shapes, none of them empty (oneDNN
// divides by zero on an empty problem; run() handles empty tensors without it).
bool buildable_ahead(const KernelSpec& spec) {
  return std::all_of(spec.input_types.begin(), spec.input_types.end(), [](const TensorType& t) {
    return is_static(t.shape) && (t.dtype == DType::kUndefined || numel(t.shape) > 0);
  });
}

class MatMulKernel final : public Kernel {
 public:
  std::string implementation() const override {
    std::lock_guard lock(mutex_);
    return primitive_desc_.get(true)
               ? std::string("oneDNN ") + primitive_desc_.impl_info_str() + computed_mark(bf16_)
               : "";
  }

  explicit MatMulKernel(const KernelSpec& spec)
      : node_(spec.node),
        activation_(spec.node),
        weights_(constant_input(spec, 1)),
        bf16_(spec.precision == MatrixPrecision::kBFloat16) {
    if (spec.input_types[0].dtype == DType::kFloat32 && buildable_ahead(spec)) {
      build(spec.input_types[0].shape, spec.input_types[1].shape);
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    Tensor& out = outputs[0];
    if (out.numel() == 0) return;
    const bool degenerate = a.shape().back() == 0 || std::max(a.rank(), b.rank()) > kMaxDnnlRank;
    if (a.dtype() != DType::kFloat32 || degenerate) {
      dispatch_numeric(a.dtype(), [&]<typename T>() {
        if constexpr (std::is_same_v<T, bool>) {
          throw InputError(node_.label() + ": no CPU kernel for bool");
        } else {
          matmul_loop<T>(a, b, out, activation_);
        }
      });
      return;
    }
    std::lock_guard lock(mutex_);
    if (a.shape() != a_shape_ || b.shape() != b_shape_) build(a.shape(), b.shape());
    char* scratch =
        bf16_ ? static_cast<char*>(thread_scratch(src_bf16_.bytes() + b_bf16_.bytes())) : nullptr;
    src_.set_data_handle(a.raw());
    const memory& src = bf16_ ? src_bf16_.convert(a.raw(), scratch) : src_;
    dst_.set_data_handle(out.raw());
    const memory* weights = &weights_user_;
    if (weights_.available()) {
      weights = &weights_.get(primitive_desc_.weights_desc(), weights_user_.get_desc());
    } else if (bf16_) {
      weights = &b_bf16_.convert(b.raw(), scratch + src_bf16_.bytes());
    } else {
      weights_user_.set_data_handle(b.raw());
    }
    execute_primitive(primitive_,
                      {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, *weights}, {DNNL_ARG_DST, dst_}});
    dnnl_stream().wait();
  }

 private:
  void build(const Shape& a, const Shape& b) {
    if (a.back() == 0 || static_cast<int64_t>(std::max(a.size(), b.size())) > kMaxDnnlRank) return;
    const MatMulDims dims = matmul_dims(a, b);
    const memory::data_type computed = bf16_ ? memory::data_type::bf16 : memory::data_type::f32;
    const memory::desc weights_user = plain_desc(dims.weights);
    // Constant 2-D weights may take whatever layout the primitive runs fastest with.
    const bool pack = weights_.available() && dims.weights.size() == 2;
    const memory::desc weights_md =
        pack ? memory::desc(dims.weights, computed, memory::format_tag::any)
             : plain_desc(dims.weights, computed);
    dnnl::primitive_attr attr;
    dnnl::post_ops post_ops;
    activation_.append_to(post_ops);
    attr.set_post_ops(post_ops);
    const memory::desc src_md = plain_desc(dims.src, computed);
    const dnnl::matmul::desc desc(src_md, weights_md, plain_desc(dims.dst));
    primitive_desc_ = create_matmul(node_, desc, attr);
    primitive_ = dnnl::matmul(primitive_desc_);
    if (bf16_) {
      src_bf16_.build(plain_desc(dims.src), src_md);
      if (!weights_.available()) b_bf16_.build(weights_user, weights_md);
    }
    src_ = memory(plain_desc(dims.src), dnnl_engine(), nullptr);
    dst_ = memory(plain_desc(dims.dst), dnnl_engine(), nullptr);
    weights_user_ = memory(weights_user, dnnl_engine(), nullptr);
    if (weights_.available()) weights_.get(primitive_desc_.weights_desc(), weights_user);
    a_shape_ = a;
    b_shape_ = b;
  }

  const Node& node_;
  FusedActivation activation_;
  PackedWeights weights_;
  const bool bf16_;
  Bf16Operand src_bf16_, b_bf16_;
  mutable std::mutex mutex_;
  Shape a_shape_, b_shape_;
  dnnl::matmul::primitive_desc primitive_desc_;
  dnnl::matmul primitive_;
  memory src_, dst_, weights_user_;
};

// Gemm's C as a broadcastable [rows, cols] matrix: rows and cols are 1 or the output's.
struct GemmBias {
  int64_t rows = 1, cols = 1;
  explicit GemmBias(const Tensor& c) {
    if (c.rank() >= 1) cols = c.shape().back();
    if (c.rank() == 2) rows = c.dim(0);
  }
  int64_t offset(int64_t i, int64_t j) const {
    return (rows == 1 ? 0 : i * cols) + (cols == 1 ? 0 : j);
  }
};

struct GemmParams {
  bool trans_a, trans_b;
  float alpha, beta;
  explicit GemmParams(const Node& node)
      : trans_a(node.attr_int("transA", 0) != 0),
        trans_b(node.attr_int("transB", 0) != 0),
        alpha(node.attr_float("alpha", 1)),
        beta(node.attr_float("beta", 1)) {}
};

template <typename T>
void gemm_loop(const GemmParams& p, const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out,
               const FusedActivation& act) {
  const int64_t m = out.dim(0), n = out.dim(1), k = a.dim(p.trans_a ? 0 : 1);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc{};
      for (int64_t q = 0; q < k; ++q) {
        acc += pa[p.trans_a ? q * m + i : i * k + q] * pb[p.trans_b ? j * k + q : q * n + j];
      }
      // Scaling by exactly 1 is skipped so that int64 products stay exact.
      po[i * n + j] = p.alpha == 1 ? acc : static_cast<T>(p.alpha * static_cast<double>(acc));
    }
  }
  if (c.defined() && p.beta != 0) {
    const GemmBias bias(c);
    const T* pc = c.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const T term = pc[bias.offset(i, j)];
        po[i * n + j] += p.beta == 1 ? term : static_cast<T>(p.beta * static_cast<double>(term));
      }
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (act.present()) {
      for (int64_t i = 0; i < m * n; ++i) po[i] = static_cast<T>(act.apply(po[i]));
    }
  }
}

class GemmKernel final : public Kernel {
 public:
  std::string implementation() const override {
    std::lock_guard lock(mutex_);
    return primitive_desc_.get(true)
               ? std::string("oneDNN ") + primitive_desc_.impl_info_str() + computed_mark(bf16_)
               : "";
  }

  explicit GemmKernel(const KernelSpec& spec)
      : node_(spec.node),
        params_(spec.node),
        activation_(spec.node),
        weights_(constant_input(spec, 1)),
        bf16_(spec.precision == MatrixPrecision::kBFloat16) {
    const bool has_c =
        spec.input_types.size() > 2 && spec.input_types[2].dtype != DType::kUndefined;
    if (spec.input_types[0].dtype == DType::kFloat32 && buildable_ahead(spec)) {
      build(spec.input_types[0].shape, spec.input_types[1].shape,
            has_c ? spec.input_types[2].shape : Shape{}, has_c);
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    const Tensor c = inputs.size() > 2 ? inputs[2] : Tensor();
    Tensor& out = outputs[0];
    if (out.numel() == 0) return;
    if (a.dtype() != DType::kFloat32 || a.dim(params_.trans_a ? 0 : 1) == 0) {
      dispatch_numeric(a.dtype(), [&]<typename T>() {
        if constexpr (std::is_same_v<T, bool>) {
          throw InputError(node_.label() + ": no CPU kernel for bool");
        } else {
          gemm_loop<T>(params_, a, b, c, out, activation_);
        }
      });
      return;
    }
    std::lock_guard lock(mutex_);
    if (!built_ || a.shape() != a_shape_ || b.shape() != b_shape_ || c.defined() != has_c_ ||
        (c.defined() && c.shape() != c_shape_)) {
      build(a.shape(), b.shape(), c.defined() ? c.shape() : Shape{}, c.defined());
    }
    char* scratch =
        bf16_ ? static_cast<char*>(thread_scratch(src_bf16_.bytes() + b_bf16_.bytes())) : nullptr;
    src_.set_data_handle(a.raw());
    const memory& src = bf16_ ? src_bf16_.convert(a.raw(), scratch) : src_;
    dst_.set_data_handle(out.raw());
    if (c_mode_ == CMode::kAccumulate) fill_broadcast(c, out);
    const memory* weights = &weights_user_;
    if (weights_.available()) {
      weights = &weights_.get(primitive_desc_.weights_desc(), weights_user_.get_desc());
    } else if (bf16_) {
      weights = &b_bf16_.convert(b.raw(), scratch + src_bf16_.bytes());
    } else {
      weights_user_.set_data_handle(b.raw());
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, *weights}, {DNNL_ARG_DST, dst_}};
    if (c_mode_ == CMode::kBias) {
      bias_.set_data_handle(c.raw());
      args.emplace(DNNL_ARG_BIAS, bias_);
    }
    execute_primitive(primitive_, args);
    dnnl_stream().wait();
  }

 private:
  // How C enters: not at all, as oneDNN's bias (a row vector when alpha = beta = 1, the case
  // oneDNN runs fast), or copied into the output first and added by a sum post-op.
  enum class CMode { kNone, kBias, kAccumulate };

  static void fill_broadcast(const Tensor& c, Tensor& out) {
    const int64_t m = out.dim(0), n = out.dim(1);
    const GemmBias bias(c);
    const float* pc = c.data<float>();
    float* po = out.data<float>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) po[i * n + j] = pc[bias.offset(i, j)];
    }
  }

  void build(const Shape& a, const Shape& b, const Shape& c, bool has_c) {
    const int64_t m = a[params_.trans_a ? 1 : 0], k = a[params_.trans_a ? 0 : 1];
    const int64_t n = b[params_.trans_b ? 0 : 1];
    if (k == 0) return;
    const memory::desc src_md({m, k}, memory::data_type::f32,
                              params_.trans_a ? memory::dims{1, m} : memory::dims{k, 1});
    const memory::desc weights_user({k, n}, memory::data_type::f32,
                                    params_.trans_b ? memory::dims{1, k} : memory::dims{n, 1});
    const memory::data_type computed = bf16_ ? memory::data_type::bf16 : memory::data_type::f32;
    const memory::desc weights_md = weights_.available()
                                        ? memory::desc({k, n}, computed, memory::format_tag::any)
                                    : bf16_ ? plain_desc({k, n}, computed)
                                            : weights_user;
    const memory::desc src_computed = bf16_ ? plain_desc({m, k}, computed) : src_md;
    const memory::desc dst_md = plain_desc({m, n});
    c_mode_ = CMode::kNone;
    if (has_c && params_.beta != 0) {
      const bool row_vector = !c.empty() && c.back() == n && (c.size() == 1 || c[0] == 1);
      const bool unscaled = params_.alpha == 1 && params_.beta == 1;
      c_mode_ = row_vector && unscaled ? CMode::kBias : CMode::kAccumulate;
    }
    dnnl::primitive_attr attr;
    if (params_.alpha != 1) attr.set_output_scales(0, {params_.alpha});
    dnnl::post_ops post_ops;
    if (c_mode_ == CMode::kAccumulate) post_ops.append_sum(params_.beta);
    activation_.append_to(post_ops);
    attr.set_post_ops(post_ops);
    const memory::desc bias_md = c_mode_ == CMode::kBias ? plain_desc({1, n}) : memory::desc();
    const dnnl::matmul::desc desc(src_computed, weights_md, bias_md, dst_md);
    primitive_desc_ = create_matmul(node_, desc, attr);
    primitive_ = dnnl::matmul(primitive_desc_);
    if (bf16_) {
      src_bf16_.build(src_md, src_computed);
      if (!weights_.available()) b_bf16_.build(weights_user, weights_md);
    }
    src_ = memory(src_md, dnnl_engine(), nullptr);
    dst_ = memory(dst_md, dnnl_engine(), nullptr);
    weights_user_ = memory(weights_user, dnnl_engine(), nullptr);
    if (weights_.available()) weights_.get(primitive_desc_.weights_desc(), weights_user);
    if (c_mode_ == CMode::kBias) bias_ = memory(bias_md, dnnl_engine(), nullptr);
    a_shape_ = a;
    b_shape_ = b;
    c_shape_ = c;
    has_c_ = has_c;
    built_ = true;
  }

  const Node& node_;
  GemmParams params_;
  FusedActivation activation_;
  PackedWeights weights_;
  const bool bf16_;
  Bf16Operand src_bf16_, b_bf16_;
  mutable std::mutex mutex_;
  bool built_ = false, has_c_ = false;
  CMode c_mode_ = CMode::kNone;
  Shape a_shape_, b_shape_, c_shape_;
  dnnl::matmul::primitive_desc primitive_desc_;
  dnnl::matmul primitive_;
  memory src_, dst_, weights_user_, bias_;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const KernelSpec& spec) {
  if (spec.precision == MatrixPrecision::kInt8) {
    if (auto kernel = make_dynamic_int8_matmul(spec)) return kernel;
  }
  return std::make_unique<GemmKernel>(spec);
}

std::unique_ptr<Kernel> make_matmul_kernel(const KernelSpec& spec) {
  if (spec.precision == MatrixPrecision::kInt8) {
    if (auto kernel = make_dynamic_int8_matmul(spec)) return kernel;
  }
  return std::make_unique<MatMulKernel>(spec);
}

}  // namespace tandem::cpu
