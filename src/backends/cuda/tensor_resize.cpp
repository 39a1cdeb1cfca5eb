// CUDA kernel of Resize: nearest for every dtype, linear (over any number of resized axes) for
// the float types, every coordinate transformation and nearest mode; cubic is refused. Sizes,
// scales and source coordinates follow ir/ops/tensor_resize.h, as the CPU kernel does; the
// per-axis tables of taps are built on the host and uploaded again only when the input shape or
// the geometry inputs change.
#include "ir/ops/tensor_resize.h"

#include <algorithm>
#include <stdexcept>

#include "backends/cuda/tensor_internal.h"
#include "backends/cuda/tensor_resize_launch.h"
#include "ir/error.h"

namespace tandem::cuda {
namespace {

// The taps of the outputs along one axis, as the CPU kernel computes and compacts them: up to
// two (offset, weight) pairs per output, zero weights dropped and taps of one sample merged.
// An offset0 of -1 marks an output outside the input (tf_crop_and_resize).
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> offsets;  // 2 per output
  std::vector<float> weights;    // 2 per output
};

AxisTaps axis_taps(const ResizeAttributes& a, int64_t in, int64_t out, float scale, float roi_start,
                   float roi_end, int64_t stride) {
  AxisTaps t;
  t.offsets.assign(static_cast<size_t>(2 * out), 0);
  t.weights.assign(static_cast<size_t>(2 * out), 0.0f);
  auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1) * stride; };
  for (int64_t j = 0; j < out; ++j) {
    int64_t* offset = &t.offsets[static_cast<size_t>(2 * j)];
    float* weight = &t.weights[static_cast<size_t>(2 * j)];
    const ResizeSample sample = resize_sample(a, j, scale, out, in, roi_start, roi_end);
    if (sample.outside) {
      offset[0] = -1;
      continue;
    }
    const int64_t base = sample.base;
    const float ratio = sample.ratio;
    if (a.mode == ResizeMode::kNearest) {
      offset[0] = offset[1] =
          clamp_index(base + (resize_nearest_rounds_up(a.nearest, ratio) ? 1 : 0));
      weight[0] = 1.0f;
      continue;
    }
    // Linear: a tap beyond the edge repeats the edge sample.
    const int64_t taps[2] = {clamp_index(base), clamp_index(base + 1)};
    const float tap_weights[2] = {1.0f - ratio, ratio};
    int count = 0;
    for (int k = 0; k < 2; ++k) {
      if (tap_weights[k] == 0.0f) continue;
      if (count == 1 && offset[0] == taps[k]) {
        weight[0] += tap_weights[k];
        continue;
      }
      offset[count] = taps[k];
      weight[count] = tap_weights[k];
      ++count;
    }
    if (count == 2) t.taps = 2;
    // A single tap is padded with a weight-0 read of the same sample.
    if (count < 2) offset[1] = offset[0];
  }
  return t;
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const KernelSpec& spec, CudaContext& context)
      : node_(spec.node),
        context_(context),
        attributes_(resize_attributes(spec.node, spec.opset,
                                      std::max<size_t>(spec.input_types[0].shape.size(), 1))),
        dtype_(spec.input_types[0].dtype),
        elem_(require_elem(dtype_, spec.node)),
        roi_(spec, 1),
        scales_(spec, 2),
        sizes_(spec, 3) {
    layout_.fill_bits = resize_fill_bits(dtype_, attributes_.extrapolation_value);
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    Tensor& out = outputs[0];
    const bool crop = attributes_.coordinates == ResizeCoordinates::kTfCropAndResize;
    if (crop && (!has_input(inputs, 1) || inputs[1].numel() == 0)) {
      throw InputError(node_.label() + ": tf_crop_and_resize needs the roi input");
    }
    // roi matters only to tf_crop_and_resize, as on the CPU.
    const Tensor roi = crop ? roi_.get(context_, inputs[1]) : Tensor();
    const Tensor scales = has_input(inputs, 2) ? scales_.get(context_, inputs[2]) : Tensor();
    const Tensor sizes = has_input(inputs, 3) ? sizes_.get(context_, inputs[3]) : Tensor();
    const ResizeGeometry g =
        resize_geometry(node_, attributes_, x.shape(), roi.defined() ? &roi : nullptr,
                        scales.defined() ? &scales : nullptr, sizes.defined() ? &sizes : nullptr);
    // Scales computed at run time are floats, which the runtime's shape inference does not read:
    // the output then arrives unallocated.
    if (!out.defined()) out = context_.allocate(dtype_, g.output);
    if (g.output != out.shape()) {
      throw std::logic_error(node_.label() + ": output shape " + shape_str(out.shape()) +
                             " differs from the resized shape " + shape_str(g.output));
    }
    if (out.numel() == 0) return;
    prepare_tables(x.shape(), g);
    if (attributes_.mode == ResizeMode::kNearest) {
      launch_resize_nearest(x.raw(), out.raw(), layout_, offsets_.data<int64_t>(),
                            elem_bytes(dtype_), context_.stream());
    } else {
      launch_resize_linear(x.raw(), out.raw(), layout_, offsets_.data<int64_t>(),
                           weights_.data<float>(), elem_, context_.stream());
    }
  }

 private:
  // Builds and uploads the tables unless the last run's are for the same shapes and geometry.
  void prepare_tables(const Shape& input, const ResizeGeometry& g) {
    std::vector<double> key(input.begin(), input.end());
    key.insert(key.end(), g.output.begin(), g.output.end());
    for (const auto* values : {&g.scales, &g.roi_start, &g.roi_end}) {
      key.insert(key.end(), values->begin(), values->end());
    }
    if (offsets_.defined() && key == key_) return;
    const std::vector<int64_t> strides = contiguous_strides(input);
    std::vector<int64_t> offsets;
    std::vector<float> weights;
    layout_.rank = static_cast<int>(g.output.size());
    for (size_t d = 0; d < g.output.size(); ++d) {
      const AxisTaps taps = axis_taps(attributes_, input[d], g.output[d], g.scales[d],
                                      g.roi_start[d], g.roi_end[d], strides[d]);
      layout_.size[d] = g.output[d];
      layout_.base[d] = static_cast<int64_t>(offsets.size() / 2);
      layout_.taps[d] = taps.taps;
      offsets.insert(offsets.end(), taps.offsets.begin(), taps.offsets.end());
      weights.insert(weights.end(), taps.weights.begin(), taps.weights.end());
    }
    const auto entries = static_cast<int64_t>(offsets.size());
    offsets_ = context_.upload(Tensor::from_vector(DType::kInt64, {entries}, offsets));
    weights_ = context_.upload(Tensor::from_vector(DType::kFloat32, {entries}, weights));
    key_ = std::move(key);
  }

  const Node& node_;
  CudaContext& context_;
  ResizeAttributes attributes_;
  DType dtype_;
  Elem elem_;
  HostInput roi_, scales_, sizes_;
  ResizeLayout layout_;
  std::vector<double> key_;
  Tensor offsets_, weights_;  // on the device
};

std::string resize_refusal(const Node& node, const Graph& graph) {
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "cubic") return "Resize mode cubic is not implemented on the CUDA backend";
  const DType dtype = input_dtype(node, graph, 0);
  if (mode == "linear" && !is_floating(dtype)) {
    return "linear Resize of " + std::string(dtype_name(dtype)) +
           " is not implemented on the CUDA backend (float types only; nearest takes any)";
  }
  return move_refusal(node, graph);
}

}  // namespace

std::vector<CudaOp> tensor_resize_ops() {
  return {{"Resize", resize_refusal, make_kernel<ResizeKernel>}};
}

}  // namespace tandem::cuda
