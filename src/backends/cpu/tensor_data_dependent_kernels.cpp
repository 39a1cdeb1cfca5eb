// Kernels whose output sizes depend on input contents (NonZero, NonMaxSuppression, Unique: they
// allocate their outputs) and TopK.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/tensor_kernels.h"
#include "ir/error.h"

namespace tandem::cpu {
namespace {

// Whether each element is non-zero; floats compare by value so that -0.0 counts as zero.
std::vector<uint8_t> nonzero_mask(const Tensor& input) {
  std::vector<uint8_t> mask(static_cast<size_t>(input.numel()));
  if (input.dtype() == DType::kFloat16 || input.dtype() == DType::kBFloat16) {
    const auto* bits = input.data<uint16_t>();
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = (bits[i] & 0x7fff) != 0;
    return mask;
  }
  dispatch_numeric(input.dtype(), [&]<typename T>() {
    const T* values = input.data<T>();
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = values[i] != T(0);
  });
  return mask;
}

void non_zero(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& input = inputs[0];
  const std::vector<uint8_t> mask = nonzero_mask(input);
  // The flat positions of what is found, then only their coordinates: a detector's mask of a
  // few thousand scores finds a handful (a coordinate counter stepped for every element cost
  // several nanoseconds each).
  std::vector<int64_t> found;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) found.push_back(static_cast<int64_t>(i));
  }
  const auto count = static_cast<int64_t>(found.size());
  const auto rank = input.rank();
  outputs[0] = Tensor::allocate(DType::kInt64, {rank, count});
  int64_t* out = outputs[0].data<int64_t>();
  for (int64_t column = 0; column < count; ++column) {
    int64_t flat = found[static_cast<size_t>(column)];
    for (int64_t d = rank; d-- > 0;) {
      out[d * count + column] = flat % input.dim(d);
      flat /= input.dim(d);
    }
  }
}

// One candidate box of NonMaxSuppression, as ONNX Runtime keeps it: corners sorted, area
// precomputed, ordered by score then by lower index.
struct Candidate {
  float score;
  int64_t index;
  float y_min, x_min, y_max, x_max;
  float area;

  Candidate(float score, int64_t index, const float* box, bool center_point_box)
      : score(score), index(index) {
    if (center_point_box) {
      const float half_width = box[2] / 2;
      const float half_height = box[3] / 2;
      x_min = box[0] - half_width;
      x_max = box[0] + half_width;
      y_min = box[1] - half_height;
      y_max = box[1] + half_height;
      area = box[2] * box[3];
    } else {
      y_min = std::min(box[0], box[2]);
      y_max = std::max(box[0], box[2]);
      x_min = std::min(box[1], box[3]);
      x_max = std::max(box[1], box[3]);
      area = (y_max - y_min) * (x_max - x_min);
    }
  }

  bool ranks_before(const Candidate& other) const {
    return score > other.score || (score == other.score && index < other.index);
  }

  // Whether this box overlaps `kept` by more than the threshold (intersection over union).
  bool suppressed_by(const Candidate& kept, float iou_threshold) const {
    const float left = std::max(x_min, kept.x_min);
    const float right = std::min(x_max, kept.x_max);
    if (right <= left) return false;
    const float bottom = std::max(y_min, kept.y_min);
    const float top = std::min(y_max, kept.y_max);
    if (top <= bottom) return false;
    const float intersection = (right - left) * (top - bottom);
    if (intersection <= 0.0f) return false;
    const float union_area = area + kept.area - intersection;
    return intersection / union_area > iou_threshold;
  }
};

