// MatMul and Gemm through cuBLASLt. Tandem's tensors are row-major and cuBLASLt's matrices
// column-major, so each product runs transposed: out^T = op(b)^T x op(a)^T, with b as
// cuBLASLt's A operand and a as its B, and nothing is copied. The algorithm of each operand
// shape is chosen once by cuBLASLt's heuristic and cached.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <type_traits>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/kernel_common.h"
#include "backends/cuda/linalg_internal.h"
#include "ir/error.h"

namespace tandem::cuda {
namespace {

// Workspace cuBLASLt's algorithms may use (NVIDIA's recommendation for Hopper).
constexpr uint64_t kMaxWorkspaceBytes = uint64_t{32} << 20;
// The alignment kernels are planned for at make time: the runtime's arena places tensors at
// 64-byte offsets (runtime/memory_plan.h), device allocations are 256-byte aligned.
constexpr unsigned kPlannedAlignment = 64;

using MatmulDesc = OwnedHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using MatrixLayout = OwnedHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = OwnedHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// One product in Tandem's row-major terms: out[M, N] = op(a)[M, K] x op(b)[K, N], repeated
// `batch` times at the given element strides (0 repeats one matrix).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;  // a stored as [K, M], b as [N, K]
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_out = 0;
};

cudaDataType_t blas_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kFloat64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

template <typename Value>
void set_layout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute,
                Value value) {
  check(cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof(value)),
        "cublasLtMatrixLayoutSetAttribute");
}

template <typename Value>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, Value value) {
  check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)),
        "cublasLtMatmulDescSetAttribute");
}

MatrixLayout make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                         int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  check(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                   static_cast<uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  MatrixLayout owned(layout);
  if (batch != 1) {
    set_layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(batch));
    set_layout(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
  }
  return owned;
}

// The largest power of two up to 256 that divides `bits` (addresses, offsets and strides in
// bytes, ORed): the alignment cuBLASLt's heuristic is told every matrix has.
unsigned alignment_of(uint64_t bits) {
  unsigned alignment = 256;
  while (alignment > 1 && bits % alignment != 0) alignment /= 2;
  return alignment;
}

uint64_t address_bits(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

// One cuBLASLt matmul with its descriptors and the algorithm the heuristic chose.
class LtMatmul {
 public:
  // The matmul, or nullptr when the heuristic has no algorithm for it. `bias` adds a vector of
  // N (cuBLASLt's BIAS epilogue), `relu` applies ReLU last (its RELU epilogues).
  static std::unique_ptr<LtMatmul> create(cublasLtHandle_t handle, DType dtype, const GemmShape& g,
                                          bool bias, bool relu, unsigned alignment) {
    auto matmul = std::unique_ptr<LtMatmul>(new LtMatmul(handle, dtype, bias));
    return matmul->plan(g, relu, alignment) ? std::move(matmul) : nullptr;
  }

  bool bias() const { return bias_; }
  size_t workspace_bytes() const { return workspace_bytes_; }

  // `c` is read with `beta` (it may be `out` itself); `bias` only when bias().
  void run(const void* a, const void* b, const void* c, void* out, const void* bias, double alpha,
           double beta, void* workspace, cudaStream_t stream) {
    if (bias_) set_desc(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
    const void* alpha_ptr = double_scale_ ? static_cast<const void*>(&alpha) : &alpha32;
    const void* beta_ptr = double_scale_ ? static_cast<const void*>(&beta) : &beta32;
    check(cublasLtMatmul(handle_, desc_.get(), alpha_ptr, b, b_layout_.get(), a, a_layout_.get(),
                         beta_ptr, c, out_layout_.get(), out, out_layout_.get(), &algo_, workspace,
                         workspace_bytes_, stream),
          "cublasLtMatmul");
  }

 private:
  LtMatmul(cublasLtHandle_t handle, DType dtype, bool bias)
      : handle_(handle), dtype_(dtype), double_scale_(dtype == DType::kFloat64), bias_(bias) {}

  bool plan(const GemmShape& g, bool relu, unsigned alignment) {
    const cublasComputeType_t compute = dtype_ == DType::kFloat64 ? CUBLAS_COMPUTE_64F
                                        : dtype_ == DType::kFloat32 && tf32_enabled()
                                            ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t desc = nullptr;
    check(cublasLtMatmulDescCreate(&desc, compute, double_scale_ ? CUDA_R_64F : CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    desc_.reset(desc);
    // cuBLASLt's A is our b and its B our a (see the top of the file).
    set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
    const cublasLtEpilogue_t epilogue =
        bias_  ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
        : relu ? CUBLASLT_EPILOGUE_RELU
               : CUBLASLT_EPILOGUE_DEFAULT;
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    if (bias_) {
      // The heuristic reads the bias pointer's alignment from its value; the real one is set
      // at each run.
      set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
               reinterpret_cast<const void*>(uintptr_t{alignment}));
    }
    const cudaDataType_t type = blas_type(dtype_);
    b_layout_ = g.trans_b ? make_layout(type, g.k, g.n, g.k, g.batch, g.stride_b)
                          : make_layout(type, g.n, g.k, g.n, g.batch, g.stride_b);
    a_layout_ = g.trans_a ? make_layout(type, g.m, g.k, g.m, g.batch, g.stride_a)
                          : make_layout(type, g.k, g.m, g.k, g.batch, g.stride_a);
    out_layout_ = make_layout(type, g.n, g.m, g.n, g.batch, g.stride_out);

    cublasLtMatmulPreference_t preference = nullptr;
    check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const Preference owned_preference(preference);
    const auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value) {
      check(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value)),
            "cublasLtMatmulPreferenceSetAttribute");
    };
    prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kMaxWorkspaceBytes);
    for (const auto attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      prefer(attribute, uint32_t{alignment});
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle_, desc, b_layout_.get(), a_layout_.get(), out_layout_.get(), out_layout_.get(),
        preference, 1, &result, &found);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) {
      return false;
    }
    check(status, "cublasLtMatmulAlgoGetHeuristic");
    algo_ = result.algo;
    workspace_bytes_ = result.workspaceSize;
    return true;
  }

  cublasLtHandle_t handle_;
  DType dtype_;
  bool double_scale_;  // float64 scales alpha and beta in double, the rest in float
  bool bias_;
  MatmulDesc desc_;
  MatrixLayout a_layout_, b_layout_, out_layout_;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_bytes_ = 0;
};

