// CUDA kernels of the ops whose results depend on input contents: NonZero, NonMaxSuppression and
// Unique (no axis) allocate their outputs once a count is read back; TopK's output is sized by
// k. Semantics and orders are the CPU kernels' (tensor_data_dependent_kernels.cpp).
#include <algorithm>
#include <limits>

#include "backends/cuda/data_dependent_launch.h"
#include "backends/cuda/tensor_internal.h"
#include "ir/error.h"

namespace tandem::cuda {
namespace {

// Scratch device memory of `count` elements (at least one, so that every pointer is valid);
// freed in stream order when the Tensor goes.
Tensor scratch(CudaContext& context, DType dtype, int64_t count) {
  return context.allocate(dtype, {std::max<int64_t>(count, 1)});
}

// cub's temporary storage: at least one byte, so that the second call runs.
void* temp_storage(CudaContext& context, size_t bytes) {
  return context.workspace(std::max<size_t>(bytes, 1));
}

int64_t read_int64(CudaContext& context, const int64_t* device) {
  int64_t value = 0;
  context.read_back(&value, device, sizeof(value));
  return value;
}

class NonZeroKernel final : public Kernel {
 public:
  NonZeroKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context), elem_(require_elem(spec.input_types[0].dtype, spec.node)) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& input = inputs[0];
    const int64_t count = input.numel();
    int64_t selected_count = 0;
    Tensor selected = scratch(context_, DType::kInt64, count);
    if (count > 0) {
      Tensor number = scratch(context_, DType::kInt64, 1);
      auto* indices = selected.data<int64_t>();
      auto* total = number.data<int64_t>();
      size_t bytes = 0;
      check(nonzero_select(input.raw(), elem_, count, indices, total, nullptr, bytes,
                           context_.stream()),
            "cub::DeviceSelect::If");
      void* temp = temp_storage(context_, bytes);
      check(
          nonzero_select(input.raw(), elem_, count, indices, total, temp, bytes, context_.stream()),
          "cub::DeviceSelect::If");
      selected_count = read_int64(context_, total);
    }
    outputs[0] = context_.allocate(DType::kInt64, {input.rank(), selected_count});
    launch_nonzero_coordinates(selected.data<int64_t>(), selected_count, contiguous(input.shape()),
                               outputs[0].data<int64_t>(), context_.stream());
  }

 private:
  CudaContext& context_;
  Elem elem_;
};

// Positions along the sorted axis are int32 in the sort.
constexpr int64_t kMaxSortedDim = std::numeric_limits<int32_t>::max();

class TopKKernel final : public Kernel {
 public:
  TopKKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, spec.node)),
        largest_(spec.node.attr_int("largest", 1) != 0),
        k_(spec, 1) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& input = inputs[0];
    const int64_t axis = normalize_axis(node_.attr_int("axis", -1), input.rank());
    if (!outputs[0].defined()) {
      // Sized by shape inference from k whenever k is known to the runtime; else here.
      Shape shape = input.shape();
      shape[static_cast<size_t>(axis)] = k_.ints(context_, inputs[1]).at(0);
      outputs[0] = context_.allocate(dtype_, shape);
      outputs[1] = context_.allocate(DType::kInt64, shape);
    }
    const int64_t dim = input.dim(axis);
    const int64_t k = outputs[0].dim(axis);
    if (k < 0 || k > dim) {
      throw InputError(node_.label() + ": k = " + std::to_string(k) +
                       " is out of range for a dim of " + std::to_string(dim));
    }
    if (dim > kMaxSortedDim) {
      throw InputError(node_.label() + ": the CUDA TopK sorts axes of up to 2^31 - 1 elements");
    }
    const auto a = static_cast<size_t>(axis);
    const int64_t outer = extent_of(input.shape(), 0, a);
    const int64_t inner = extent_of(input.shape(), a + 1, input.shape().size());
    const int64_t items = outer * dim * inner;
    if (k == 0 || items == 0) return;
    const int64_t key_bytes = sort_key_bytes(elem_);
    Tensor keys_in = scratch(context_, DType::kUInt8, items * key_bytes);
    Tensor keys_out = scratch(context_, DType::kUInt8, items * key_bytes);
    Tensor order_in = scratch(context_, DType::kInt32, items);
    Tensor order_out = scratch(context_, DType::kInt32, items);
    Tensor offsets = scratch(context_, DType::kInt64, outer * inner + 1);
    SortBuffers buffers;
    buffers.keys_in = keys_in.raw();
    buffers.keys_out = keys_out.raw();
    buffers.order_in = order_in.data<int32_t>();
    buffers.order_out = order_out.data<int32_t>();
    buffers.segment_offsets = offsets.data<int64_t>();
    auto run_top_k = [&] {
      check(top_k(input.raw(), elem_, outer, dim, inner, k, largest_, outputs[0].raw(),
                  outputs[1].data<int64_t>(), buffers, context_.stream()),
            "cub radix sort");
    };
    run_top_k();
    buffers.temp = temp_storage(context_, buffers.temp_bytes);
    run_top_k();
  }

 private:
  const Node& node_;
  CudaContext& context_;
  DType dtype_;
  Elem elem_;
  bool largest_;
  HostInput k_;
};

