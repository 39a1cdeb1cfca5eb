// CPU kernels of Cast, CastLike and (inference-mode) Dropout.
#include <cstring>

#include "backends/cpu/elementwise_internal.h"
#include "ir/error.h"
#include "ir/ops/elementwise_scalar.h"

namespace tandem::cpu {
namespace {

namespace ew = elementwise;

// Converts every element of `in` to the dtype of `out` (same shape) by ONNX Cast rules.
void cast_kernel(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const Tensor& out = outputs[0];
  if (in.dtype() == out.dtype()) {
    std::memcpy(out.raw(), in.raw(), out.nbytes());
    return;
  }
  ew::dispatch_any_dtype(in.dtype(), [&]<typename From>() {
    ew::dispatch_any_dtype(out.dtype(), [&]<typename To>() {
      map_unary<From, To>(in, out, [](From x) { return ew::convert<To>(x); });
    });
  });
}

// Output 0 is the input; the optional mask (output 1) keeps every element.
void dropout_kernel(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  if (inputs.size() > 2 && inputs[2].defined() && inputs[2].numel() == 1 &&
      inputs[2].data<bool>()[0]) {
    throw InputError(node.label() +
                     ": training mode is not supported; export the model for inference");
  }
  std::memcpy(outputs[0].raw(), inputs[0].raw(), outputs[0].nbytes());
  if (outputs.size() > 1 && outputs[1].defined()) {
    std::memset(outputs[1].raw(), 1, outputs[1].nbytes());
  }
}

}  // namespace

void register_elementwise_cast_kernels(KernelRegistry& registry) {
  registry.add("Cast", &cast_kernel, Elements::kAny);
  registry.add("CastLike", &cast_kernel, Elements::kAny);
  registry.add("Dropout", &dropout_kernel, Elements::kAny);
}

}  // namespace tandem::cpu
