#include <cmath>
#include <memory>
#include <random>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/linalg_dnnl.h"
#include "ir/error.h"
#include "op_test_util.h"
#include "util/compare.h"

namespace tandem::testing {
namespace {

using Attrs = std::map<std::string, Attribute, std::less<>>;

Tensor random_f32(Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(shape));
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

// Compiles one kernel the way the runtime does: from declared input types (possibly dynamic)
// and constant inputs, then runs it on several sets of inputs.
class KernelHarness {
 public:
  KernelHarness(const std::string& op_type, std::vector<TensorType> declared,
                std::vector<Tensor> constants, Attrs attributes,
                MatrixPrecision precision = MatrixPrecision::kFloat32)
      : declared_(std::move(declared)) {
    node_.name = "harness";
    node_.op_type = op_type;
    node_.attributes = std::move(attributes);
    for (size_t i = 0; i < declared_.size(); ++i) node_.inputs.push_back(static_cast<int>(i));
    node_.outputs.push_back(static_cast<int>(declared_.size()));
    constants_ = std::move(constants);
    constants_.resize(declared_.size());
    for (const Tensor& t : constants_) constant_ptrs_.push_back(t.defined() ? &t : nullptr);
    std::vector<ValueInfo> infos;
    for (size_t i = 0; i < declared_.size(); ++i) {
      infos.push_back({declared_[i].dtype, declared_[i].shape, constant_ptrs_[i]});
    }
    InferContext context(node_, 21, infos);
    for (const InferredOutput& out : OpRegistry::instance().find(op_type)->infer(context)) {
      output_types_.push_back({out.dtype, out.shape});
    }
    KernelSpec spec{node_, 21, declared_, output_types_, constant_ptrs_};
    kernel_ = cpu::CpuDevice("cpu:0", {}, precision).compile(spec);
  }

  std::string implementation() const { return kernel_->implementation(); }

  Tensor run(const std::vector<Tensor>& inputs) {
    std::vector<ValueInfo> infos;
    for (const Tensor& t : inputs) infos.push_back({t.dtype(), t.shape(), &t});
    InferContext context(node_, 21, infos);
    const InferredOutput out = OpRegistry::instance().find(node_.op_type)->infer(context)[0];
    std::vector<Tensor> outputs{Tensor::allocate(out.dtype, out.shape)};
    kernel_->run(inputs, outputs);
    return outputs[0];
  }

 private:
  Node node_;
  std::vector<TensorType> declared_, output_types_;
  std::vector<Tensor> constants_;
  std::vector<const Tensor*> constant_ptrs_;
  std::unique_ptr<Kernel> kernel_;
};

TensorType type_of(const Tensor& t) { return {t.dtype(), t.shape()}; }

// ---- reference implementations -------------------------------------------------------------

double reference_activation(const std::string& name, double x, double alpha, double beta) {
  if (name == "Relu") return std::max(x, 0.0);
  if (name == "LeakyRelu") return x > 0 ? x : alpha * x;
  if (name == "Clip") return std::min(std::max(x, alpha), beta);
  if (name == "HardSwish") return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
  if (name == "HardSigmoid") return std::max(0.0, std::min(1.0, alpha * x + beta));
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  return x;
}

Tensor apply_activation(Tensor t, const std::string& name, double alpha = 0, double beta = 0) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] =
        static_cast<float>(reference_activation(name, t.data<float>()[i], alpha, beta));
  }
  return t;
}

// Numpy matmul on float32 or int64, with 1-D operands and broadcast batch dims.
template <typename T>
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  Shape a2 = a.rank() == 1 ? Shape{1, a.dim(0)} : a.shape();
  Shape b2 = b.rank() == 1 ? Shape{b.dim(0), 1} : b.shape();
  const size_t rank = std::max(a2.size(), b2.size());
  a2.insert(a2.begin(), rank - a2.size(), 1);
  b2.insert(b2.begin(), rank - b2.size(), 1);
  const int64_t m = a2[rank - 2], k = a2[rank - 1], n = b2[rank - 1];
  Shape batch;
  for (size_t i = 0; i + 2 < rank; ++i) batch.push_back(std::max(a2[i], b2[i]));
  Shape out_shape = batch;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);
  Tensor out = Tensor::zeros(a.dtype(), out_shape);
  const int64_t batches = numel(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t rest = bi, ao = 0, bo = 0, as = 1, bs = 1;
    for (size_t d = rank - 2; d-- > 0;) {
      const int64_t idx = rest % batch[d];
      rest /= batch[d];
      ao += (a2[d] == 1 ? 0 : idx) * as;
      bo += (b2[d] == 1 ? 0 : idx) * bs;
      as *= a2[d];
      bs *= b2[d];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += a.data<T>()[ao * m * k + i * k + p] * b.data<T>()[bo * k * n + p * n + j];
        }
        out.data<T>()[(bi * m + i) * n + j] = acc;
      }
    }
  }
  return out;
}

Tensor reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool ta, bool tb,
                      float alpha, float beta) {
  const int64_t m = a.dim(ta ? 1 : 0), k = a.dim(ta ? 0 : 1), n = b.dim(tb ? 0 : 1);
  Tensor out = Tensor::zeros(DType::kFloat32, {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += a.data<float>()[ta ? p * m + i : i * k + p] *
               b.data<float>()[tb ? j * k + p : p * n + j];
      }
      double cv = 0;
      if (c.defined()) {
        const int64_t cr = c.rank() == 2 ? c.dim(0) : 1, cc = c.rank() >= 1 ? c.shape().back() : 1;
        cv = c.data<float>()[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
      }
      out.data<float>()[i * n + j] = static_cast<float>(alpha * acc + beta * cv);
    }
  }
  return out;
}

struct ConvParams {
  std::vector<int64_t> strides, pads_begin, dilations;
  int64_t group = 1;
  Shape out_spatial;
};

// Naive direct convolution over 1 to 3 spatial axes (shorter ranks get leading size-1 axes).
Tensor reference_conv(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvParams& p) {
  const size_t rank = static_cast<size_t>(x.rank() - 2), lead = 3 - rank;
  auto pad3 = [&](const std::vector<int64_t>& v, int64_t fill) {
    std::vector<int64_t> r(lead, fill);
    r.insert(r.end(), v.begin(), v.end());
    return r;
  };
  const auto in = pad3({x.shape().begin() + 2, x.shape().end()}, 1);
  const auto ks = pad3({w.shape().begin() + 2, w.shape().end()}, 1);
  const auto out = pad3(p.out_spatial, 1), st = pad3(p.strides, 1), pb = pad3(p.pads_begin, 0),
             dl = pad3(p.dilations, 1);
  const int64_t n_batch = x.dim(0), cin = x.dim(1), cout = w.dim(0), cg = cin / p.group,
                og = cout / p.group;
  Shape out_shape{n_batch, cout};
  out_shape.insert(out_shape.end(), p.out_spatial.begin(), p.out_spatial.end());
  Tensor y = Tensor::zeros(DType::kFloat32, out_shape);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  float* py = y.data<float>();
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < cout; ++oc)
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow) {
            double acc = bias.defined() ? bias.data<float>()[oc] : 0.0;
            const int64_t g = oc / og;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t kd = 0; kd < ks[0]; ++kd)
                for (int64_t kh = 0; kh < ks[1]; ++kh)
                  for (int64_t kw = 0; kw < ks[2]; ++kw) {
                    const int64_t d = od * st[0] - pb[0] + kd * dl[0];
                    const int64_t h = oh * st[1] - pb[1] + kh * dl[1];
                    const int64_t c = ow * st[2] - pb[2] + kw * dl[2];
                    if (d < 0 || d >= in[0] || h < 0 || h >= in[1] || c < 0 || c >= in[2]) continue;
                    const float xv =
                        px[(((n * cin + g * cg + ic) * in[0] + d) * in[1] + h) * in[2] + c];
                    const float wv = pw[(((oc * cg + ic) * ks[0] + kd) * ks[1] + kh) * ks[2] + kw];
                    acc += static_cast<double>(xv) * wv;
                  }
            py[(((n * cout + oc) * out[0] + od) * out[1] + oh) * out[2] + ow] =
                static_cast<float>(acc);
          }
  return y;
}

