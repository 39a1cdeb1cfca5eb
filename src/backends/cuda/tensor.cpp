// CUDA kernels of the tensor family's layout and creation ops: Transpose, Slice, Expand, Tile,
// DepthToSpace, SpaceToDepth (one strided gather), Concat, Split, Pad, Trilu, Shape, Size,
// Constant, ConstantOfShape, Range, EyeLike. Output shapes come from shape inference; these
// kernels only compute where each element comes from.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "backends/cuda/tensor_internal.h"
#include "backends/cuda/tensor_launch.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/ops/tensor_layout.h"

namespace tandem::cuda {

std::string move_refusal(const Node& node, const Graph& graph) {
  std::string reason = dtype_refusal(node, graph, kNumericTypes);
  return reason.empty() ? rank_refusal(node, graph) : reason;
}

int elem_bytes(DType dtype) { return static_cast<int>(dtype_size(dtype)); }

Tensor read_to_host(CudaContext& context, const Tensor& device) {
  Tensor host = Tensor::allocate(device.dtype(), device.shape());
  if (host.nbytes() > 0) context.read_back(host.raw(), device.raw(), host.nbytes());
  return host;
}

HostInput::HostInput(const KernelSpec& spec, size_t i) {
  if (i < spec.constant_inputs.size() && spec.constant_inputs[i]) {
    constant_ = *spec.constant_inputs[i];
  }
}

Tensor HostInput::get(CudaContext& context, const Tensor& device) const {
  return constant_.defined() ? constant_ : read_to_host(context, device);
}

namespace {

Dims dims_of(const StridedLayout& layout) {
  Dims dims;
  dims.rank = static_cast<int>(layout.shape.size());
  if (dims.rank > kMaxRank) throw InputError("a layout of rank above the CUDA kernels' 8");
  for (int d = 0; d < dims.rank; ++d) {
    dims.size[d] = layout.shape[static_cast<size_t>(d)];
    dims.stride[d] = layout.strides[static_cast<size_t>(d)];
  }
  return dims;
}

void gather_layout(CudaContext& context, const Tensor& input, Tensor& output,
                   const StridedLayout& layout) {
  launch_strided_gather(input.raw(), output.raw(), dims_of(layout), layout.offset,
                        elem_bytes(input.dtype()), context.stream());
}

// Transpose, Expand, DepthToSpace and SpaceToDepth: a layout from attributes and shapes.
using LayoutFn = StridedLayout (*)(const Node& node, const Tensor& input, const Tensor& output);

class StridedKernel final : public Kernel {
 public:
  StridedKernel(const KernelSpec& spec, CudaContext& context, LayoutFn layout)
      : node_(spec.node), context_(context), layout_(layout) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    gather_layout(context_, inputs[0], outputs[0], layout_(node_, inputs[0], outputs[0]));
  }

