// CUDA kernels of the indexing ops: Gather, GatherElements, GatherND, ScatterND,
// ScatterElements (reduction none), OneHot, EmbeddingBag. The CPU throws on an index out of range;
// here the indices stay on the device, so such an index gathers 0 and a scatter skips it (see
// tensor_index_launch.h).
#include "backends/cuda/tensor_index_launch.h"
#include "backends/cuda/tensor_internal.h"
#include "ir/error.h"

namespace tandem::cuda {
namespace {

Elem index_elem(const Tensor& indices) {
  return indices.dtype() == DType::kInt32 ? Elem::kI32 : Elem::kI64;
}

class GatherKernel final : public Kernel {
 public:
  GatherKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node), context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    const int64_t axis = normalize_axis(node_.attr_int("axis", 0), data.rank());
    const auto a = static_cast<size_t>(axis);
    launch_gather(data.raw(), inputs[1].raw(), index_elem(inputs[1]), outputs[0].raw(),
                  extent_of(data.shape(), 0, a), data.dim(axis),
                  extent_of(data.shape(), a + 1, data.shape().size()), inputs[1].numel(),
                  elem_bytes(data.dtype()), context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
};

ElementsLayout elements_layout(const Node& node, const Tensor& data, const Tensor& indices) {
  ElementsLayout layout;
  layout.rank = static_cast<int>(data.rank());
  layout.axis = static_cast<int>(normalize_axis(node.attr_int("axis", 0), data.rank()));
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  for (int d = 0; d < layout.rank; ++d) {
    layout.size[d] = indices.dim(d);
    layout.data_size[d] = data.dim(d);
    layout.data_stride[d] = strides[static_cast<size_t>(d)];
  }
  return layout;
}

class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node), context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    launch_gather_elements(data.raw(), inputs[1].raw(), index_elem(inputs[1]), outputs[0].raw(),
                           elements_layout(node_, data, inputs[1]), elem_bytes(data.dtype()),
                           context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
};

class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node), context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    Tensor& out = outputs[0];
    copy_device(context_, out.raw(), data.raw(), data.nbytes());
    launch_scatter_elements(out.raw(), inputs[1].raw(), index_elem(inputs[1]), inputs[2].raw(),
                            elements_layout(node_, data, inputs[1]), elem_bytes(data.dtype()),
                            context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
};

// The index tuples of GatherND / ScatterND: the last dim of indices holds `depth` coordinates
// into the data dims after `batch_dims`.
TupleLayout tuple_layout(const Shape& data, const Shape& indices, int64_t batch_dims) {
  TupleLayout layout;
  const int64_t depth = indices.back();
  const auto first = static_cast<size_t>(batch_dims);
  const std::vector<int64_t> strides = contiguous_strides(data);
  layout.depth = static_cast<int>(depth);
  for (int j = 0; j < layout.depth; ++j) {
    layout.dim[j] = data[first + static_cast<size_t>(j)];
    layout.stride[j] = strides[first + static_cast<size_t>(j)];
  }
  layout.tuples = depth == 0 ? 0 : extent_of(indices, 0, indices.size()) / depth;
  const int64_t batches = extent_of(indices, 0, first);
  layout.per_batch = batches == 0 ? 1 : std::max<int64_t>(layout.tuples / batches, 1);
  layout.batch_stride = batch_dims == 0 ? 0 : strides[first - 1];
  layout.slice = extent_of(data, first + static_cast<size_t>(depth), data.size());
  return layout;
}

class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context), batch_dims_(spec.node.attr_int("batch_dims", 0)) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    launch_gather_nd(data.raw(), inputs[1].data<int64_t>(), outputs[0].raw(),
                     tuple_layout(data.shape(), inputs[1].shape(), batch_dims_),
                     elem_bytes(data.dtype()), context_.stream());
  }

 private:
  CudaContext& context_;
  int64_t batch_dims_;
};