// Naive 2-D transposed convolution: every input pixel scatters its kernel into the output.
Tensor reference_conv_transpose_2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                                   const ConvParams& p) {
  const int64_t n_batch = x.dim(0), cin = x.dim(1), h_in = x.dim(2), w_in = x.dim(3);
  const int64_t og = w.dim(1), cout = og * p.group, cg = cin / p.group, kh = w.dim(2),
                kw = w.dim(3);
  const int64_t h_out = p.out_spatial[0], w_out = p.out_spatial[1];
  Tensor y = Tensor::zeros(DType::kFloat32, {n_batch, cout, h_out, w_out});
  float* py = y.data<float>();
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < cout; ++oc)
      for (int64_t i = 0; i < h_out * w_out; ++i)
        py[(n * cout + oc) * h_out * w_out + i] = bias.defined() ? bias.data<float>()[oc] : 0.f;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t ic = 0; ic < cin; ++ic)
      for (int64_t ih = 0; ih < h_in; ++ih)
        for (int64_t iw = 0; iw < w_in; ++iw) {
          const float xv = x.data<float>()[((n * cin + ic) * h_in + ih) * w_in + iw];
          const int64_t g = ic / cg;
          for (int64_t o = 0; o < og; ++o)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                const int64_t oh = ih * p.strides[0] + a * p.dilations[0] - p.pads_begin[0];
                const int64_t ow = iw * p.strides[1] + b * p.dilations[1] - p.pads_begin[1];
                if (oh < 0 || oh >= h_out || ow < 0 || ow >= w_out) continue;
                const int64_t oc = g * og + o;
                py[((n * cout + oc) * h_out + oh) * w_out + ow] +=
                    xv * w.data<float>()[((ic * og + o) * kh + a) * kw + b];
              }
        }
  return y;
}

// Naive 2-D pooling with ONNX semantics; `pads_end` bounds what count_include_pad counts.
Tensor reference_pool_2d(const Tensor& x, bool max, bool include_pad, std::vector<int64_t> kernel,
                         std::vector<int64_t> strides, std::vector<int64_t> pads,
                         std::vector<int64_t> dilations, Shape out_spatial) {
  const int64_t planes = x.dim(0) * x.dim(1), h_in = x.dim(2), w_in = x.dim(3);
  Tensor y = Tensor::zeros(DType::kFloat32, {x.dim(0), x.dim(1), out_spatial[0], out_spatial[1]});
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < out_spatial[0]; ++oh)
      for (int64_t ow = 0; ow < out_spatial[1]; ++ow) {
        double best = -INFINITY, sum = 0;
        int64_t count = 0, padded = 0;
        for (int64_t a = 0; a < kernel[0]; ++a)
          for (int64_t b = 0; b < kernel[1]; ++b) {
            const int64_t h = oh * strides[0] - pads[0] + a * dilations[0];
            const int64_t w = ow * strides[1] - pads[1] + b * dilations[1];
            if (h >= -pads[0] && h < h_in + pads[2] && w >= -pads[1] && w < w_in + pads[3])
              ++padded;
            if (h < 0 || h >= h_in || w < 0 || w >= w_in) continue;
            const double v = x.data<float>()[(p * h_in + h) * w_in + w];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        y.data<float>()[(p * out_spatial[0] + oh) * out_spatial[1] + ow] = static_cast<float>(
            max ? best : sum / static_cast<double>(include_pad ? padded : count));
      }
  return y;
}

// ---- MatMul ----------------------------------------------------------------------------------

TEST(Linalg, MatMulHandComputed) {
  const OpResult r =
      run_op("MatMul", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  expect_close(r.outputs[0], f32({2, 2}, {58, 64, 139, 154}));
}

TEST(Linalg, MatMulBatchedBroadcast) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4, 5}, {2, 3, 5, 4}},  // attention scores
      {{2, 1, 4, 5}, {1, 3, 5, 6}},  // broadcast on both sides
      {{3, 7, 8}, {8, 5}},           // batch folds into M
      {{4, 5}, {3, 5, 2}},           // A broadcast over B's batch
      {{5}, {5}},                    // vector dot
      {{5}, {2, 5, 3}},
      {{2, 4, 5}, {5}},
      {{1, 1, 6, 5}, {1, 1, 5, 7}},
  };
  uint32_t seed = 1;
  for (const auto& [sa, sb] : cases) {
    const Tensor a = random_f32(sa, seed++), b = random_f32(sb, seed++);
    SCOPED_TRACE(shape_str(sa) + " x " + shape_str(sb));
    expect_close(run_op("MatMul", {a, b}).outputs[0], reference_matmul<float>(a, b), 1e-4, 1e-5);
  }
}

// An empty contracting dim sums nothing: zeros, then the fused activation (was a division by
// zero in the kernel's row count).
TEST(Linalg, MatMulOverAnEmptyDimIsZeros) {
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
           {{3, 0}, {0, 4}}, {{2, 3, 0}, {0, 4}}, {{2, 3, 0}, {2, 0, 4}}}) {
    SCOPED_TRACE(shape_str(sa) + " x " + shape_str(sb));
    const Tensor a = Tensor::zeros(DType::kFloat32, sa), b = Tensor::zeros(DType::kFloat32, sb);
    const Tensor y = run_op("MatMul", {a, b}).outputs[0];
    expect_close(y, reference_matmul<float>(a, b));
    const Tensor gated =
        run_op("MatMul", {a, b}, {{"activation", std::string("Sigmoid")}}).outputs[0];
    for (int64_t i = 0; i < gated.numel(); ++i) EXPECT_EQ(gated.data<float>()[i], 0.5f);
  }
  const OpResult gemm = run_op("Gemm",
                               {Tensor::zeros(DType::kFloat32, {2, 0}),
                                Tensor::zeros(DType::kFloat32, {0, 3}), f32({3}, {1, -2, 3})},
                               {{"beta", 2.0f}});
  expect_close(gemm.outputs[0], f32({2, 3}, {2, -4, 6, 2, -4, 6}));
}

TEST(Linalg, MatMulInt64) {
  const Tensor a = i64({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, -2, -3, 7, 8, 9});
  const Tensor b = i64({3, 1}, {1, 10, 100});
  expect_equal(run_op("MatMul", {a, b}).outputs[0], i64({2, 2, 1}, {321, 654, -321, 987}));
}

TEST(Linalg, MatMulConstantWeightsAndDynamicRows) {
  const Tensor b = random_f32({16, 24}, 7);
  KernelHarness kernel("MatMul", {{DType::kFloat32, {kDynamicDim, kDynamicDim, 16}}, type_of(b)},
                       {Tensor(), b}, {});
  for (int64_t rows : {3, 9, 3}) {  // rebuilds when the shape changes, reuses packed weights
    const Tensor a = random_f32({2, rows, 16}, static_cast<uint32_t>(rows));
    expect_close(kernel.run({a, b}), reference_matmul<float>(a, b), 1e-4, 1e-5);
  }
}