 private:
  const Node& node_;
  CudaContext& context_;
  LayoutFn layout_;
};

StridedLayout transpose(const Node& node, const Tensor& input, const Tensor&) {
  std::vector<int64_t> perm(static_cast<size_t>(input.rank()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = node.attr_ints("perm", perm);
  return transpose_layout(input.shape(), perm);
}

StridedLayout expand(const Node&, const Tensor& input, const Tensor& output) {
  return expand_layout(input.shape(), output.shape());
}

StridedLayout depth_to_space(const Node& node, const Tensor& input, const Tensor&) {
  const bool column_row_depth = node.attr_string("mode", "DCR") == "CRD";
  return depth_to_space_layout(input.shape(), node.attr_int("blocksize", 1), column_row_depth);
}

StridedLayout space_to_depth(const Node& node, const Tensor& input, const Tensor&) {
  return space_to_depth_layout(input.shape(), node.attr_int("blocksize", 1));
}

template <LayoutFn layout>
std::unique_ptr<Kernel> make_strided(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<StridedKernel>(spec, context, layout);
}

// starts, ends, axes and steps: constants, or read back at run time.
class SliceKernel final : public Kernel {
 public:
  SliceKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context), starts_(spec, 1), ends_(spec, 2), axes_(spec, 3), steps_(spec, 4) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    const std::vector<int64_t> starts = starts_.ints(context_, inputs[1]);
    const std::vector<int64_t> ends = ends_.ints(context_, inputs[2]);
    std::vector<int64_t> axes(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
    if (has_input(inputs, 3)) axes = axes_.ints(context_, inputs[3]);
    std::vector<int64_t> steps(starts.size(), 1);
    if (has_input(inputs, 4)) steps = steps_.ints(context_, inputs[4]);
    std::vector<SliceRange> ranges;
    for (int64_t dim : data.shape()) ranges.push_back({0, 1, dim});
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t axis = axes[i] < 0 ? axes[i] + data.rank() : axes[i];
      ranges[static_cast<size_t>(axis)] = slice_range(starts[i], ends[i], steps[i], data.dim(axis));
    }
    gather_layout(context_, data, outputs[0], slice_layout(data.shape(), ranges));
  }

 private:
  CudaContext& context_;
  HostInput starts_, ends_, axes_, steps_;
};

class TileKernel final : public Kernel {
 public:
  TileKernel(const KernelSpec&, CudaContext& context) : context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    launch_tile(inputs[0].raw(), outputs[0].raw(), contiguous(outputs[0].shape()),
                contiguous(inputs[0].shape()), elem_bytes(inputs[0].dtype()), context_.stream());
  }

 private:
  CudaContext& context_;
};

// Concat and Split move, for each outer index, one contiguous run per input (or output).
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node), context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    Tensor& out = outputs[0];
    const int64_t axis = normalize_axis(node_.attr_int("axis", 0), out.rank());
    const int64_t outer = extent_of(out.shape(), 0, static_cast<size_t>(axis));
    if (outer == 0 || out.numel() == 0) return;
    const auto out_row = static_cast<int64_t>(out.nbytes()) / outer;
    int64_t offset = 0;
    for (const Tensor& input : inputs) {
      const auto run = static_cast<int64_t>(input.nbytes()) / outer;
      launch_copy_rows(input.raw(), run, static_cast<char*>(out.raw()) + offset, out_row, run,
                       outer, context_.stream());
      offset += run;
    }
  }

 private:
  const Node& node_;
  CudaContext& context_;
};

class SplitKernel final : public Kernel {
 public:
  SplitKernel(const KernelSpec& spec, CudaContext& context) : node_(spec.node), context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& input = inputs[0];
    const int64_t axis = normalize_axis(node_.attr_int("axis", 0), input.rank());
    const int64_t outer = extent_of(input.shape(), 0, static_cast<size_t>(axis));
    if (outer == 0 || input.numel() == 0) return;
    const auto in_row = static_cast<int64_t>(input.nbytes()) / outer;
    int64_t offset = 0;
    for (Tensor& out : outputs) {
      const auto run = static_cast<int64_t>(out.nbytes()) / outer;
      launch_copy_rows(static_cast<const char*>(input.raw()) + offset, in_row, out.raw(), run, run,
                       outer, context_.stream());
      offset += run;
    }
  }

 private:
  const Node& node_;
  CudaContext& context_;
};

