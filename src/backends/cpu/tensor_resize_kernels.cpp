// Kernel of Resize: nearest for every dtype (a gather), linear (N-linear over any number of
// resized axes) and cubic for float32 and float64, every coordinate transformation mode. The
// rules (sizes, scales, source coordinates) come from ir/ops/tensor_resize.h, as in the schema.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/tensor_kernels.h"
#include "ir/error.h"
#include "ir/ops/tensor_resize.h"

namespace tandem::cpu {
namespace {

// Bounds the taps of one output over all axes (cubic over 8 resized axes), hence the work.
constexpr int64_t kMaxTapCombinations = int64_t{1} << 16;

// Where the outputs along one axis sample: for output j, `taps` source offsets (the index,
// clamped to the axis, times the axis stride) and their weights; `outside` marks outputs that
// tf_crop_and_resize maps beyond the input, which take extrapolation_value.
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> offset;   // out * taps
  std::vector<float> weight;     // out * taps
  std::vector<uint8_t> outside;  // out
};

// Cubic convolution weights of the four taps floor(x) - 1 ... floor(x) + 2 at `ratio` =
// x - floor(x), coefficient a (Keys 1981, as ONNX defines them).
void cubic_weights(double ratio, double a, double w[4]) {
  const double s0 = ratio + 1, s1 = ratio, s2 = 1 - ratio, s3 = 2 - ratio;
  w[0] = ((a * s0 - 5 * a) * s0 + 8 * a) * s0 - 4 * a;
  w[1] = ((a + 2) * s1 - (a + 3)) * s1 * s1 + 1;
  w[2] = ((a + 2) * s2 - (a + 3)) * s2 * s2 + 1;
  w[3] = ((a * s3 - 5 * a) * s3 + 8 * a) * s3 - 4 * a;
}

// Merges the taps of each output that read the same sample and drops those of weight 0, then
// keeps as many taps per output as the busiest needs (padding with weight 0). An axis Resize
// leaves alone (batch, channels) or one of size 1 then takes one tap per output, so the
// combinations of taps over all axes stay few.
AxisTaps compact(const AxisTaps& t) {
  const auto out = static_cast<int64_t>(t.outside.size());
  std::vector<int> counts(static_cast<size_t>(out), 0);
  AxisTaps merged = t;
  int taps = 1;
  for (int64_t j = 0; j < out; ++j) {
    int n = 0;
    for (int k = 0; k < t.taps; ++k) {
      const int64_t offset = t.offset[j * t.taps + k];
      const float weight = t.weight[j * t.taps + k];
      if (weight == 0.0f) continue;
      int m = 0;
      while (m < n && merged.offset[j * t.taps + m] != offset) ++m;
      if (m == n) {
        merged.offset[j * t.taps + n] = offset;
        merged.weight[j * t.taps + n] = weight;
        ++n;
      } else {
        merged.weight[j * t.taps + m] += weight;
      }
    }
    counts[j] = n;
    taps = std::max(taps, n);
  }
  AxisTaps c;
  c.taps = taps;
  c.outside = t.outside;
  c.offset.assign(static_cast<size_t>(out * taps), 0);
  c.weight.assign(static_cast<size_t>(out * taps), 0.0f);
  for (int64_t j = 0; j < out; ++j) {
    for (int k = 0; k < counts[j]; ++k) {
      c.offset[j * taps + k] = merged.offset[j * t.taps + k];
      c.weight[j * taps + k] = merged.weight[j * t.taps + k];
    }
    // Padding reads a sample the output reads anyway.
    for (int k = counts[j]; k < taps; ++k) c.offset[j * taps + k] = c.offset[j * taps];
  }
  return c;
}

AxisTaps axis_taps(const ResizeAttributes& a, int64_t in, int64_t out, float scale, float roi_start,
                   float roi_end, int64_t stride) {
  AxisTaps t;
  t.taps = a.mode == ResizeMode::kNearest ? 1 : (a.mode == ResizeMode::kLinear ? 2 : 4);
  t.offset.assign(static_cast<size_t>(out * t.taps), 0);
  t.weight.assign(static_cast<size_t>(out * t.taps), 0.0f);
  t.outside.assign(static_cast<size_t>(out), 0);
  auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1) * stride; };
  for (int64_t j = 0; j < out; ++j) {
    const ResizeSample sample = resize_sample(a, j, scale, out, in, roi_start, roi_end);
    if (sample.outside) {
      t.outside[j] = 1;
      continue;
    }
    const int64_t base = sample.base;
    const float ratio = sample.ratio;
    int64_t* offset = &t.offset[j * t.taps];
    float* weight = &t.weight[j * t.taps];
    if (a.mode == ResizeMode::kNearest) {
      offset[0] = clamp_index(base + (resize_nearest_rounds_up(a.nearest, ratio) ? 1 : 0));
      weight[0] = 1.0f;
    } else if (a.mode == ResizeMode::kLinear) {
      // A tap beyond the edge repeats the edge sample, so exclude_outside changes nothing here.
      offset[0] = clamp_index(base);
      offset[1] = clamp_index(base + 1);
      weight[0] = 1.0f - ratio;
      weight[1] = ratio;
    } else {
      double w[4];
      cubic_weights(ratio, a.cubic_coeff_a, w);
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t index = base - 1 + k;
        if (a.exclude_outside && (index < 0 || index >= in)) w[k] = 0;
        sum += w[k];
      }
      for (int k = 0; k < 4; ++k) {
        offset[k] = clamp_index(base - 1 + k);
        weight[k] = static_cast<float>(a.exclude_outside && sum != 0 ? w[k] / sum : w[k]);
      }
    }
  }
  return compact(t);
}