TEST(Linalg, MatMulFusedActivations) {
  const Tensor a = random_f32({2, 5, 8}, 3), b = random_f32({8, 6}, 4);
  const Tensor plain = reference_matmul<float>(a, b);
  const std::vector<std::tuple<std::string, float, float>> cases = {{"Relu", 0, 0},
                                                                    {"LeakyRelu", 0.1f, 0},
                                                                    {"Clip", -0.5f, 0.5f},
                                                                    {"HardSwish", 0, 0},
                                                                    {"HardSigmoid", 0.3f, 0.4f},
                                                                    {"Sigmoid", 0, 0},
                                                                    {"Tanh", 0, 0},
                                                                    {"Gelu", 0, 0}};
  for (const auto& [name, alpha, beta] : cases) {
    SCOPED_TRACE(name);
    Attrs attrs{{"activation", name}};
    double ref_alpha = alpha, ref_beta = beta;
    if (name == "LeakyRelu" || name == "Clip" || name == "HardSigmoid") {
      attrs["activation_alpha"] = alpha;
      attrs["activation_beta"] = beta;
    }
    expect_close(run_op("MatMul", {a, b}, attrs).outputs[0],
                 apply_activation(plain.clone(), name, ref_alpha, ref_beta), 1e-4, 1e-5);
  }
  // Defaults follow the ONNX ops: HardSigmoid alpha 0.2, beta 0.5; Clip unbounded.
  expect_close(run_op("MatMul", {a, b}, {{"activation", std::string("HardSigmoid")}}).outputs[0],
               apply_activation(plain.clone(), "HardSigmoid", 0.2, 0.5), 1e-4, 1e-5);
  expect_close(run_op("MatMul", {a, b}, {{"activation", std::string("Clip")}}).outputs[0], plain,
               1e-4, 1e-5);
}

TEST(Linalg, MatMulInference) {
  const auto shape_of = [](Shape a, Shape b) {
    return infer_op("MatMul", {{DType::kFloat32, a}, {DType::kFloat32, b}})[0].shape;
  };
  EXPECT_EQ(shape_of({2, 3, 4}, {4, 5}), (Shape{2, 3, 5}));
  EXPECT_EQ(shape_of({4}, {4}), Shape{});
  EXPECT_EQ(shape_of({4}, {7, 4, 5}), (Shape{7, 5}));
  EXPECT_EQ(shape_of({kDynamicDim, 1, 3, 4}, {6, 4, kDynamicDim}),
            (Shape{kDynamicDim, 6, 3, kDynamicDim}));
  EXPECT_EQ(shape_of({2, 3, kDynamicDim}, {4, 5}), (Shape{2, 3, 5}));
  EXPECT_THROW(shape_of({2, 3}, {4, 5}), InputError);
  EXPECT_THROW(shape_of({2, 2, 3}, {3, 3, 5}), InputError);
  EXPECT_THROW(shape_of({}, {3}), InputError);
  EXPECT_THROW(infer_op("MatMul", {{DType::kFloat32, {2, 3}}, {DType::kInt64, {3, 2}}}),
               InputError);
  EXPECT_THROW(infer_op("MatMul", {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {3, 2}}},
                        {{"activation", std::string("Softplus")}}),
               InputError);
  EXPECT_THROW(infer_op("MatMul", {{DType::kInt64, {2, 3}}, {DType::kInt64, {3, 2}}},
                        {{"activation", std::string("Relu")}}),
               InputError);
}

TEST(Linalg, MatMulCost) {
  const OpSchema* schema = OpRegistry::instance().find("MatMul");
  Node node;
  const std::vector<TensorType> in = {{DType::kFloat32, {2, 8, 16, 32}},
                                      {DType::kFloat32, {2, 8, 32, 16}}};
  const std::vector<TensorType> out = {{DType::kFloat32, {2, 8, 16, 16}}};
  EXPECT_DOUBLE_EQ(schema->cost(node, in, out).flops, 2.0 * 16 * 16 * 32 * 16);
}

// ---- Gemm ------------------------------------------------------------------------------------

TEST(Linalg, GemmHandComputed) {
  const OpResult r =
      run_op("Gemm", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8}), f32({2}, {1, -1})},
             {{"transB", int64_t{1}}, {"alpha", 2.0f}, {"beta", 3.0f}});
  // A x B^T = [[17, 23], [39, 53]]; times 2 plus 3 * [1, -1].
  expect_close(r.outputs[0], f32({2, 2}, {37, 43, 81, 103}));
}

TEST(Linalg, GemmTransposesAndBroadcastC) {
  const int64_t m = 5, k = 7, n = 6;
  const std::vector<Shape> c_shapes = {{}, {n}, {1, n}, {m, 1}, {m, n}, {1}};
  uint32_t seed = 10;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      for (size_t ci = 0; ci <= c_shapes.size(); ++ci) {
        for (const auto& [alpha, beta] : {std::pair{1.0f, 1.0f}, std::pair{0.5f, -2.0f}}) {
          const Tensor a = random_f32(ta ? Shape{k, m} : Shape{m, k}, seed++);
          const Tensor b = random_f32(tb ? Shape{n, k} : Shape{k, n}, seed++);
          const Tensor c = ci < c_shapes.size() ? random_f32(c_shapes[ci], seed++) : Tensor();
          SCOPED_TRACE("transA " + std::to_string(ta) + " transB " + std::to_string(tb) + " C " +
                       (c.defined() ? shape_str(c.shape()) : "none") + " alpha " +
                       std::to_string(alpha));
          const Attrs attrs{
              {"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", alpha}, {"beta", beta}};
          std::vector<Tensor> inputs{a, b};
          if (c.defined()) inputs.push_back(c);
          expect_close(run_op("Gemm", inputs, attrs).outputs[0],
                       reference_gemm(a, b, c, ta, tb, alpha, beta), 1e-4, 1e-5);
        }
      }
    }
  }
}

TEST(Linalg, GemmConstantWeightsWithActivation) {
  const Tensor a = random_f32({4, 32}, 1), b = random_f32({10, 32}, 2), c = random_f32({10}, 3);
  const Attrs attrs{{"transB", int64_t{1}}, {"activation", std::string("Relu")}};
  KernelHarness kernel("Gemm", {type_of(a), type_of(b), type_of(c)}, {Tensor(), b, c}, attrs);
  const Tensor expected = apply_activation(reference_gemm(a, b, c, false, true, 1, 1), "Relu");
  expect_close(kernel.run({a, b, c}), expected, 1e-4, 1e-5);
  // Unfused: negative values survive.
  const Tensor unfused = run_op("Gemm", {a, b, c}, {{"transB", int64_t{1}}}).outputs[0];
  expect_close(unfused, reference_gemm(a, b, c, false, true, 1, 1), 1e-4, 1e-5);
}

TEST(Linalg, GemmInt64) {
  const OpResult r =
      run_op("Gemm", {i64({1, 2}, {3, 4}), i64({2, 2}, {1, 2, 3, 4}), i64({1}, {100})});
  expect_equal(r.outputs[0], i64({1, 2}, {115, 122}));
}

TEST(Linalg, GemmInference) {
  const auto gemm = [](Shape a, Shape b, Attrs attrs = {}) {
    return infer_op("Gemm", {{DType::kFloat32, a}, {DType::kFloat32, b}}, attrs)[0].shape;
  };
  EXPECT_EQ(gemm({3, 4}, {4, 5}), (Shape{3, 5}));
  EXPECT_EQ(gemm({4, 3}, {5, 4}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}}), (Shape{3, 5}));
  EXPECT_EQ(gemm({kDynamicDim, 4}, {4, 5}), (Shape{kDynamicDim, 5}));
  EXPECT_THROW(gemm({3, 4}, {5, 4}), InputError);
  EXPECT_THROW(gemm({3, 4, 1}, {4, 5}), InputError);
  EXPECT_THROW(gemm({3, 4}, {4, 5}, {{"transA", int64_t{2}}}), InputError);
  EXPECT_THROW(
      infer_op("Gemm",
               {{DType::kFloat32, {3, 4}}, {DType::kFloat32, {4, 5}}, {DType::kFloat32, {3, 2}}}),
      InputError);
  EXPECT_THROW(infer_op("Gemm", {{DType::kFloat32, {3, 4}}, {DType::kFloat32, {4, 5}}},
                        {{"alpha", std::string("x")}}),
               InputError);
}

