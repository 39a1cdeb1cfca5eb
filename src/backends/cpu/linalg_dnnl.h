#pragma once
#include <dnnl.hpp>
#include <memory>
#include <unordered_map>

#include "backends/device.h"
#include "ir/error.h"

namespace tandem::cpu {

// The process's oneDNN CPU engine, and a stream for the calling thread.
const dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();

// oneDNN's default ("library") scratchpad is a buffer of the thread that created the primitive:
// run from another thread -- a plan's device worker runs kernels compiled on the main thread --
// a primitive writes into the running thread's buffer, absent or sized for other primitives
// (a SIGSEGV on ResNet-18 at 224x224). So every primitive here is built with a user scratchpad
// and run through execute_primitive, which passes one from the running thread.
dnnl::primitive_attr with_user_scratchpad(dnnl::primitive_attr attr = dnnl::primitive_attr());
// Runs a primitive built with with_user_scratchpad on the calling thread's stream.
void execute_primitive(const dnnl::primitive& primitive,
                       std::unordered_map<int, dnnl::memory> args);
// A reorder between two memories, built with a user scratchpad, and its run.
dnnl::reorder make_reorder(const dnnl::memory& from, const dnnl::memory& to);
void execute_reorder(const dnnl::reorder& reorder, const dnnl::memory& from,
                     const dnnl::memory& to);

// A row-major memory descriptor of these dims (float32 unless told).
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims,
                              dnnl::memory::data_type type = dnnl::memory::data_type::f32);
dnnl::memory::dims to_dims(const Shape& shape);

// `data` laid out as `wanted`: the user's memory itself when the layouts agree, else a copy
// reordered into `wanted`.
dnnl::memory reorder_to(const dnnl::memory::desc& wanted, const dnnl::memory::desc& user,
                        void* data);

// A 64-byte aligned buffer of at least `bytes`, owned by the calling thread and reused by the
// next call: for the blocked copies of activations that live only during one kernel run.
void* thread_scratch(size_t bytes);

// The activation a graph-fusion pass attached to a Conv, Gemm or MatMul node (attributes
// `activation`, `activation_alpha`, `activation_beta`), applied after every other term.
class FusedActivation {
 public:
  explicit FusedActivation(const Node& node);
  bool present() const { return kind_ != Kind::kNone; }
  void append_to(dnnl::post_ops& ops) const;
  // The same function, for the paths that do not run through oneDNN.
  double apply(double x) const;
  void apply(float* data, int64_t count) const;

 private:
  enum class Kind {
    kNone,
    kRelu,
    kLeakyRelu,
    kClip,
    kHardSwish,
    kHardSigmoid,
    kSigmoid,
    kTanh,
    kGelu
  };
  Kind kind_ = Kind::kNone;
  float alpha_ = 0;
  float beta_ = 0;
};

// A 2-D window (1-D ones have height 1) for the depthwise loop.
struct Window2d {
  int64_t in_h, in_w, out_h, out_w, kernel_h, kernel_w;
  int64_t stride_h, stride_w, dilation_h, dilation_w, pad_h, pad_w;  // pads at the start
};

struct DepthwiseArgs {
  const float* src;       // [batch, channels, in_h, in_w]
  const float* weights;   // [channels, 1, kernel_h, kernel_w]
  const float* bias;      // [channels] or null
  const float* residual;  // like dst, or null
  float* dst;             // [batch, channels, out_h, out_w]
  int64_t batch, channels;
  Window2d window;
  const FusedActivation* activation;
};

// Depthwise convolution (group = channels, one output per channel) on NCHW.
bool depthwise_loop_supports(const Window2d& window);
void depthwise_conv_nchw(const DepthwiseArgs& args);

// The mark a MatMul, Gemm or Conv kernel's implementation() carries for what it computed in:
// bf16, or float32 (also where int8 was asked for and the product did not qualify).
std::string computed_mark(bool bf16);

// Whether int8 products accumulate without saturating (VNNI); without it weights keep 7 bits.
bool cpu_has_int8_dot_product();

// MatMul or Gemm in dynamic int8 (`--precision int8`): constant 2-D weights quantized once per
// output column, the activation per run. nullptr where the product does not qualify
// (non-constant weights, a transposed A, a bias that is not a row vector): it stays float32.
std::unique_ptr<Kernel> make_dynamic_int8_matmul(const KernelSpec& spec);

std::unique_ptr<Kernel> make_matmul_kernel(const KernelSpec& spec);
std::unique_ptr<Kernel> make_gemm_kernel(const KernelSpec& spec);
std::unique_ptr<Kernel> make_conv_kernel(const KernelSpec& spec);
std::unique_ptr<Kernel> make_conv_transpose_kernel(const KernelSpec& spec);
std::unique_ptr<Kernel> make_pool_kernel(const KernelSpec& spec);  // MaxPool, AveragePool
void global_max_pool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs);
void global_average_pool(const Node& node, std::span<const Tensor> inputs,
                         std::span<Tensor> outputs);

}  // namespace tandem::cpu