// out[row, j] = sum over the taps of every axis of the product of their weights times the
// source sample; Acc is the accumulation type. Leading axes' taps combine once per row.
template <typename T, typename Acc>
void resize_rows(const T* src, T* dst, const std::vector<AxisTaps>& axes, const Shape& out_shape,
                 T extrapolation, bool weighted) {
  const size_t rank = out_shape.size();
  const int64_t inner = out_shape.back();
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  if (total == 0) return;
  const int64_t rows = total / inner;
  size_t combos_max = 1;
  for (size_t d = 0; d + 1 < rank; ++d) combos_max *= static_cast<size_t>(axes[d].taps);
  const AxisTaps& last = axes.back();
  const int lt = last.taps;
  const int64_t work = total * static_cast<int64_t>(combos_max) * lt * sizeof(T);
#pragma omp parallel if (work > kParallelBytes)
  {
    std::vector<int64_t> offsets(combos_max);
    std::vector<Acc> weights(combos_max);
    std::vector<int64_t> index(rank);
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t rest = row;
      for (size_t d = rank - 1; d-- > 0;) {
        index[d] = rest % out_shape[d];
        rest /= out_shape[d];
      }
      size_t n = 1;
      offsets[0] = 0;
      weights[0] = 1;
      bool outside = false;
      for (size_t d = 0; d + 1 < rank && !outside; ++d) {
        const AxisTaps& axis = axes[d];
        const int64_t j = index[d];
        if (axis.outside[j]) {
          outside = true;
          break;
        }
        const int taps = axis.taps;
        // Expand in place from the back: combo c becomes combos c * taps ... c * taps + taps - 1.
        for (size_t c = n; c-- > 0;) {
          const int64_t base_offset = offsets[c];
          const Acc base_weight = weights[c];
          for (int k = taps; k-- > 0;) {
            offsets[c * taps + k] = base_offset + axis.offset[j * taps + k];
            weights[c * taps + k] = base_weight * static_cast<Acc>(axis.weight[j * taps + k]);
          }
        }
        n *= static_cast<size_t>(taps);
      }
      T* to = dst + row * inner;
      if (outside) {
        std::fill_n(to, inner, extrapolation);
        continue;
      }
      if (!weighted) {
        // Nearest: one tap on every axis.
        const T* from = src + offsets[0];
        for (int64_t j = 0; j < inner; ++j) {
          to[j] = last.outside[j] ? extrapolation : from[last.offset[j]];
        }
        continue;
      }
      for (int64_t j = 0; j < inner; ++j) {
        if (last.outside[j]) {
          to[j] = extrapolation;
          continue;
        }
        const int64_t* tap_offset = &last.offset[j * lt];
        const float* tap_weight = &last.weight[j * lt];
        Acc acc = 0;
        for (size_t c = 0; c < n; ++c) {
          const T* from = src + offsets[c];
          Acc sample = 0;
          for (int k = 0; k < lt; ++k) {
            sample += static_cast<Acc>(tap_weight[k]) * static_cast<Acc>(from[tap_offset[k]]);
          }
          acc += weights[c] * sample;
        }
        to[j] = static_cast<T>(acc);
      }
    }
  }
}

