#pragma once
// Launchers of the CUDA elementwise kernels (elementwise.cu). Pointers are device memory;
// broadcast operands come as strided views (kernel_common.h's broadcast_to) whose sizes are
// the output's, and outputs are dense. Nothing is launched for an empty output.
#include <cuda_runtime.h>

#include "backends/cuda/launch_common.h"

namespace tandem::cuda {

enum class BinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kTruncMod,  // the remainder takes the dividend's sign (C's % and fmod)
  kFloorMod,  // the remainder takes the divisor's sign (Python's %); integers only
  kMax,       // Max and Min propagate NaN
  kMin,
  kPRelu,  // a < 0 ? b * a : a
  // Comparisons and logic write bool.
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
};

// out = op(a, b) with both operands of type `elem`.
void launch_binary(BinaryOp op, Elem elem, const void* a, const Dims& a_view, const void* b,
                   const Dims& b_view, void* out, cudaStream_t stream);

// out = base ^ exponent; out has the base's type. Float bases with float32 exponents use powf,
// every other pair pow in double (integer results truncated as Cast does).
void launch_pow(Elem base_elem, Elem exponent_elem, const void* base, const Dims& base_view,
                const void* exponent, const Dims& exponent_view, void* out, cudaStream_t stream);

// out = condition ? x : y over elements of `element_bytes` bytes (1, 2, 4 or 8).
void launch_where(int element_bytes, const void* condition, const Dims& condition_view,
                  const void* x, const Dims& x_view, const void* y, const Dims& y_view, void* out,
                  cudaStream_t stream);

enum class UnaryOp : int {
  kNeg,
  kAbs,
  kSign,
  kRelu,
  kNot,
  kIsInf,  // bool output; UnaryParams::detect_negative/detect_positive
  kIsNaN,  // bool output
  // Floating-point types only from here.
  kReciprocal,
  kSqrt,
  kExp,
  kLog,
  kSin,
  kCos,
  kErf,
  kFloor,
  kCeil,
  kRound,  // halves to even
  kSigmoid,
  kTanh,
  kSoftplus,
  kSoftsign,
  kLeakyRelu,    // alpha
  kElu,          // alpha
  kCelu,         // alpha
  kSelu,         // alpha, gamma
  kHardSigmoid,  // alpha, beta
  kHardSwish,
  kGelu,      // erf form
  kGeluTanh,  // approximate="tanh"
  kSquare,
  kCube,
  kDivide,  // x / alpha
};

struct UnaryParams {
  float alpha = 0;
  float beta = 0;
  float gamma = 0;
  bool detect_negative = true;
  bool detect_positive = true;
};

// out[i] = op(in[i]) over `count` dense elements of type `elem`.
void launch_unary(UnaryOp op, Elem elem, const void* in, void* out, int64_t count,
                  const UnaryParams& params, cudaStream_t stream);

// out[i] = in[i] < low ? low : (in[i] > high ? high : in[i]). `low` and `high` point to one
// element of type `elem` in HOST memory, or are null for the type's lowest and highest values.
void launch_clip(Elem elem, const void* in, void* out, int64_t count, const void* low,
                 const void* high, cudaStream_t stream);

// out[i] = in[i] converted by ONNX Cast rules (to must differ from from): float to integer
// truncates (NaN gives 0, saturating at int64's range, then wrapping to narrower types), to bool
// is "not zero", 16-bit floats round to nearest even through float32.
void launch_cast(Elem from, Elem to, const void* in, void* out, int64_t count, cudaStream_t stream);

}  // namespace tandem::cuda