// ---- Conv ------------------------------------------------------------------------------------

TEST(Linalg, ConvHandComputed) {
  // 3x3 input, 2x2 kernel of ones, stride 1, no padding: sums of 2x2 blocks, plus bias 1.
  const OpResult r = run_op("Conv", {f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                     f32({1, 1, 2, 2}, {1, 1, 1, 1}), f32({1}, {1})});
  expect_close(r.outputs[0], f32({1, 1, 2, 2}, {13, 17, 25, 29}));
}

struct ConvCase {
  Shape x, w;
  Attrs attrs;
  ConvParams expected;  // geometry the reference uses
  bool bias;
};

TEST(Linalg, ConvAgainstReference) {
  const std::vector<ConvCase> cases = {
      // 2-D: padding, strides, dilation, groups, depthwise, channel counts for both layouts.
      {{2, 3, 9, 9},
       {4, 3, 3, 3},
       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {{1, 1}, {1, 1}, {1, 1}, 1, {9, 9}},
       true},
      {{1, 4, 10, 8},
       {6, 2, 3, 2},
       {{"strides", std::vector<int64_t>{2, 3}},
        {"pads", std::vector<int64_t>{1, 0, 2, 1}},
        {"group", int64_t{2}}},
       {{2, 3}, {1, 0}, {1, 1}, 2, {6, 3}},
       false},
      {{1, 2, 11, 11},
       {3, 2, 3, 3},
       {{"dilations", std::vector<int64_t>{2, 3}}, {"pads", std::vector<int64_t>{2, 1, 0, 3}}},
       {{1, 1}, {2, 1}, {2, 3}, 1, {9, 9}},
       true},
      {{2, 16, 12, 12},
       {16, 1, 3, 3},
       {{"group", int64_t{16}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {{1, 1}, {1, 1}, {1, 1}, 16, {12, 12}},
       true},
      {{2, 16, 16, 16},
       {32, 16, 3, 3},
       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}},
       {{2, 2}, {1, 1}, {1, 1}, 1, {8, 8}},
       true},
      {{1, 64, 28, 28},
       {32, 64, 1, 1},
       {},
       {{1, 1}, {0, 0}, {1, 1}, 1, {28, 28}},
       true},  // plain layout
      // Depthwise (the NCHW loop): strides, asymmetric pads, dilation, 5x5, odd kernels.
      {{1, 8, 11, 10},
       {8, 1, 3, 3},
       {{"group", int64_t{8}},
        {"strides", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{0, 0, 1, 1}}},
       {{2, 2}, {0, 0}, {1, 1}, 8, {5, 5}},
       true},
      {{1, 4, 9, 9},
       {4, 1, 5, 5},
       {{"group", int64_t{4}},
        {"dilations", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{4, 4, 4, 4}}},
       {{1, 1}, {4, 4}, {2, 2}, 4, {9, 9}},
       false},
      {{1, 3, 8, 7},
       {3, 1, 3, 3},
       {{"group", int64_t{3}},
        {"strides", std::vector<int64_t>{2, 1}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {{2, 1}, {1, 1}, {1, 1}, 3, {4, 7}},
       true},
      {{1, 3, 6, 9},
       {3, 1, 2, 4},
       {{"group", int64_t{3}}, {"pads", std::vector<int64_t>{0, 1, 1, 2}}},
       {{1, 1}, {0, 1}, {1, 1}, 3, {6, 9}},
       true},
      {{2, 6, 15},
       {6, 1, 3},
       {{"group", int64_t{6}},
        {"strides", std::vector<int64_t>{3}},
        {"pads", std::vector<int64_t>{1, 1}}},
       {{3}, {1}, {1}, 6, {5}},
       true},
      {{1, 4, 6, 6},
       {8, 1, 3, 3},
       {{"group", int64_t{4}}},
       {{1, 1}, {0, 0}, {1, 1}, 4, {4, 4}},
       true},  // 2 outputs per channel: oneDNN
      // 1-D and 3-D.
      {{2, 3, 20},
       {5, 3, 4},
       {{"strides", std::vector<int64_t>{2}},
        {"pads", std::vector<int64_t>{1, 2}},
        {"dilations", std::vector<int64_t>{2}}},
       {{2}, {1}, {2}, 1, {9}},
       true},
      {{1, 2, 5, 6, 7},
       {4, 2, 2, 3, 3},
       {{"pads", std::vector<int64_t>{0, 1, 1, 1, 1, 1}}},
       {{1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1, {5, 6, 7}},
       true},
  };
  uint32_t seed = 100;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    const Tensor x = random_f32(c.x, seed++), w = random_f32(c.w, seed++);
    const Tensor bias = c.bias ? random_f32({c.w[0]}, seed++) : Tensor();
    std::vector<Tensor> inputs{x, w};
    if (c.bias) inputs.push_back(bias);
    const Tensor expected = reference_conv(x, w, bias, c.expected);
    expect_close(run_op("Conv", inputs, c.attrs).outputs[0], expected, 1e-4, 1e-4);
    // Constant weights are packed once at build.
    std::vector<TensorType> types;
    for (const Tensor& t : inputs) types.push_back(type_of(t));
    KernelHarness packed("Conv", types, {Tensor(), w, bias}, c.attrs);
    expect_close(packed.run(inputs), expected, 1e-4, 1e-4);
  }
}

TEST(Linalg, ConvAutoPad) {
  const Tensor x = random_f32({1, 2, 7, 8}, 1), w = random_f32({3, 2, 3, 2}, 2);
  const Attrs stride2{{"strides", std::vector<int64_t>{2, 2}}};
  // SAME: output ceil(7/2)=4, ceil(8/2)=4; total pads 2 (rows) and 0 (columns).
  Attrs upper = stride2, lower = stride2, valid = stride2;
  upper["auto_pad"] = std::string("SAME_UPPER");
  lower["auto_pad"] = std::string("SAME_LOWER");
  valid["auto_pad"] = std::string("VALID");
  expect_close(run_op("Conv", {x, w}, upper).outputs[0],
               reference_conv(x, w, Tensor(), {{2, 2}, {1, 0}, {1, 1}, 1, {4, 4}}), 1e-4, 1e-5);
  expect_close(run_op("Conv", {x, w}, lower).outputs[0],
               reference_conv(x, w, Tensor(), {{2, 2}, {1, 0}, {1, 1}, 1, {4, 4}}), 1e-4, 1e-5);
  expect_close(run_op("Conv", {x, w}, valid).outputs[0],
               reference_conv(x, w, Tensor(), {{2, 2}, {0, 0}, {1, 1}, 1, {3, 4}}), 1e-4, 1e-5);
  // Odd total padding: SAME_UPPER puts the extra row at the end, SAME_LOWER at the start.
  const Tensor x6 = random_f32({1, 1, 6, 6}, 3), w2 = random_f32({1, 1, 2, 2}, 4);
  Attrs same_upper{{"auto_pad", std::string("SAME_UPPER")}},
      same_lower{{"auto_pad", std::string("SAME_LOWER")}};
  expect_close(run_op("Conv", {x6, w2}, same_upper).outputs[0],
               reference_conv(x6, w2, Tensor(), {{1, 1}, {0, 0}, {1, 1}, 1, {6, 6}}), 1e-4, 1e-5);
  expect_close(run_op("Conv", {x6, w2}, same_lower).outputs[0],
               reference_conv(x6, w2, Tensor(), {{1, 1}, {1, 1}, {1, 1}, 1, {6, 6}}), 1e-4, 1e-5);
}

TEST(Linalg, ConvFusedResidualAndActivation) {
  // Both layouts: a 3x3 conv (blocked) and a wide 1x1 conv (plain).
  // Every path: a 3x3 conv (blocked layout), a wide 1x1 conv (plain), a depthwise conv (loop).
  const std::vector<std::tuple<Shape, Shape, int64_t>> cases = {
      {{2, 8, 10, 10}, {8, 8, 3, 3}, 1},
      {{1, 64, 28, 28}, {64, 64, 1, 1}, 1},
      {{2, 8, 10, 10}, {8, 1, 3, 3}, 8}};
  uint32_t seed = 50;
  for (const auto& [xs, ws, group] : cases) {
    SCOPED_TRACE(shape_str(xs) + " * " + shape_str(ws));
    const Tensor x = random_f32(xs, seed++), w = random_f32(ws, seed++),
                 b = random_f32({ws[0]}, seed++);
    const int64_t pad = ws[2] / 2;
    const Attrs pads{{"pads", std::vector<int64_t>{pad, pad, pad, pad}}, {"group", group}};
    const Tensor conv =
        reference_conv(x, w, b, {{1, 1}, {pad, pad}, {1, 1}, group, {xs[2], xs[3]}});
    const Tensor residual = random_f32(conv.shape(), seed++);
    Tensor sum = conv.clone();
    for (int64_t i = 0; i < sum.numel(); ++i) sum.data<float>()[i] += residual.data<float>()[i];
    Attrs relu = pads;
    relu["activation"] = std::string("Relu");
    expect_close(run_op("Conv", {x, w, b, residual}, relu).outputs[0],
                 apply_activation(sum.clone(), "Relu"), 1e-4, 1e-4);
    expect_close(run_op("Conv", {x, w, b, residual}, pads).outputs[0], sum, 1e-4, 1e-4);
    Attrs clip = pads;
    clip["activation"] = std::string("Clip");
    clip["activation_alpha"] = 0.0f;
    clip["activation_beta"] = 6.0f;
    expect_close(run_op("Conv", {x, w, b}, clip).outputs[0],
                 apply_activation(conv.clone(), "Clip", 0, 6), 1e-4, 1e-4);
    Attrs hard_swish = pads;
    hard_swish["activation"] = std::string("HardSwish");
    KernelHarness packed("Conv", {type_of(x), type_of(w), type_of(b), type_of(residual)},
                         {Tensor(), w, b}, hard_swish);
    expect_close(packed.run({x, w, b, residual}), apply_activation(sum.clone(), "HardSwish"), 1e-4,
                 1e-4);
  }
}

TEST(Linalg, ConvDynamicBatchRebuilds) {
  const Tensor w = random_f32({4, 3, 3, 3}, 9);
  KernelHarness kernel("Conv",
                       {{DType::kFloat32, {kDynamicDim, 3, kDynamicDim, kDynamicDim}}, type_of(w)},
                       {Tensor(), w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  for (int64_t size : {6, 9, 6}) {
    const Tensor x = random_f32({size / 3, 3, size, size}, static_cast<uint32_t>(size));
    expect_close(kernel.run({x, w}),
                 reference_conv(x, w, Tensor(), {{1, 1}, {1, 1}, {1, 1}, 1, {size, size}}), 1e-4,
                 1e-4);
  }
}

TEST(Linalg, ConvInference) {
  const auto conv = [](Shape x, Shape w, Attrs attrs = {}) {
    return infer_op("Conv", {{DType::kFloat32, x}, {DType::kFloat32, w}}, attrs)[0].shape;
  };
  EXPECT_EQ(
      conv({1, 3, 224, 224}, {64, 3, 7, 7},
           {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{3, 3, 3, 3}}}),
      (Shape{1, 64, 112, 112}));
  EXPECT_EQ(conv({kDynamicDim, 3, kDynamicDim, 32}, {8, 3, 3, 3}),
            (Shape{kDynamicDim, 8, kDynamicDim, 30}));
  EXPECT_EQ(
      conv({1, 4, 10}, {4, 1, 3}, {{"group", int64_t{4}}, {"auto_pad", std::string("SAME_LOWER")}}),
      (Shape{1, 4, 10}));
  EXPECT_EQ(conv({1, 2, 9, 9}, {2, 2, kDynamicDim, kDynamicDim},
                 {{"kernel_shape", std::vector<int64_t>{3, 5}}}),
            (Shape{1, 2, 7, 5}));
  EXPECT_THROW(conv({1, 3, 8, 8}, {4, 2, 3, 3}), InputError);  // channels
  EXPECT_THROW(conv({1, 4, 8, 8}, {3, 2, 3, 3}, {{"group", int64_t{2}}}),
               InputError);  // Cout % group
  EXPECT_THROW(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"strides", std::vector<int64_t>{1}}}),
               InputError);
  EXPECT_THROW(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"strides", std::vector<int64_t>{0, 1}}}),
               InputError);
  EXPECT_THROW(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"auto_pad", std::string("SAME")}}), InputError);
  EXPECT_THROW(conv({1, 3, 2, 2}, {4, 3, 3, 3}), InputError);  // kernel > input
  EXPECT_THROW(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"kernel_shape", std::vector<int64_t>{3, 2}}}),
               InputError);
  EXPECT_THROW(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"pads", std::vector<int64_t>{-1, 0, 0, 0}}}),
               InputError);
  EXPECT_THROW(conv({3, 8}, {4, 3}), InputError);
  EXPECT_THROW(infer_op("Conv", {{DType::kFloat32, {1, 3, 8, 8}},
                                 {DType::kFloat32, {4, 3, 3, 3}},
                                 {},
                                 {DType::kFloat32, {1, 4, 5, 6}}}),
               InputError);  // residual shape
  EXPECT_EQ(infer_op("Conv", {{DType::kFloat32, {1, 3, 8, 8}},
                              {DType::kFloat32, {4, 3, 3, 3}},
                              {},
                              {DType::kFloat32, {1, 4, 6, 6}}})[0]
                .shape,
            (Shape{1, 4, 6, 6}));
  EXPECT_THROW(infer_op("Conv", {{DType::kFloat32, {1, 3, 8, 8}},
                                 {DType::kFloat32, {4, 3, 3, 3}},
                                 {DType::kFloat32, {3}}}),
               InputError);  // bias size
}