// How Gemm's C enters the product: not at all, as cuBLASLt's C (of the output's shape), as
// its bias epilogue (a row of N added unscaled), or broadcast into the output first and read
// back as C.
enum class CMode { kNone, kFull, kBias, kBroadcast };

// One way to run a product: what cuBLASLt fuses and what is left to the own kernels.
struct Candidate {
  CMode c_mode;
  bool relu;  // the fused activation is a ReLU that cuBLASLt applies
};

struct Choice {
  std::unique_ptr<LtMatmul> matmul;
  CMode c_mode = CMode::kNone;
  bool relu_fused = false;
};

// The first candidate cuBLASLt has an algorithm for; InputError naming the node when none.
Choice choose(const Node& node, CudaContext& context, DType dtype, const GemmShape& g,
              unsigned alignment, std::span<const Candidate> candidates) {
  for (const Candidate& candidate : candidates) {
    auto matmul = LtMatmul::create(context.blas_lt(), dtype, g, candidate.c_mode == CMode::kBias,
                                   candidate.relu, alignment);
    if (matmul) return {std::move(matmul), candidate.c_mode, candidate.relu};
  }
  throw InputError(node.label() + ": cuBLASLt has no algorithm for a " +
                   std::string(dtype_name(dtype)) + " product of " + std::to_string(g.m) + "x" +
                   std::to_string(g.k) + " by " + std::to_string(g.k) + "x" + std::to_string(g.n) +
                   " (batch " + std::to_string(g.batch) + ")");
}

// The choice planned for `alignment`, or for the largest smaller one (its algorithm runs at
// this alignment too); made by choose_new() on first use.
template <typename Choose>
Choice& choice_at(std::map<unsigned, Choice>& by_alignment, unsigned alignment,
                  Choose&& choose_new) {
  auto it = by_alignment.upper_bound(alignment);
  if (it != by_alignment.begin()) return std::prev(it)->second;
  return by_alignment.emplace(alignment, choose_new()).first->second;
}

void apply_activation(Elem elem, const Activation& activation, Tensor& out, cudaStream_t stream) {
  if (activation.kind == ActivationKind::kNone) return;
  launch_epilogue(elem, out.raw(), nullptr, nullptr, out.numel(), 1, 1, activation, stream);
}

