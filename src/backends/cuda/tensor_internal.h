#pragma once
// Private to the CUDA tensor and data-dependent families: their sub-tables and the host-side
// helpers their kernels share.
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernel_common.h"

namespace tandem::cuda {

std::vector<CudaOp> tensor_index_ops();   // tensor_index.cpp: Gather*, Scatter*, OneHot
std::vector<CudaOp> tensor_resize_ops();  // tensor_resize.cpp: Resize

// Why a kernel that moves elements of any CUDA dtype cannot take `node`: a dtype without a
// CUDA element type, or a rank above kMaxRank; "" when it can.
std::string move_refusal(const Node& node, const Graph& graph);

// Bytes of one element (1, 2, 4 or 8 for the dtypes the CUDA kernels take).
int elem_bytes(DType dtype);

// Whether input i of a run is present.
inline bool has_input(std::span<const Tensor> inputs, size_t i) {
  return i < inputs.size() && inputs[i].defined();
}

// A device tensor's contents in a new host tensor; synchronises with the stream.
Tensor read_to_host(CudaContext& context, const Tensor& device);

// An input the kernel needs on the host (axes, pads, starts, scales...): its value when the
// input is a constant, else read back from the device tensor of the run.
class HostInput {
 public:
  HostInput() = default;
  HostInput(const KernelSpec& spec, size_t i);
  Tensor get(CudaContext& context, const Tensor& device) const;
  std::vector<int64_t> ints(CudaContext& context, const Tensor& device) const {
    return get(context, device).to_int64s();
  }

 private:
  Tensor constant_;
};

}  // namespace tandem::cuda