TEST(Linalg, ConvFloat64IsRejectedAtCompile) {
  const Tensor x = Tensor::from_vector<double>(DType::kFloat64, {1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = Tensor::from_vector<double>(DType::kFloat64, {1, 1, 1, 1}, {2});
  EXPECT_EQ(infer_op("Conv", {{DType::kFloat64, x.shape()}, {DType::kFloat64, w.shape()}})[0].dtype,
            DType::kFloat64);
  EXPECT_THROW(run_op("Conv", {x, w}), InputError);
}

TEST(Linalg, ConvCost) {
  const OpSchema* schema = OpRegistry::instance().find("Conv");
  Node node;
  const std::vector<TensorType> in = {{DType::kFloat32, {2, 8, 10, 10}},
                                      {DType::kFloat32, {16, 4, 3, 3}}};
  const std::vector<TensorType> out = {{DType::kFloat32, {2, 16, 8, 8}}};
  EXPECT_DOUBLE_EQ(schema->cost(node, in, out).flops, 2.0 * 2 * 16 * 64 * 4 * 9);
}

// ---- ConvTranspose -----------------------------------------------------------------------------

TEST(Linalg, ConvTransposeHandComputed) {
  // Stride 2 scatters each input into a 2x2 block of the kernel.
  const OpResult r =
      run_op("ConvTranspose", {f32({1, 1, 1, 2}, {1, 2}), f32({1, 1, 2, 2}, {1, 2, 3, 4})},
             {{"strides", std::vector<int64_t>{2, 2}}});
  expect_close(r.outputs[0], f32({1, 1, 2, 4}, {1, 2, 2, 4, 3, 4, 6, 8}));
}

TEST(Linalg, ConvTransposeAgainstReference) {
  struct Case {
    Shape x, w;
    Attrs attrs;
    ConvParams expected;
  };
  const std::vector<Case> cases = {
      {{1, 3, 4, 5},
       {3, 2, 3, 3},
       {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {{2, 2}, {1, 1}, {1, 1}, 1, {7, 9}}},
      {{2, 4, 3, 3},
       {4, 3, 3, 2},
       {{"strides", std::vector<int64_t>{2, 3}},
        {"group", int64_t{2}},
        {"output_padding", std::vector<int64_t>{1, 2}}},
       {{2, 3}, {0, 0}, {1, 1}, 2, {8, 10}}},
      {{1, 2, 4, 4},
       {2, 2, 3, 3},
       {{"strides", std::vector<int64_t>{2, 2}}, {"output_shape", std::vector<int64_t>{8, 8}}},
       {{2, 2}, {1, 1}, {1, 1}, 1, {8, 8}}},  // total padding 1: without SAME_UPPER it goes first
      {{1, 2, 4, 4},
       {2, 3, 3, 3},
       {{"strides", std::vector<int64_t>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}},
       {{2, 2}, {0, 0}, {1, 1}, 1, {8, 8}}},
      {{1, 2, 5, 5},
       {2, 2, 2, 2},
       {{"dilations", std::vector<int64_t>{2, 2}}},
       {{1, 1}, {0, 0}, {2, 2}, 1, {7, 7}}},
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    const Tensor x = random_f32(c.x, seed++), w = random_f32(c.w, seed++);
    const Tensor bias = random_f32({c.w[1] * c.expected.group}, seed++);
    expect_close(run_op("ConvTranspose", {x, w, bias}, c.attrs).outputs[0],
                 reference_conv_transpose_2d(x, w, bias, c.expected), 1e-4, 1e-4);
  }
}

TEST(Linalg, ConvTransposeInference) {
  const auto shape = [](Shape x, Shape w, Attrs attrs) {
    return infer_op("ConvTranspose", {{DType::kFloat32, x}, {DType::kFloat32, w}}, attrs)[0].shape;
  };
  EXPECT_EQ(shape({1, 8, 5, 5}, {8, 4, 3, 3},
                  {{"strides", std::vector<int64_t>{2, 2}}, {"group", int64_t{2}}}),
            (Shape{1, 8, 11, 11}));
  EXPECT_EQ(shape({1, 8, 5, 5}, {8, 4, 3, 3},
                  {{"output_shape", std::vector<int64_t>{1, 4, 10, 10}},
                   {"strides", std::vector<int64_t>{2, 2}}}),
            (Shape{1, 4, 10, 10}));
  EXPECT_THROW(shape({1, 8, 5, 5}, {4, 4, 3, 3}, {}), InputError);
  EXPECT_THROW(shape({1, 8, 5, 5}, {8, 4, 3, 3}, {{"output_shape", std::vector<int64_t>{20, 20}}}),
               InputError);
}

// ---- Pooling -----------------------------------------------------------------------------------

TEST(Linalg, MaxPoolHandComputedWithIndices) {
  const Tensor x = f32({1, 1, 3, 3}, {1, 9, 2, 4, 3, 8, 7, 5, 6});
  const Attrs attrs{{"kernel_shape", std::vector<int64_t>{2, 2}}};
  const OpResult r = run_op("MaxPool", {x}, attrs, 2);
  expect_close(r.outputs[0], f32({1, 1, 2, 2}, {9, 9, 7, 8}));
  expect_equal(r.outputs[1], i64({1, 1, 2, 2}, {1, 1, 6, 5}));
  Attrs column_major = attrs;
  column_major["storage_order"] = int64_t{1};
  expect_equal(run_op("MaxPool", {x}, column_major, 2).outputs[1], i64({1, 1, 2, 2}, {3, 3, 2, 7}));
}

TEST(Linalg, PoolAgainstReference) {
  struct Case {
    Shape x;
    Attrs attrs;
    std::vector<int64_t> kernel, strides, pads, dilations;
    Shape out;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8},
       {{"kernel_shape", std::vector<int64_t>{3, 3}},
        {"strides", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       {3, 3},
       {2, 2},
       {1, 1, 1, 1},
       {1, 1},
       {4, 4}},
      // ceil_mode: 7 -> ceil((7-3)/2)+1 = 3 along rows, the last window overhangs the input.
      {{1, 2, 7, 6},
       {{"kernel_shape", std::vector<int64_t>{3, 2}},
        {"strides", std::vector<int64_t>{2, 2}},
        {"ceil_mode", int64_t{1}}},
       {3, 2},
       {2, 2},
       {0, 0, 0, 0},
       {1, 1},
       {3, 3}},
      {{1, 2, 5, 5},
       {{"kernel_shape", std::vector<int64_t>{2, 2}},
        {"strides", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
        {"ceil_mode", int64_t{1}}},
       {2, 2},
       {2, 2},
       {1, 1, 1, 1},
       {1, 1},
       {3, 3}},  // a 4th window would start in the padding
      {{1, 2, 9, 9},
       {{"kernel_shape", std::vector<int64_t>{2, 2}},
        {"dilations", std::vector<int64_t>{2, 3}},
        {"pads", std::vector<int64_t>{1, 0, 1, 1}}},
       {2, 2},
       {1, 1},
       {1, 0, 1, 1},
       {2, 3},
       {9, 7}},
      {{1, 1, 5, 5},
       {{"kernel_shape", std::vector<int64_t>{2, 2}},
        {"auto_pad", std::string("SAME_UPPER")},
        {"strides", std::vector<int64_t>{2, 2}}},
       {2, 2},
       {2, 2},
       {0, 0, 1, 1},
       {1, 1},
       {3, 3}},
  };
  uint32_t seed = 500;
  for (const Case& c : cases) {
    const Tensor x = random_f32(c.x, seed++);
    for (const char* op : {"MaxPool", "AveragePool"}) {
      for (int64_t include_pad : {0, 1}) {
        SCOPED_TRACE(std::string(op) + " " + shape_str(c.x) + " include_pad " +
                     std::to_string(include_pad));
        Attrs attrs = c.attrs;
        const bool max = std::string(op) == "MaxPool";
        if (!max) attrs["count_include_pad"] = include_pad;
        const Tensor expected =
            reference_pool_2d(x, max, include_pad, c.kernel, c.strides, c.pads, c.dilations, c.out);
        expect_close(run_op(op, {x}, attrs).outputs[0], expected, 1e-5, 1e-6);
        if (max) expect_close(run_op(op, {x}, attrs, 2).outputs[0], expected, 1e-5, 1e-6);
      }
    }
  }
}

TEST(Linalg, Pool1dAnd3d) {
  const Tensor x1 = f32({1, 1, 5}, {1, 5, 2, 4, 3});
  expect_close(run_op("MaxPool", {x1},
                      {{"kernel_shape", std::vector<int64_t>{2}},
                       {"strides", std::vector<int64_t>{2}},
                       {"ceil_mode", int64_t{1}}})
                   .outputs[0],
               f32({1, 1, 3}, {5, 4, 3}));
  expect_close(
      run_op("AveragePool", {x1},
             {{"kernel_shape", std::vector<int64_t>{3}}, {"pads", std::vector<int64_t>{1, 1}}})
          .outputs[0],
      f32({1, 1, 5}, {3, 8.0f / 3, 11.0f / 3, 3, 3.5f}));
  // count_include_pad with a ceil_mode overhang: the overhang is not counted (ONNX Runtime).
  expect_close(run_op("AveragePool", {x1},
                      {{"kernel_shape", std::vector<int64_t>{2}},
                       {"strides", std::vector<int64_t>{2}},
                       {"ceil_mode", int64_t{1}},
                       {"count_include_pad", int64_t{1}}})
                   .outputs[0],
               f32({1, 1, 3}, {3, 3, 3}));
  Tensor x3 = Tensor::allocate(DType::kFloat32, {1, 1, 2, 2, 2});
  for (int i = 0; i < 8; ++i) x3.data<float>()[i] = static_cast<float>(i);
  expect_close(
      run_op("MaxPool", {x3}, {{"kernel_shape", std::vector<int64_t>{2, 2, 2}}}).outputs[0],
      f32({1, 1, 1, 1, 1}, {7}));
  expect_close(
      run_op("AveragePool", {x3}, {{"kernel_shape", std::vector<int64_t>{2, 2, 2}}}).outputs[0],
      f32({1, 1, 1, 1, 1}, {3.5f}));
}

TEST(Linalg, MaxPoolInt8) {
  const Tensor x = Tensor::from_vector<int8_t>(DType::kInt8, {1, 1, 2, 3}, {-5, 3, -1, 7, -8, 2});
  const OpResult r = run_op("MaxPool", {x}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  expect_equal(r.outputs[0], Tensor::from_vector<int8_t>(DType::kInt8, {1, 1, 1, 2}, {7, 3}));
}

TEST(Linalg, GlobalPools) {
  const Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 6, -1, -2, -3, -4});
  expect_close(run_op("GlobalAveragePool", {x}).outputs[0], f32({1, 2, 1, 1}, {3, -2.5f}));
  expect_close(run_op("GlobalMaxPool", {x}).outputs[0], f32({1, 2, 1, 1}, {6, -1}));
  const Tensor big = random_f32({2, 64, 40, 40}, 5);
  const Tensor avg = run_op("GlobalAveragePool", {big}).outputs[0];
  double sum = 0;
  for (int64_t i = 0; i < 1600; ++i) sum += big.data<float>()[64 * 1600 + i];
  EXPECT_NEAR(avg.data<float>()[64], sum / 1600, 1e-5);
  // 49 values a channel: six rounds of the kernel's eight running sums and one left over.
  const Tensor odd = random_f32({1, 3, 7, 7}, 6);
  const Tensor odd_avg = run_op("GlobalAveragePool", {odd}).outputs[0];
  for (int64_t c = 0; c < 3; ++c) {
    double channel = 0;
    for (int64_t i = 0; i < 49; ++i) channel += odd.data<float>()[c * 49 + i];
    EXPECT_NEAR(odd_avg.data<float>()[c], channel / 49, 1e-6) << c;
  }
  EXPECT_EQ(infer_op("GlobalMaxPool", {{DType::kFloat32, {kDynamicDim, 3, kDynamicDim}}})[0].shape,
            (Shape{kDynamicDim, 3, 1}));
}

TEST(Linalg, PoolInference) {
  const auto pool = [](const char* op, Shape x, Attrs attrs, int outputs = 1) {
    return infer_op(op, {{DType::kFloat32, x}}, attrs, outputs);
  };
  const Attrs k3{{"kernel_shape", std::vector<int64_t>{3, 3}},
                 {"strides", std::vector<int64_t>{2, 2}}};
  EXPECT_EQ(pool("MaxPool", {1, 64, 112, 112},
                 {{"kernel_shape", std::vector<int64_t>{3, 3}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0]
                .shape,
            (Shape{1, 64, 56, 56}));
  EXPECT_EQ(pool("AveragePool", {1, 3, kDynamicDim, 9}, k3)[0].shape,
            (Shape{1, 3, kDynamicDim, 4}));
  const auto with_indices = pool("MaxPool", {1, 3, 9, 9}, k3, 2);
  ASSERT_EQ(with_indices.size(), 2u);
  EXPECT_EQ(with_indices[1].dtype, DType::kInt64);
  EXPECT_THROW(pool("MaxPool", {1, 3, 9, 9}, {}), InputError);  // kernel_shape required
  EXPECT_THROW(pool("MaxPool", {1, 3, 9, 9},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}},
                     {"pads", std::vector<int64_t>{3, 0, 0, 0}}}),
               InputError);
  EXPECT_THROW(pool("AveragePool", {1, 3, 9, 9},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"ceil_mode", int64_t{2}}}),
               InputError);
  EXPECT_THROW(pool("AveragePool", {3, 9}, {{"kernel_shape", std::vector<int64_t>{3}}}),
               InputError);
  EXPECT_THROW(infer_op("AveragePool", {{DType::kInt64, {1, 1, 4, 4}}},
                        {{"kernel_shape", std::vector<int64_t>{2, 2}}}),
               InputError);
}