const char* byte_pointer(const Tensor& tensor) { return static_cast<const char*>(tensor.raw()); }

// ---- MatMul ----

// Element offsets of a, b and out for one cuBLASLt call.
struct CallOffsets {
  int64_t a, b, out;
};

// A numpy MatMul as cuBLASLt calls: one strided batch, repeated over the outer batch dims
// that no single stride describes.
struct MatMulLayout {
  GemmShape shape;
  std::vector<CallOffsets> calls;

  // Every offset and stride in bytes, ORed (for alignment_of).
  uint64_t offset_bits(size_t element_bytes) const {
    uint64_t bits = static_cast<uint64_t>(shape.stride_a | shape.stride_b | shape.stride_out);
    for (const CallOffsets& call : calls) bits |= static_cast<uint64_t>(call.a | call.b | call.out);
    return bits * element_bytes;
  }
};

MatMulLayout matmul_layout(const Shape& a, const Shape& b) {
  // Numpy semantics: a 1-D a is a row, a 1-D b a column.
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  GemmShape g;
  g.m = a2[a2.size() - 2];
  g.k = a2.back();
  g.n = b2.back();
  Shape a_batch(a2.begin(), a2.end() - 2), b_batch(b2.begin(), b2.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), rank - a_batch.size(), 1);
  b_batch.insert(b_batch.begin(), rank - b_batch.size(), 1);
  MatMulLayout layout;
  if (std::all_of(b_batch.begin(), b_batch.end(), [](int64_t d) { return d == 1; })) {
    // One b for every batch: a's batch folds into its rows, one large GEMM.
    g.m *= extent_of(a_batch, 0, rank);
    layout.shape = g;
    layout.calls.push_back({0, 0, 0});
    return layout;
  }
  Shape out_batch(rank);
  for (size_t d = 0; d < rank; ++d) out_batch[d] = a_batch[d] == 1 ? b_batch[d] : a_batch[d];
  // The innermost batch dims over which each operand either has every dim (stride of one
  // matrix) or none (stride 0) form the strided batch; the dims outside it loop.
  size_t split = rank;
  std::optional<bool> a_batched, b_batched;
  int64_t inner = 1;
  for (size_t d = rank; d-- > 0;) {
    if (out_batch[d] != 1) {
      const bool a_has = a_batch[d] != 1, b_has = b_batch[d] != 1;
      if ((a_batched && *a_batched != a_has) || (b_batched && *b_batched != b_has)) break;
      a_batched = a_has;
      b_batched = b_has;
      inner *= out_batch[d];
    }
    split = d;
  }
  g.batch = inner;
  g.stride_a = a_batched.value_or(false) ? g.m * g.k : 0;
  g.stride_b = b_batched.value_or(false) ? g.k * g.n : 0;
  g.stride_out = g.m * g.n;
  layout.shape = g;
  // Element strides of each operand's batch dims (0 where it broadcasts).
  std::vector<int64_t> a_stride(rank), b_stride(rank);
  int64_t a_step = g.m * g.k, b_step = g.k * g.n;
  for (size_t d = rank; d-- > 0;) {
    a_stride[d] = a_batch[d] == 1 ? 0 : a_step;
    b_stride[d] = b_batch[d] == 1 ? 0 : b_step;
    a_step *= a_batch[d];
    b_step *= b_batch[d];
  }
  const int64_t outer = extent_of(out_batch, 0, split);
  for (int64_t o = 0; o < outer; ++o) {
    CallOffsets call{0, 0, o * inner * g.m * g.n};
    int64_t rest = o;
    for (size_t d = split; d-- > 0;) {
      const int64_t index = rest % out_batch[d];
      rest /= out_batch[d];
      call.a += index * a_stride[d];
      call.b += index * b_stride[d];
    }
    layout.calls.push_back(call);
  }
  return layout;
}