// max_output_boxes_per_class, iou_threshold and score_threshold are read on the host (constants,
// or read back), as the CPU reads them.
class NonMaxSuppressionKernel final : public Kernel {
 public:
  NonMaxSuppressionKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        center_point_box_(spec.node.attr_int("center_point_box", 0) == 1),
        max_per_class_(spec, 2),
        iou_threshold_(spec, 3),
        score_threshold_(spec, 4) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& boxes = inputs[0];
    const Tensor& scores = inputs[1];
    NmsParams params;
    params.batches = boxes.dim(0);
    params.boxes = boxes.dim(1);
    params.classes = scores.dim(1);
    params.center_point_box = center_point_box_;
    if (has_input(inputs, 2)) {
      params.max_per_class =
          std::max<int64_t>(max_per_class_.get(context_, inputs[2]).data<int64_t>()[0], 0);
    }
    if (has_input(inputs, 3)) {
      params.iou_threshold = iou_threshold_.get(context_, inputs[3]).data<float>()[0];
    }
    params.has_score_threshold = has_input(inputs, 4);
    if (params.has_score_threshold) {
      params.score_threshold = score_threshold_.get(context_, inputs[4]).data<float>()[0];
    }
    if (!(params.iou_threshold >= 0.0f && params.iou_threshold <= 1.0f)) {
      throw InputError(node_.label() + ": iou_threshold must be in [0, 1]");
    }
    if (params.boxes > kMaxSortedDim) {
      throw InputError(node_.label() + ": the CUDA NonMaxSuppression takes up to 2^31 - 1 boxes");
    }
    const int64_t segments = params.batches * params.classes;
    const int64_t items = segments * params.boxes;
    if (params.max_per_class == 0 || items == 0) {
      outputs[0] = context_.allocate(DType::kInt64, {0, 3});
      return;
    }
    params.max_per_class = std::min(params.max_per_class, params.boxes);
    Tensor corners = scratch(context_, DType::kFloat32, params.batches * params.boxes * 5);
    Tensor keys_in = scratch(context_, DType::kInt32, items);
    Tensor keys_out = scratch(context_, DType::kInt32, items);
    Tensor order_in = scratch(context_, DType::kInt32, items);
    Tensor order_out = scratch(context_, DType::kInt32, items);
    Tensor segment_offsets = scratch(context_, DType::kInt64, segments + 1);
    Tensor candidates = scratch(context_, DType::kInt32, segments);
    Tensor selected = scratch(context_, DType::kInt32, items);
    Tensor selected_counts = scratch(context_, DType::kInt64, segments + 1);
    Tensor output_offsets = scratch(context_, DType::kInt64, segments + 1);
    NmsBuffers buffers;
    buffers.corners = corners.data<float>();
    buffers.keys_in = keys_in.data<uint32_t>();
    buffers.keys_out = keys_out.data<uint32_t>();
    buffers.order_in = order_in.data<int32_t>();
    buffers.order_out = order_out.data<int32_t>();
    buffers.segment_offsets = segment_offsets.data<int64_t>();
    buffers.candidates = candidates.data<int32_t>();
    buffers.selected = selected.data<int32_t>();
    buffers.selected_counts = selected_counts.data<int64_t>();
    buffers.output_offsets = output_offsets.data<int64_t>();
    auto select = [&] {
      check(
          nms_select(boxes.data<float>(), scores.data<float>(), params, buffers, context_.stream()),
          "NonMaxSuppression (cub sort and scan)");
    };
    select();
    buffers.temp = temp_storage(context_, buffers.temp_bytes);
    select();
    const int64_t total = read_int64(context_, buffers.output_offsets + segments);
    outputs[0] = context_.allocate(DType::kInt64, {total, 3});
    if (total > 0) {
      launch_nms_write(params, buffers, outputs[0].data<int64_t>(), context_.stream());
    }
  }

 private:
  const Node& node_;
  CudaContext& context_;
  bool center_point_box_;
  HostInput max_per_class_, iou_threshold_, score_threshold_;
};