// Greedy selection per batch and class, in ONNX Runtime's order: batches, then classes, then
// boxes by descending score.
void non_max_suppression(const Node& node, std::span<const Tensor> inputs,
                         std::span<Tensor> outputs) {
  const Tensor& boxes = inputs[0];
  const Tensor& scores = inputs[1];
  auto optional_input = [&](size_t i) { return i < inputs.size() && inputs[i].defined(); };
  const int64_t max_per_class =
      optional_input(2) ? std::max<int64_t>(inputs[2].data<int64_t>()[0], 0) : 0;
  const float iou_threshold = optional_input(3) ? inputs[3].data<float>()[0] : 0.0f;
  const bool has_score_threshold = optional_input(4);
  const float score_threshold = has_score_threshold ? inputs[4].data<float>()[0] : 0.0f;
  if (!(iou_threshold >= 0.0f && iou_threshold <= 1.0f)) {
    throw InputError(node.label() + ": iou_threshold must be in [0, 1]");
  }
  const bool center_point_box = node.attr_int("center_point_box", 0) == 1;
  const int64_t batches = boxes.dim(0);
  const int64_t box_count = boxes.dim(1);
  const int64_t classes = scores.dim(1);
  std::vector<int64_t> selected;
  std::vector<Candidate> candidates;
  std::vector<Candidate> kept;
  for (int64_t batch = 0; batch < batches && max_per_class > 0; ++batch) {
    const float* batch_boxes = boxes.data<float>() + batch * box_count * 4;
    for (int64_t c = 0; c < classes; ++c) {
      const float* class_scores = scores.data<float>() + (batch * classes + c) * box_count;
      candidates.clear();
      for (int64_t b = 0; b < box_count; ++b) {
        if (!has_score_threshold || class_scores[b] > score_threshold) {
          candidates.emplace_back(class_scores[b], b, batch_boxes + b * 4, center_point_box);
        }
      }
      std::sort(candidates.begin(), candidates.end(),
                [](const Candidate& a, const Candidate& b) { return a.ranks_before(b); });
      kept.clear();
      for (const Candidate& candidate : candidates) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Candidate& k) {
          return candidate.suppressed_by(k, iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(candidate);
        selected.insert(selected.end(), {batch, c, candidate.index});
      }
    }
  }
  const auto count = static_cast<int64_t>(selected.size() / 3);
  outputs[0] = Tensor::from_vector(DType::kInt64, {count, 3}, selected);
}

// Slices along the axis (whole elements when there is no axis), compared lexicographically.
template <typename T>
void unique_typed(const Node& node, const Tensor& input, std::span<Tensor> outputs) {
  const bool has_axis = node.has("axis");
  const int64_t axis = has_axis ? normalize_axis(node.attr_int("axis", 0), input.rank()) : 0;
  int64_t outer = 1;
  int64_t inner = 1;
  int64_t slices = input.numel();
  if (has_axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= input.dim(d);
    for (int64_t d = axis + 1; d < input.rank(); ++d) inner *= input.dim(d);
    slices = input.dim(axis);
  }
  const int64_t length = outer * inner;
  // rows[s * length + o * inner + i] = input[o, s, i]
  std::vector<T> rows(static_cast<size_t>(input.numel()));
  const T* src = input.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t s = 0; s < slices; ++s) {
      std::copy_n(src + (o * slices + s) * inner, inner, rows.begin() + s * length + o * inner);
    }
  }
  auto row = [&](int64_t s) { return rows.begin() + s * length; };
  std::vector<int64_t> order(static_cast<size_t>(slices));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::lexicographical_compare(row(a), row(a) + length, row(b), row(b) + length);
  });
  // Groups of equal slices: first occurrence and count, in sorted order.
  std::vector<int64_t> firsts;
  std::vector<int64_t> counts;
  std::vector<int64_t> group_of(static_cast<size_t>(slices));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !std::equal(row(order[i]), row(order[i]) + length, row(order[i - 1]))) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    group_of[order[i]] = static_cast<int64_t>(firsts.size()) - 1;
  }
  const auto groups = static_cast<int64_t>(firsts.size());
  std::vector<int64_t> rank_of_group(static_cast<size_t>(groups));
  std::iota(rank_of_group.begin(), rank_of_group.end(), 0);
  if (node.attr_int("sorted", 1) == 0) {
    // Order of first occurrence.
    std::vector<int64_t> by_first(static_cast<size_t>(groups));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
    for (int64_t position = 0; position < groups; ++position)
      rank_of_group[by_first[position]] = position;
  }
  Shape unique_shape{groups};
  if (has_axis) {
    unique_shape = input.shape();
    unique_shape[axis] = groups;
  }
  Tensor values = Tensor::allocate(input.dtype(), unique_shape);
  Tensor indices = Tensor::allocate(DType::kInt64, {groups});
  Tensor inverse = Tensor::allocate(DType::kInt64, {slices});
  Tensor group_counts = Tensor::allocate(DType::kInt64, {groups});
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t position = rank_of_group[g];
    indices.data<int64_t>()[position] = firsts[g];
    group_counts.data<int64_t>()[position] = counts[g];
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(row(firsts[g]) + o * inner, inner,
                  values.data<T>() + (o * groups + position) * inner);
    }
  }
  for (int64_t s = 0; s < slices; ++s) inverse.data<int64_t>()[s] = rank_of_group[group_of[s]];
  Tensor* results[] = {&values, &indices, &inverse, &group_counts};
  for (size_t i = 0; i < outputs.size() && i < 4; ++i) outputs[i] = *results[i];
}