class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, node_)),
        activation_(fused_activation(node_)) {
    const Shape& a = spec.input_types[0].shape;
    const Shape& b = spec.input_types[1].shape;
    if (is_static(a) && is_static(b)) {
      Plan& plan = plan_for(a, b);
      if (multiplies(plan.layout)) {
        choice_for(plan,
                   alignment_of(kPlannedAlignment | plan.layout.offset_bits(dtype_size(dtype_))));
      }
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    Tensor& out = outputs[0];
    if (out.numel() == 0) return;
    const cudaStream_t stream = context_.stream();
    std::lock_guard lock(mutex_);
    Plan& plan = plan_for(a.shape(), b.shape());
    if (!multiplies(plan.layout)) {
      // K = 0: every sum is empty.
      check(cudaMemsetAsync(out.raw(), 0, out.nbytes(), stream), "cudaMemsetAsync");
      apply_activation(elem_, activation_, out, stream);
      return;
    }
    const size_t bytes = dtype_size(dtype_);
    const uint64_t bits = address_bits(a.raw()) | address_bits(b.raw()) | address_bits(out.raw()) |
                          plan.layout.offset_bits(bytes);
    Choice& choice = choice_for(plan, alignment_of(bits));
    LtMatmul& matmul = *choice.matmul;
    void* workspace =
        matmul.workspace_bytes() > 0 ? context_.workspace(matmul.workspace_bytes()) : nullptr;
    char* out_bytes = static_cast<char*>(out.raw());
    for (const CallOffsets& call : plan.layout.calls) {
      char* d = out_bytes + call.out * static_cast<int64_t>(bytes);
      matmul.run(byte_pointer(a) + call.a * static_cast<int64_t>(bytes),
                 byte_pointer(b) + call.b * static_cast<int64_t>(bytes), d, d, nullptr, 1.0, 0.0,
                 workspace, stream);
    }
    if (!choice.relu_fused) apply_activation(elem_, activation_, out, stream);
  }

 private:
  struct Plan {
    MatMulLayout layout;
    std::map<unsigned, Choice> by_alignment;
  };

  static bool multiplies(const MatMulLayout& layout) {
    const GemmShape& g = layout.shape;
    return g.m > 0 && g.n > 0 && g.k > 0 && g.batch > 0 && !layout.calls.empty();
  }

  Plan& plan_for(const Shape& a, const Shape& b) {
    return cached_plan(plans_, shape_key({&a, &b}), [&] { return Plan{matmul_layout(a, b), {}}; });
  }

  Choice& choice_for(Plan& plan, unsigned alignment) {
    return choice_at(plan.by_alignment, alignment, [&] {
      std::vector<Candidate> candidates;
      if (activation_.kind == ActivationKind::kRelu) candidates.push_back({CMode::kNone, true});
      candidates.push_back({CMode::kNone, false});
      return choose(node_, context_, dtype_, plan.layout.shape, alignment, candidates);
    });
  }

  const Node& node_;
  CudaContext& context_;
  const DType dtype_;
  const Elem elem_;
  const Activation activation_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, Plan> plans_;
};

// ---- Gemm ----