// ---- lower precision (`tandem run --precision`) ---------------------------------------------

// ||actual - expected|| / ||expected||: the error measure `tandem run --precision` reports.
double relative_error(const Tensor& actual, const Tensor& expected) {
  const std::optional<Deviation> d = deviation(actual, expected);
  EXPECT_TRUE(d.has_value());
  return d ? d->relative_error : 1.0;
}

// oneDNN has no bf16 kernels below AVX-512 (the CPUs where `tandem run --precision bf16` is
// refused): there the bf16 cases cannot run and are skipped, saying so.
#define SKIP_WITHOUT_BF16()                                                     \
  do {                                                                          \
    const std::string why = cpu::precision_refusal(MatrixPrecision::kBFloat16); \
    if (!why.empty()) GTEST_SKIP() << why;                                      \
  } while (false)

bool ran_in(const KernelHarness& kernel, const char* precision) {
  return kernel.implementation().find(std::string("[") + precision + "]") != std::string::npos;
}

// bf16 keeps 8 bits of mantissa: products over k = 64..512 terms land within 1% in the L2 sense
// (0.2-0.5% measured), and not exactly (they did compute in bf16).
TEST(LinalgPrecision, Bf16MatMulWithConstantAndComputedWeights) {
  SKIP_WITHOUT_BF16();
  const Tensor a = random_f32({2, 7, 256}, 1), w = random_f32({256, 48}, 2);
  KernelHarness packed("MatMul", {type_of(a), type_of(w)}, {Tensor(), w}, {},
                       MatrixPrecision::kBFloat16);
  EXPECT_TRUE(ran_in(packed, "bf16")) << packed.implementation();
  const Tensor expected = reference_matmul<float>(a, w);
  const double error = relative_error(packed.run({a, w}), expected);
  EXPECT_GT(error, 1e-6);
  EXPECT_LT(error, 1e-2);
  // Attention's product: both operands computed, batched.
  const Tensor q = random_f32({2, 3, 5, 64}, 3), k = random_f32({2, 3, 64, 5}, 4);
  KernelHarness computed("MatMul", {type_of(q), type_of(k)}, {}, {}, MatrixPrecision::kBFloat16);
  const double batched = relative_error(computed.run({q, k}), reference_matmul<float>(q, k));
  EXPECT_TRUE(ran_in(computed, "bf16")) << computed.implementation();
  EXPECT_GT(batched, 1e-6);
  EXPECT_LT(batched, 1e-2);
}

