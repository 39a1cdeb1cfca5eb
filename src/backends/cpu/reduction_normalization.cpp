// CPU kernels of LayerNormalization, InstanceNormalization, LpNormalization and
// BatchNormalization (inference).
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/reduction_internal.h"
#include "ir/error.h"

namespace tandem::cpu::reduction {
namespace {

// Normalisations read each element about three times; parallel at half the usual work.
constexpr int64_t kNormParallelWork = kParallelWork / 2;

template <typename T>
double row_sum(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return blocked_sum(n, [x](int64_t i) { return x[i]; });
  } else {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    return sum;
  }
}

// Sum of squared deviations from `mean`: the second pass keeps the variance accurate where
// E[x^2] - E[x]^2 would cancel.
template <typename T>
double row_squared_deviation(const T* x, int64_t n, T mean) {
  if constexpr (std::is_same_v<T, float>) {
    return blocked_sum(n, [x, mean](int64_t i) {
      const float d = x[i] - mean;
      return d * d;
    });
  } else {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (x[i] - mean) * (x[i] - mean);
    return sum;
  }
}

struct RowStats {
  double mean;
  double inv_std;
};

template <typename T>
RowStats row_stats(const T* x, int64_t n, double epsilon) {
  const double mean = row_sum(x, n) / static_cast<double>(n);
  const double variance =
      row_squared_deviation(x, n, static_cast<T>(mean)) / static_cast<double>(n);
  return {mean, 1.0 / std::sqrt(variance + epsilon)};
}

// A LayerNormalization scale or bias as `size` values over the normalised dims, broadcast from
// its own shape (right-aligned; infer checked that it broadcasts). Null for an absent input.
template <typename T>
class NormParam {
 public:
  NormParam(const Tensor& param, const Shape& normalised_shape, int64_t size) {
    if (!param.defined()) return;
    if (param.numel() == size && param.dtype() == dtype_of_t()) {
      data_ = param.data<T>();
      return;
    }
    const std::vector<double> values = param.to_doubles();
    const std::vector<int64_t> strides = contiguous_strides(param.shape());
    const auto rank_gap = param.rank() - static_cast<int64_t>(normalised_shape.size());
    std::vector<int64_t> source_strides(normalised_shape.size(), 0);  // 0 where broadcast
    for (size_t d = 0; d < normalised_shape.size(); ++d) {
      const int64_t param_dim = static_cast<int64_t>(d) + rank_gap;
      if (param_dim >= 0 && param.dim(param_dim) != 1) {
        source_strides[d] = strides[static_cast<size_t>(param_dim)];
      }
    }
    expanded_.resize(static_cast<size_t>(size));
    std::vector<int64_t> coord(normalised_shape.size(), 0);
    int64_t source = 0;
    for (int64_t k = 0; k < size; ++k) {
      expanded_[static_cast<size_t>(k)] = static_cast<T>(values[static_cast<size_t>(source)]);
      for (size_t d = coord.size(); d-- > 0;) {
        source += source_strides[d];
        if (++coord[d] < normalised_shape[d]) break;
        source -= coord[d] * source_strides[d];
        coord[d] = 0;
      }
    }
    data_ = expanded_.data();
  }
  const T* data() const { return data_; }