class GemmKernel final : public Kernel {
 public:
  GemmKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, node_)),
        activation_(fused_activation(node_)),
        trans_a_(node_.attr_int("transA", 0) != 0),
        trans_b_(node_.attr_int("transB", 0) != 0),
        alpha_(node_.attr_float("alpha", 1)),
        beta_(node_.attr_float("beta", 1)) {
    const Shape& a = spec.input_types[0].shape;
    const Shape& b = spec.input_types[1].shape;
    const bool has_c =
        spec.input_types.size() > 2 && spec.input_types[2].dtype != DType::kUndefined;
    const Shape* c = has_c ? &spec.input_types[2].shape : nullptr;
    if (is_static(a) && is_static(b) && (!c || is_static(*c))) {
      Plan& plan = plan_for(a, b, c);
      if (plan.shape.k > 0 && plan.shape.m > 0 && plan.shape.n > 0) {
        choice_for(plan, kPlannedAlignment);
      }
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    const Tensor c = inputs.size() > 2 ? inputs[2] : Tensor();
    Tensor& out = outputs[0];
    if (out.numel() == 0) return;
    const cudaStream_t stream = context_.stream();
    std::lock_guard lock(mutex_);
    Plan& plan = plan_for(a.shape(), b.shape(), c.defined() ? &c.shape() : nullptr);
    const GemmShape& g = plan.shape;
    if (g.k == 0) {
      // Empty sums: the output is beta * C alone.
      if (plan.base_mode == CMode::kNone) {
        check(cudaMemsetAsync(out.raw(), 0, out.nbytes(), stream), "cudaMemsetAsync");
      } else {
        broadcast_c(c, beta_, out, g, stream);
      }
      apply_activation(elem_, activation_, out, stream);
      return;
    }
    uint64_t bits = address_bits(a.raw()) | address_bits(b.raw()) | address_bits(out.raw());
    if (c.defined()) bits |= address_bits(c.raw());
    Choice& choice = choice_for(plan, alignment_of(bits));
    const void* c_data = out.raw();
    const void* bias = nullptr;
    double beta = 0;
    switch (choice.c_mode) {
      case CMode::kNone: break;
      case CMode::kFull:
        c_data = c.raw();
        beta = beta_;
        break;
      case CMode::kBias: bias = c.raw(); break;
      case CMode::kBroadcast:
        broadcast_c(c, 1.0, out, g, stream);
        beta = beta_;
        break;
    }
    LtMatmul& matmul = *choice.matmul;
    void* workspace =
        matmul.workspace_bytes() > 0 ? context_.workspace(matmul.workspace_bytes()) : nullptr;
    matmul.run(a.raw(), b.raw(), c_data, out.raw(), bias, alpha_, beta, workspace, stream);
    if (!choice.relu_fused) apply_activation(elem_, activation_, out, stream);
  }

 private:
  struct Plan {
    GemmShape shape;
    CMode base_mode = CMode::kNone;  // how C enters without the bias epilogue
    bool bias_row = false;           // C is a row of N that the bias epilogue can add
    std::map<unsigned, Choice> by_alignment;
  };

  // out = scale * C, broadcast as Gemm's C: [N], [1, N], [M, 1], [M, N] or a scalar.
  void broadcast_c(const Tensor& c, double scale, Tensor& out, const GemmShape& g,
                   cudaStream_t stream) const {
    const int64_t rows = c.rank() == 2 ? c.dim(0) : 1;
    const int64_t cols = c.rank() >= 1 ? c.shape().back() : 1;
    launch_broadcast_matrix(elem_, c.raw(), rows == 1 ? 0 : cols, cols == 1 ? 0 : 1, scale,
                            out.raw(), g.m, g.n, stream);
  }

  Plan& plan_for(const Shape& a, const Shape& b, const Shape* c) {
    return cached_plan(plans_, shape_key({&a, &b, c}), [&] {
      Plan plan;
      GemmShape& g = plan.shape;
      g.trans_a = trans_a_;
      g.trans_b = trans_b_;
      g.m = a[trans_a_ ? 1 : 0];
      g.k = a[trans_a_ ? 0 : 1];
      g.n = b[trans_b_ ? 0 : 1];
      if (c && beta_ != 0) {  // as the CPU, beta = 0 ignores C altogether
        plan.base_mode = *c == Shape{g.m, g.n} ? CMode::kFull : CMode::kBroadcast;
        plan.bias_row = plan.base_mode == CMode::kBroadcast && beta_ == 1 &&
                        (*c == Shape{g.n} || *c == Shape{1, g.n});
      }
      return plan;
    });
  }

  Choice& choice_for(Plan& plan, unsigned alignment) {
    return choice_at(plan.by_alignment, alignment, [&] {
      const bool relu = activation_.kind == ActivationKind::kRelu;
      std::vector<Candidate> candidates;
      if (plan.bias_row) {
        if (relu) candidates.push_back({CMode::kBias, true});
        candidates.push_back({CMode::kBias, false});
      }
      if (relu) candidates.push_back({plan.base_mode, true});
      candidates.push_back({plan.base_mode, false});
      return choose(node_, context_, dtype_, plan.shape, alignment, candidates);
    });
  }

  const Node& node_;
  CudaContext& context_;
  const DType dtype_;
  const Elem elem_;
  const Activation activation_;
  const bool trans_a_, trans_b_;
  const float alpha_, beta_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, Plan> plans_;
};

std::string matmul_refusal(const Node& node, const Graph& graph) {
  const DType dtype = input_dtype(node, graph, 0);
  if (is_integer(dtype)) {
    return node.op_type + " on " + std::string(dtype_name(dtype)) +
           " is not implemented on the CUDA backend (cuBLASLt multiplies integers only as int8 "
           "with int32 results)";
  }
  if (std::string refusal = dtype_refusal(node, graph, kFloatTypes); !refusal.empty()) {
    return refusal;
  }
  return activation_refusal(node);
}

}  // namespace

std::vector<CudaOp> matmul_ops() {
  return {{"MatMul", matmul_refusal, make_kernel<MatMulKernel>},
          {"Gemm", matmul_refusal, make_kernel<GemmKernel>}};
}

}  // namespace tandem::cuda