// Unique over all elements; the axis attribute is refused.
class UniqueKernel final : public Kernel {
 public:
  UniqueKernel(const KernelSpec& spec, CudaContext& context)
      : context_(context),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, spec.node)),
        sorted_(spec.node.attr_int("sorted", 1) != 0) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& input = inputs[0];
    const int64_t count = input.numel();
    const int64_t key_bytes = sort_key_bytes(elem_);
    Tensor keys_in = scratch(context_, DType::kUInt8, count * key_bytes);
    Tensor keys_out = scratch(context_, DType::kUInt8, count * key_bytes);
    std::vector<Tensor> lists;
    auto list = [&] {
      lists.push_back(scratch(context_, DType::kInt64, count));
      return lists.back().data<int64_t>();
    };
    UniqueBuffers buffers;
    buffers.keys_in = keys_in.raw();
    buffers.keys_out = keys_out.raw();
    buffers.order_in = list();
    buffers.order_out = list();
    buffers.heads = list();
    buffers.group_of = list();
    buffers.starts = list();
    buffers.firsts = list();
    buffers.firsts_sorted = list();
    buffers.group_by_first = list();
    buffers.rank = list();
    int64_t groups = 0;
    if (count > 0) {
      check(unique_groups(input.raw(), elem_, count, buffers, context_.stream()), "cub (Unique)");
      buffers.temp = temp_storage(context_, buffers.temp_bytes);
      check(unique_groups(input.raw(), elem_, count, buffers, context_.stream()), "cub (Unique)");
      groups = read_int64(context_, buffers.group_of + count - 1);
    }
    Tensor results[] = {
        context_.allocate(dtype_, {groups}), context_.allocate(DType::kInt64, {groups}),
        context_.allocate(DType::kInt64, {count}), context_.allocate(DType::kInt64, {groups})};
    if (count > 0) {
      check(unique_write(input.raw(), elem_, count, groups, sorted_, buffers, results[0].raw(),
                         results[1].data<int64_t>(), results[2].data<int64_t>(),
                         results[3].data<int64_t>(), context_.stream()),
            "cub (Unique)");
    }
    for (size_t i = 0; i < outputs.size() && i < 4; ++i) outputs[i] = results[i];
  }

 private:
  CudaContext& context_;
  DType dtype_;
  Elem elem_;
  bool sorted_;
};

std::string top_k_refusal(const Node& node, const Graph& graph) {
  if (node.inputs.empty() || node.inputs[0] < 0) return move_refusal(node, graph);
  const Shape& shape = graph.values[static_cast<size_t>(node.inputs[0])].type.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis >= 0 && axis < rank && shape[static_cast<size_t>(axis)] > kMaxSortedDim) {
    return "TopK over an axis of more than 2^31 - 1 elements is not implemented on the CUDA "
           "backend";
  }
  return move_refusal(node, graph);
}

std::string unique_refusal(const Node& node, const Graph& graph) {
  if (node.has("axis")) return "Unique with an axis is not implemented on the CUDA backend";
  return move_refusal(node, graph);
}

}  // namespace

std::vector<CudaOp> data_dependent_ops() {
  return {
      {"NonZero", move_refusal, make_kernel<NonZeroKernel>},
      {"TopK", top_k_refusal, make_kernel<TopKKernel>},
      {"NonMaxSuppression", move_refusal, make_kernel<NonMaxSuppressionKernel>},
      {"Unique", unique_refusal, make_kernel<UniqueKernel>},
  };
}

}  // namespace tandem::cuda