 private:
  static DType dtype_of_t() { return std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64; }
  const T* data_ = nullptr;
  std::vector<T> expanded_;
};

void run_layer_norm(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", -1), data.rank()));
  const AxisView view = view_around(data.shape(), axis, data.shape().size());
  const int64_t size = view.extent;
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const Shape normalised_shape(data.shape().begin() + static_cast<int64_t>(axis),
                               data.shape().end());
  float* mean_out = outputs.size() > 1 && outputs[1].defined() ? outputs[1].data<float>() : nullptr;
  float* inv_std_out =
      outputs.size() > 2 && outputs[2].defined() ? outputs[2].data<float>() : nullptr;
  dispatch_float(node, data.dtype(), [&]<typename T>() {
    const NormParam<T> scale(inputs[1], normalised_shape, size);
    const NormParam<T> bias(inputs.size() > 2 ? inputs[2] : Tensor(), normalised_shape, size);
    const T* x = data.data<T>();
    T* y = outputs[0].data<T>();
    const T* gamma = scale.data();
    const T* beta = bias.data();
#pragma omp parallel for if (data.numel() > kNormParallelWork)
    for (int64_t row = 0; row < view.outer; ++row) {
      const T* in = x + row * size;
      T* out = y + row * size;
      const RowStats stats = row_stats(in, size, epsilon);
      const auto mean = static_cast<T>(stats.mean);
      const auto inv_std = static_cast<T>(stats.inv_std);
      if (beta) {
        for (int64_t i = 0; i < size; ++i) out[i] = (in[i] - mean) * inv_std * gamma[i] + beta[i];
      } else {
        for (int64_t i = 0; i < size; ++i) out[i] = (in[i] - mean) * inv_std * gamma[i];
      }
      if (mean_out) mean_out[row] = static_cast<float>(stats.mean);
      if (inv_std_out) inv_std_out[row] = static_cast<float>(stats.inv_std);
    }
  });
}

void run_instance_norm(const Node& node, std::span<const Tensor> inputs,
                       std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const AxisView view = view_around(data.shape(), 2, data.shape().size());
  const int64_t channels = data.dim(1);
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = inputs[1].to_doubles();
  const std::vector<double> bias = inputs[2].to_doubles();
  dispatch_float(node, data.dtype(), [&]<typename T>() {
    const T* x = data.data<T>();
    T* y = outputs[0].data<T>();
    const int64_t size = view.extent;
#pragma omp parallel for if (data.numel() > kNormParallelWork)
    for (int64_t row = 0; row < view.outer; ++row) {
      const T* in = x + row * size;
      T* out = y + row * size;
      const RowStats stats = row_stats(in, size, epsilon);
      const auto c = static_cast<size_t>(row % channels);
      const auto factor = static_cast<T>(stats.inv_std * scale[c]);
      const auto shift = static_cast<T>(bias[c] - stats.mean * stats.inv_std * scale[c]);
      for (int64_t i = 0; i < size; ++i) out[i] = in[i] * factor + shift;
    }
  });
}

// y = x / ||x||_p along the axis; a zero norm leaves x (all zeros) unchanged.
void run_lp_norm(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", -1), data.rank()));
  const AxisView view = view_around(data.shape(), axis, axis + 1);
  const bool l1 = node.attr_int("p", 2) == 1;
  dispatch_float(node, data.dtype(), [&]<typename T>() {
    const auto finish = [l1](double sum) {
      const double norm = l1 ? sum : std::sqrt(sum);
      return static_cast<T>(norm > 0 ? 1.0 / norm : 1.0);
    };
    const int64_t tiles = view.tiles();
#pragma omp parallel for if (data.numel() > kNormParallelWork)
    for (int64_t task = 0; task < view.outer * tiles; ++task) {
      const int64_t first = (task % tiles) * kInnerTile;
      const int64_t count = std::min(kInnerTile, view.inner - first);
      const int64_t offset = (task / tiles) * view.extent * view.inner + first;
      const T* in = data.data<T>() + offset;
      T* out = outputs[0].data<T>() + offset;
      double sum[kInnerTile] = {};
      for (int64_t r = 0; r < view.extent; ++r) {
        const T* row = in + r * view.inner;
        for (int64_t j = 0; j < count; ++j) {
          sum[j] += l1 ? std::abs(double(row[j])) : double(row[j]) * double(row[j]);
        }
      }
      T inv_norm[kInnerTile];
      for (int64_t j = 0; j < count; ++j) inv_norm[j] = finish(sum[j]);
      for (int64_t r = 0; r < view.extent; ++r) {
        for (int64_t j = 0; j < count; ++j) {
          out[r * view.inner + j] = in[r * view.inner + j] * inv_norm[j];
        }
      }
    }
  });
}

// Inference: y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = bias - mean * a.
void run_batch_norm(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const AxisView view = view_around(data.shape(), 2, data.shape().size());
  const int64_t channels = data.dim(1);
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = inputs[1].to_doubles();
  const std::vector<double> bias = inputs[2].to_doubles();
  const std::vector<double> mean = inputs[3].to_doubles();
  const std::vector<double> variance = inputs[4].to_doubles();
  dispatch_float(node, data.dtype(), [&]<typename T>() {
    std::vector<T> factor(static_cast<size_t>(channels));
    std::vector<T> shift(static_cast<size_t>(channels));
    for (size_t c = 0; c < factor.size(); ++c) {
      const double a = scale[c] / std::sqrt(variance[c] + epsilon);
      factor[c] = static_cast<T>(a);
      shift[c] = static_cast<T>(bias[c] - mean[c] * a);
    }
    const T* x = data.data<T>();
    T* y = outputs[0].data<T>();
    const int64_t size = view.extent;
#pragma omp parallel for if (data.numel() > kParallelWork)
    for (int64_t row = 0; row < view.outer; ++row) {
      const auto c = static_cast<size_t>(row % channels);
      const T a = factor[c];
      const T b = shift[c];
      const T* in = x + row * size;
      T* out = y + row * size;
      for (int64_t i = 0; i < size; ++i) out[i] = in[i] * a + b;
    }
  });
  // Without training the running statistics pass through unchanged.
  for (size_t i = 1; i < outputs.size() && i < 3; ++i) {
    if (outputs[i].defined()) {
      std::memcpy(outputs[i].raw(), inputs[i + 2].raw(), outputs[i].nbytes());
    }
  }
}

}  // namespace

void register_normalization_kernels(KernelRegistry& registry) {
  // Rows in order, split when the elements exceed the threshold.
  registry.add("LayerNormalization", &run_layer_norm, Elements::kNumeric, kNormParallelWork + 1);
  registry.add("InstanceNormalization", &run_instance_norm);
  registry.add("LpNormalization", &run_lp_norm);
  registry.add("BatchNormalization", &run_batch_norm);
}

}  // namespace tandem::cpu::reduction
