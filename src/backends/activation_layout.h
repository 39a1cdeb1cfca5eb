#pragma once

namespace tandem {

// The memory layout of a node's activations as a backend's kernels read and write them, where
// the backend chooses one (the CPU keeps tensors between convolutions channels-last): the cost
// of a kernel can depend on it (a reorder in or out). False: the ONNX layout (NCHW).
struct ActivationLayout {
  bool input_channels_last = false;
  bool output_channels_last = false;
  // Whether the kernel converts its input (its output) between the tensor's layout and the one
  // it computes in: a reorder of the whole activation, around the kernel's own work.
  bool reorders_input = false;
  bool reorders_output = false;
};

}  // namespace tandem