// pads and axes: constants, or read back at run time; constant_value is read by the kernel.
class PadKernel final : public Kernel {
 public:
  PadKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        mode_(pad_mode<PadMode>(spec.node)),
        pads_(spec, 1),
        axes_(spec, 3) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& input = inputs[0];
    Tensor& out = outputs[0];
    const std::vector<int64_t> axes =
        has_input(inputs, 3) ? axes_.ints(context_, inputs[3]) : std::vector<int64_t>{};
    const std::vector<int64_t> amounts =
        pads_per_axis(input.shape().size(), pads_.ints(context_, inputs[1]), axes);
    PadLayout layout;
    layout.rank = static_cast<int>(input.rank());
    const std::vector<int64_t> strides = contiguous_strides(input.shape());
    for (int d = 0; d < layout.rank; ++d) {
      const int64_t dim = input.dim(d);
      const int64_t out_dim = out.dim(d);
      const int64_t before = amounts[static_cast<size_t>(d)];
      // Negative pads crop: the input range [low, high) remains.
      layout.size[d] = out_dim;
      layout.stride[d] = strides[static_cast<size_t>(d)];
      layout.before[d] = before;
      layout.low[d] = std::max<int64_t>(0, -before);
      layout.high[d] = std::min(dim, out_dim - before);
      if (mode_ != PadMode::kConstant && layout.high[d] <= layout.low[d] && out_dim > 0) {
        throw InputError(node_.label() + ": cannot pad an axis that cropping emptied");
      }
    }
    const void* constant = has_input(inputs, 2) ? inputs[2].raw() : nullptr;
    launch_pad(input.raw(), out.raw(), layout, mode_, constant, elem_bytes(input.dtype()),
               context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
  PadMode mode_;
  HostInput pads_, axes_;
};

class TriluKernel final : public Kernel {
 public:
  TriluKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context), upper_(spec.node.attr_int("upper", 1) != 0) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& input = inputs[0];
    const int64_t rows = input.dim(input.rank() - 2);
    const int64_t cols = input.dim(input.rank() - 1);
    const int64_t matrices = rows * cols == 0 ? 0 : input.numel() / (rows * cols);
    const auto* k = has_input(inputs, 1) ? inputs[1].data<int64_t>() : nullptr;
    launch_trilu(input.raw(), outputs[0].raw(), matrices, rows, cols, k, upper_,
                 elem_bytes(input.dtype()), context_.stream());
  }

 private:
  CudaContext& context_;
  bool upper_;
};

// Shape and Size: numbers the host knows from the input's shape, passed as kernel arguments.
class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(const KernelSpec& spec, CudaContext& context, bool size)
      : node_(spec.node), context_(context), size_(size) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    Int64List list;
    if (size_) {
      list.count = 1;
      list.values[0] = inputs[0].numel();
    } else {
      // The output length was fixed by shape inference from start/end; only the offset is needed.
      const int64_t rank = inputs[0].rank();
      int64_t start = node_.attr_int("start", 0);
      if (start < 0) start += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      list.count = static_cast<int>(outputs[0].numel());
      for (int i = 0; i < list.count; ++i) list.values[i] = inputs[0].dim(start + i);
    }
    launch_write_int64s(outputs[0].data<int64_t>(), list, context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
  bool size_;
};

// The value attribute, uploaded once; each run copies it into the output.
class ConstantKernel final : public Kernel {
 public:
  ConstantKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context), value_(context.upload(constant_node_value(spec.node))) {}
  void run(std::span<const Tensor>, std::span<Tensor> outputs) override {
    copy_device(context_, outputs[0].raw(), value_.raw(), outputs[0].nbytes());
  }

 private:
  CudaContext& context_;
  Tensor value_;
};

class ConstantOfShapeKernel final : public Kernel {
 public:
  ConstantOfShapeKernel(const KernelSpec& spec, CudaContext& context) : context_(context) {
    // float32 zero when the value attribute is absent.
    if (const Tensor* value = spec.node.attr_tensor("value")) {
      std::memcpy(&bits_, value->raw(), dtype_size(value->dtype()));
    }
  }
  void run(std::span<const Tensor>, std::span<Tensor> outputs) override {
    Tensor& out = outputs[0];
    launch_fill(out.raw(), out.numel(), bits_, elem_bytes(out.dtype()), context_.stream());
  }

 private:
  CudaContext& context_;
  uint64_t bits_ = 0;
};