class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(const KernelSpec&, CudaContext& context) : context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& data = inputs[0];
    Tensor& out = outputs[0];
    copy_device(context_, out.raw(), data.raw(), data.nbytes());
    launch_scatter_nd(out.raw(), inputs[1].data<int64_t>(), inputs[2].raw(),
                      tuple_layout(data.shape(), inputs[1].shape(), 0), elem_bytes(data.dtype()),
                      context_.stream());
  }

 private:
  CudaContext& context_;
};

class OneHotKernel final : public Kernel {
 public:
  OneHotKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        index_elem_(require_elem(spec.input_types[0].dtype, spec.node)),
        dtype_(spec.output_types[0].dtype) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& indices = inputs[0];
    Tensor& out = outputs[0];
    int64_t axis = node_.attr_int("axis", -1);
    if (axis < 0) axis += indices.rank() + 1;
    const auto a = static_cast<size_t>(axis);
    // A float depth is not read by the runtime's shape inference: the output then arrives
    // unallocated, and its shape is computed here as the schema does.
    if (!out.defined()) {
      const double depth = read_to_host(context_, inputs[1]).to_doubles()[0];
      if (!(depth >= 1 && depth <= static_cast<double>(kMaxElements))) {
        throw InputError(node_.label() + ": depth must be positive");
      }
      Shape shape = indices.shape();
      shape.insert(shape.begin() + axis, static_cast<int64_t>(depth));
      out = context_.allocate(dtype_, shape);
    }
    launch_one_hot(indices.raw(), index_elem_, inputs[2].raw(), out.raw(),
                   extent_of(indices.shape(), 0, a), out.dim(axis),
                   extent_of(indices.shape(), a, indices.shape().size()), elem_bytes(out.dtype()),
                   context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
  Elem index_elem_;
  DType dtype_;
};

class EmbeddingBagKernel final : public Kernel {
 public:
  EmbeddingBagKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node), context_(context) {}
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& table = inputs[0];
    const int64_t bags = outputs[0].dim(0);
    // Bounds the bags would read past are an error the host can see, as the CPU reports it.
    for (size_t i : {size_t{2}, size_t{3}}) {
      if (inputs[i].numel() < bags) {
        throw InputError(node_.label() + ": index " + std::to_string(inputs[i].numel()) +
                         " is out of range for a dim of " + std::to_string(inputs[i].numel()));
      }
    }
    const int64_t rows = table.dim(0);
    launch_embedding_bag(table.data<float>(), inputs[1].raw(), inputs[2].raw(), inputs[3].raw(),
                         index_elem(inputs[1]), outputs[0].data<float>(), rows,
                         rows ? table.numel() / rows : 0, inputs[1].numel(), bags,
                         node_.attr_string("mode", "sum") == "mean", context_.stream());
  }

 private:
  const Node& node_;
  CudaContext& context_;
};

std::string embedding_bag_refusal(const Node& node, const Graph& graph) {
  const DType index = graph.values[node.inputs[1]].type.dtype;
  for (size_t i : {size_t{2}, size_t{3}}) {
    if (graph.values[node.inputs[i]].type.dtype != index) {
      return "EmbeddingBag with indices and bounds of different integer types is not "
             "implemented on the CUDA backend";
    }
  }
  return move_refusal(node, graph);
}

std::string scatter_refusal(const Node& node, const Graph& graph) {
  const std::string reduction = node.attr_string("reduction", "none");
  if (reduction != "none") {
    return node.op_type + " reduction '" + reduction + "' is not implemented on the CUDA backend";
  }
  return move_refusal(node, graph);
}

}  // namespace

std::vector<CudaOp> tensor_index_ops() {
  return {
      {"Gather", move_refusal, make_kernel<GatherKernel>},
      {"GatherElements", move_refusal, make_kernel<GatherElementsKernel>},
      {"GatherND", move_refusal, make_kernel<GatherNDKernel>},
      {"ScatterND", scatter_refusal, make_kernel<ScatterNDKernel>},
      {"ScatterElements", scatter_refusal, make_kernel<ScatterElementsKernel>},
      {"OneHot", move_refusal, make_kernel<OneHotKernel>},
      {"EmbeddingBag", embedding_bag_refusal, make_kernel<EmbeddingBagKernel>},
  };
}

}  // namespace tandem::cuda