class ResizeKernel final : public Kernel {
 public:
  explicit ResizeKernel(const KernelSpec& spec)
      : node_(spec.node),
        attributes_(resize_attributes(spec.node, spec.opset,
                                      std::max<size_t>(spec.input_types[0].shape.size(), 1))),
        dtype_(spec.input_types[0].dtype),
        fill_(resize_fill_bits(dtype_, attributes_.extrapolation_value)) {
    if (attributes_.mode != ResizeMode::kNearest && dtype_ != DType::kFloat32 &&
        dtype_ != DType::kFloat64) {
      throw InputError(node_.label() + ": " +
                       (attributes_.mode == ResizeMode::kLinear ? "linear" : "cubic") +
                       " Resize of " + std::string(dtype_name(dtype_)) +
                       " has no CPU kernel (float32 and float64 only; nearest takes any dtype)");
    }
  }

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    const Tensor& x = inputs[0];
    Tensor& out = outputs[0];
    auto input = [&](size_t i) -> const Tensor* {
      return i < inputs.size() && inputs[i].defined() ? &inputs[i] : nullptr;
    };
    const bool crop = attributes_.coordinates == ResizeCoordinates::kTfCropAndResize;
    const Tensor* roi = crop ? input(1) : nullptr;
    if (crop && (!roi || roi->numel() == 0)) {
      throw InputError(node_.label() + ": tf_crop_and_resize needs the roi input");
    }
    const ResizeGeometry g =
        resize_geometry(node_, attributes_, x.shape(), roi, input(2), input(3));
    if (g.output != out.shape()) {
      throw std::logic_error(node_.label() + ": output shape " + shape_str(out.shape()) +
                             " differs from the resized shape " + shape_str(g.output));
    }
    if (out.numel() == 0) return;
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    std::vector<AxisTaps> axes;
    for (size_t d = 0; d < g.output.size(); ++d) {
      axes.push_back(axis_taps(attributes_, x.dim(static_cast<int64_t>(d)), g.output[d],
                               g.scales[d], g.roi_start[d], g.roi_end[d], strides[d]));
    }
    int64_t combinations = 1;
    for (const AxisTaps& axis : axes) {
      combinations *= axis.taps;
      if (combinations > kMaxTapCombinations) {
        throw InputError(node_.label() + ": interpolates over too many axes at once (more than " +
                         std::to_string(kMaxTapCombinations) + " taps per output)");
      }
    }
    const float extrapolation = attributes_.extrapolation_value;
    if (attributes_.mode == ResizeMode::kNearest) {
      dispatch_by_size(dtype_, [&]<typename T>() {
        T fill;
        std::memcpy(&fill, &fill_, sizeof(T));
        resize_rows<T, float>(x.data<T>(), out.data<T>(), axes, g.output, fill, false);
      });
    } else if (dtype_ == DType::kFloat32) {
      resize_rows<float, float>(x.data<float>(), out.data<float>(), axes, g.output, extrapolation,
                                true);
    } else {
      resize_rows<double, double>(x.data<double>(), out.data<double>(), axes, g.output,
                                  extrapolation, true);
    }
  }

 private:
  const Node& node_;
  ResizeAttributes attributes_;
  DType dtype_;
  uint64_t fill_;
};

}  // namespace

void register_resize_kernels(KernelRegistry& registry) {
  registry.add("Resize", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    return std::make_unique<ResizeKernel>(spec);
  });
}

}  // namespace tandem::cpu