class RangeKernel final : public Kernel {
 public:
  RangeKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.output_types[0].dtype),
        elem_(require_elem(dtype_, spec.node)) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    // Float bounds are not read by the runtime's shape inference: the output then arrives
    // unallocated, and its length is computed here as the schema does.
    if (!outputs[0].defined()) outputs[0] = context_.allocate(dtype_, {length(inputs)});
    launch_range(inputs[0].raw(), inputs[2].raw(), outputs[0].raw(), outputs[0].numel(), elem_,
                 context_.stream());
  }

 private:
  int64_t length(std::span<const Tensor> inputs) const {
    const double start = read_to_host(context_, inputs[0]).to_doubles()[0];
    const double limit = read_to_host(context_, inputs[1]).to_doubles()[0];
    const double delta = read_to_host(context_, inputs[2]).to_doubles()[0];
    if (delta == 0) throw InputError(node_.label() + ": delta must not be zero");
    const double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxElements))) {
      throw InputError(node_.label() + ": the range has too many elements");
    }
    return std::max<int64_t>(static_cast<int64_t>(count), 0);
  }

  const Node& node_;
  CudaContext& context_;
  DType dtype_;
  Elem elem_;
};

// The bits of 1 in `dtype`.
uint64_t one_bits(DType dtype) {
  uint64_t bits = 0;
  auto store = [&bits](auto value) { std::memcpy(&bits, &value, sizeof(value)); };
  switch (dtype) {
    case DType::kFloat32: store(1.0f); break;
    case DType::kFloat64: store(1.0); break;
    case DType::kFloat16: store(float_to_half(1.0f)); break;
    case DType::kBFloat16: store(float_to_bfloat16(1.0f)); break;
    default: bits = 1; break;
  }
  return bits;
}

class EyeLikeKernel final : public Kernel {
 public:
  EyeLikeKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context), k_(spec.node.attr_int("k", 0)) {}
  void run(std::span<const Tensor>, std::span<Tensor> outputs) override {
    Tensor& out = outputs[0];
    launch_eye_like(out.raw(), out.dim(0), out.dim(1), k_, one_bits(out.dtype()),
                    elem_bytes(out.dtype()), context_.stream());
  }

 private:
  CudaContext& context_;
  int64_t k_;
};

std::unique_ptr<Kernel> make_shape(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<ShapeKernel>(spec, context, false);
}

std::unique_ptr<Kernel> make_size(const KernelSpec& spec, CudaContext& context) {
  return std::make_unique<ShapeKernel>(spec, context, true);
}

// Shape and Size read only their input's shape, so its dtype does not matter.
std::string shape_refusal(const Node& node, const Graph& graph) {
  return rank_refusal(node, graph);
}

std::string range_refusal(const Node& node, const Graph& graph) {
  return dtype_refusal(node, graph,
                       {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64});
}

}  // namespace

std::vector<CudaOp> tensor_ops() {
  std::vector<CudaOp> ops = {
      {"Transpose", move_refusal, make_strided<transpose>},
      {"Expand", move_refusal, make_strided<expand>},
      {"DepthToSpace", move_refusal, make_strided<depth_to_space>},
      {"SpaceToDepth", move_refusal, make_strided<space_to_depth>},
      {"Slice", move_refusal, make_kernel<SliceKernel>},
      {"Tile", move_refusal, make_kernel<TileKernel>},
      {"Concat", move_refusal, make_kernel<ConcatKernel>},
      {"Split", move_refusal, make_kernel<SplitKernel>},
      {"Pad", move_refusal, make_kernel<PadKernel>},
      {"Trilu", move_refusal, make_kernel<TriluKernel>},
      {"Shape", shape_refusal, make_shape},
      {"Size", shape_refusal, make_size},
      {"Constant", move_refusal, make_kernel<ConstantKernel>},
      {"ConstantOfShape", move_refusal, make_kernel<ConstantOfShapeKernel>},
      {"Range", range_refusal, make_kernel<RangeKernel>},
      {"EyeLike", move_refusal, make_kernel<EyeLikeKernel>},
  };
  for (auto family : {tensor_index_ops, tensor_resize_ops}) {
    for (const CudaOp& op : family()) ops.push_back(op);
  }
  return ops;
}

}  // namespace tandem::cuda