void unique(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  dispatch_numeric(inputs[0].dtype(),
                   [&]<typename T>() { unique_typed<T>(node, inputs[0], outputs); });
}

// TopK along one axis: per slice, a partial sort of (key, index) pairs with ONNX Runtime's
// order (larger, or smaller, key first; the lower index first among equal keys).
template <typename T, typename Key, typename ToKey>
void top_k_typed(const Tensor& input, Tensor& values, Tensor& indices, int64_t axis, bool largest,
                 ToKey to_key) {
  const int64_t dim = input.dim(axis);
  const int64_t k = values.dim(axis);
  int64_t outer = 1;
  int64_t inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= input.dim(d);
  for (int64_t d = axis + 1; d < input.rank(); ++d) inner *= input.dim(d);
  const T* src = input.data<T>();
  T* out_values = values.data<T>();
  int64_t* out_indices = indices.data<int64_t>();
  auto before = [largest](const std::pair<Key, int64_t>& a, const std::pair<Key, int64_t>& b) {
    if (a.first != b.first) return largest ? a.first > b.first : a.first < b.first;
    return a.second < b.second;
  };
  const bool parallel = input.numel() * static_cast<int64_t>(sizeof(T)) > kParallelBytes;
#pragma omp parallel if (parallel)
  {
    std::vector<std::pair<Key, int64_t>> slice(static_cast<size_t>(dim));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < outer * inner; ++item) {
      const int64_t o = item / inner;
      const int64_t i = item % inner;
      const T* from = src + o * dim * inner + i;
      for (int64_t j = 0; j < dim; ++j) slice[j] = {to_key(from[j * inner]), j};
      std::partial_sort(slice.begin(), slice.begin() + k, slice.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * inner + i;
        out_values[at] = from[slice[j].second * inner];
        out_indices[at] = slice[j].second;
      }
    }
  }
}

void top_k(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& input = inputs[0];
  const int64_t axis = normalize_axis(node.attr_int("axis", -1), input.rank());
  const bool largest = node.attr_int("largest", 1) != 0;
  // Sorted and unsorted requests both get sorted output: ONNX leaves the unsorted order free.
  switch (input.dtype()) {
    case DType::kFloat16:
      return top_k_typed<uint16_t, float>(input, outputs[0], outputs[1], axis, largest,
                                          half_to_float);
    case DType::kBFloat16:
      return top_k_typed<uint16_t, float>(input, outputs[0], outputs[1], axis, largest,
                                          bfloat16_to_float);
    default:
      return dispatch_numeric(input.dtype(), [&]<typename T>() {
        top_k_typed<T, T>(input, outputs[0], outputs[1], axis, largest, [](T v) { return v; });
      });
  }
}

}  // namespace

void register_data_dependent_kernels(KernelRegistry& registry) {
  registry.add("NonZero", non_zero);
  registry.add("NonMaxSuppression", non_max_suppression);
  registry.add("Unique", unique);
  registry.add("TopK", top_k);
}

}  // namespace tandem::cpu