TEST(LinalgPrecision, Bf16GemmTransposedScaledWithBias) {
  SKIP_WITHOUT_BF16();
  const Tensor a = random_f32({96, 6}, 5), b = random_f32({40, 96}, 6), c = random_f32({40}, 7);
  for (const bool constant : {false, true}) {
    SCOPED_TRACE(constant ? "constant weights" : "computed weights");
    const Attrs attrs{
        {"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}};
    KernelHarness gemm("Gemm", {type_of(a), type_of(b), type_of(c)},
                       {Tensor(), constant ? b : Tensor()}, attrs, MatrixPrecision::kBFloat16);
    const double error =
        relative_error(gemm.run({a, b, c}), reference_gemm(a, b, c, true, true, 0.5f, 2.0f));
    EXPECT_TRUE(ran_in(gemm, "bf16")) << gemm.implementation();
    EXPECT_LT(error, 1e-2);
  }
}

TEST(LinalgPrecision, Bf16ConvWithResidualAndActivation) {
  SKIP_WITHOUT_BF16();
  const Tensor x = random_f32({2, 16, 12, 12}, 8), w = random_f32({24, 16, 3, 3}, 9),
               b = random_f32({24}, 10);
  Tensor expected = reference_conv(x, w, b, {{1, 1}, {1, 1}, {1, 1}, 1, {12, 12}});
  const Tensor residual = random_f32(expected.shape(), 11);
  for (int64_t i = 0; i < expected.numel(); ++i)
    expected.data<float>()[i] += residual.data<float>()[i];
  expected = apply_activation(expected, "Relu");
  const Attrs attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"activation", std::string("Relu")}};
  KernelHarness conv("Conv", {type_of(x), type_of(w), type_of(b), type_of(residual)},
                     {Tensor(), w, b}, attrs, MatrixPrecision::kBFloat16);
  const double error = relative_error(conv.run({x, w, b, residual}), expected);
  EXPECT_TRUE(ran_in(conv, "bf16")) << conv.implementation();
  EXPECT_GT(error, 1e-6);
  EXPECT_LT(error, 1e-2);
}

// Integers that int8 holds exactly: the activation spans [-100, 155] (scale 1, zero point 100)
// and every weight column reaches the quantized range's edge (scale 1). The product, its zero
// point taken out, must then equal float32's to the last bit: the algebra of scales, zero point
// and column sums is right, not merely close.
TEST(LinalgPrecision, Int8MatMulIsExactOnIntegersItCanHold) {
  const int levels = cpu::cpu_has_int8_dot_product() ? 127 : 63;
  std::mt19937 rng(12);
  const int64_t k = 64, n = 40;
  Tensor a = Tensor::allocate(DType::kFloat32, {3, 5, k});
  for (int64_t i = 0; i < a.numel(); ++i)
    a.data<float>()[i] = static_cast<float>(static_cast<int>(rng() % 256) - 100);
  a.data<float>()[0] = -100;
  a.data<float>()[1] = 155;
  Tensor w = Tensor::allocate(DType::kFloat32, {k, n});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] = static_cast<float>(static_cast<int>(rng() % (2 * levels + 1)) - levels);
  for (int64_t j = 0; j < n; ++j) w.data<float>()[(j % k) * n + j] = j % 2 ? levels : -levels;
  KernelHarness kernel("MatMul", {type_of(a), type_of(w)}, {Tensor(), w}, {},
                       MatrixPrecision::kInt8);
  EXPECT_TRUE(ran_in(kernel, "int8")) << kernel.implementation();
  expect_equal(kernel.run({a, w}), reference_matmul<float>(a, w));
}

// Random data: 8-bit activations and weights keep a product over k = 256 within a few percent.
TEST(LinalgPrecision, Int8GemmTransposedScaledWithBiasAndActivation) {
  const Tensor a = random_f32({33, 256}, 13), b = random_f32({48, 256}, 14),
               c = random_f32({1, 48}, 15);
  const Attrs attrs{
      {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}, {"activation", std::string("Relu")}};
  KernelHarness gemm("Gemm", {type_of(a), type_of(b), type_of(c)}, {Tensor(), b, c}, attrs,
                     MatrixPrecision::kInt8);
  EXPECT_TRUE(ran_in(gemm, "int8")) << gemm.implementation();
  const Tensor expected =
      apply_activation(reference_gemm(a, b, c, false, true, 0.5f, 2.0f), "Relu");
  const double error = relative_error(gemm.run({a, b, c}), expected);
  EXPECT_GT(error, 1e-6);
  EXPECT_LT(error, 3e-2);
  // Rows change between runs (a dynamic batch): the primitive is rebuilt, the weights kept.
  const Tensor fewer = random_f32({5, 256}, 16);
  EXPECT_LT(relative_error(
                gemm.run({fewer, b, c}),
                apply_activation(reference_gemm(fewer, b, c, false, true, 0.5f, 2.0f), "Relu")),
            3e-2);
  // An all-zero activation leaves the bias alone.
  const Tensor zeros = Tensor::zeros(DType::kFloat32, {2, 256});
  expect_close(gemm.run({zeros, b, c}),
               apply_activation(reference_gemm(zeros, b, c, false, true, 0.5f, 2.0f), "Relu"), 1e-6,
               1e-6);
}

// What does not qualify stays float32, exactly as without --precision: weights computed at run
// time (attention), a transposed A, a C that is a whole matrix.
TEST(LinalgPrecision, Int8LeavesWhatDoesNotQualifyInFloat32) {
  const Tensor q = random_f32({2, 5, 64}, 17), k = random_f32({2, 64, 5}, 18);
  KernelHarness attention("MatMul", {type_of(q), type_of(k)}, {}, {}, MatrixPrecision::kInt8);
  expect_close(attention.run({q, k}), reference_matmul<float>(q, k), 1e-4, 1e-5);
  EXPECT_FALSE(ran_in(attention, "int8")) << attention.implementation();
  const Tensor a = random_f32({64, 6}, 19), b = random_f32({64, 8}, 20), c = random_f32({6, 8}, 21);
  KernelHarness transposed("Gemm", {type_of(a), type_of(b)}, {Tensor(), b},
                           {{"transA", int64_t{1}}}, MatrixPrecision::kInt8);
  expect_close(transposed.run({a, b}), reference_gemm(a, b, Tensor(), true, false, 1, 1), 1e-4,
               1e-5);
  EXPECT_FALSE(ran_in(transposed, "int8")) << transposed.implementation();
  const Tensor a2 = random_f32({6, 64}, 22);
  KernelHarness matrix_c("Gemm", {type_of(a2), type_of(b), type_of(c)}, {Tensor(), b, c}, {},
                         MatrixPrecision::kInt8);
  expect_close(matrix_c.run({a2, b, c}), reference_gemm(a2, b, c, false, false, 1, 1), 1e-4, 1e-5);
  EXPECT_FALSE(ran_in(matrix_c, "int8")) << matrix_c.implementation();
}

TEST(LinalgPrecision, Int8RefusesAnInfiniteActivationByName) {
  const Tensor w = random_f32({16, 4}, 23);
  Tensor a = random_f32({2, 16}, 24);
  a.data<float>()[3] = std::numeric_limits<float>::infinity();
  KernelHarness kernel("MatMul", {type_of(a), type_of(w)}, {Tensor(), w}, {},
                       MatrixPrecision::kInt8);
  try {
    kernel.run({a, w});
    FAIL() << "an infinite activation was quantized";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("infinity"), std::string::npos) << e.what();
  }
}

TEST(LinalgPrecision, DeviationMeasuresErrorAndTopOne) {
  const Tensor reference = f32({2, 3}, {1, 3, 2, 0, 0, 4});
  const Tensor close = f32({2, 3}, {1, 2.9f, 3.1f, 0, 0, 4});
  const std::optional<Deviation> d = deviation(close, reference);
  ASSERT_TRUE(d.has_value());
  EXPECT_NEAR(d->max_abs_error, 1.1, 1e-6);
  EXPECT_NEAR(d->relative_error, std::sqrt(0.01 + 1.21) / std::sqrt(30.0), 1e-6);
  EXPECT_EQ(d->rows, 2);
  EXPECT_EQ(d->same_argmax, 1);  // row 0 now picks class 2
  EXPECT_FALSE(deviation(close, f32({6}, {1, 3, 2, 0, 0, 4})).has_value());  // another shape
  // Integers are measured as numbers; their last axis is not read as classes.
  const std::optional<Deviation> labels = deviation(i64({3}, {4, 7, 1}), i64({3}, {4, 5, 1}));
  ASSERT_TRUE(labels.has_value());
  EXPECT_EQ(labels->max_abs_error, 2);
  EXPECT_EQ(labels->rows, 0);
  EXPECT_FALSE(deviation(boolean({1}, {1}), boolean({1}, {1})).has_value());
}

}  // namespace
}  // namespace tandem::testing
