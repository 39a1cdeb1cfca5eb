// Kernels of the indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements,
// OneHot, EmbeddingBag. Index values are known only now, so they are range-checked here.
#include <algorithm>
#include <cstring>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/tensor_kernels.h"
#include "ir/error.h"

namespace tandem::cpu {
namespace {

// A negative index resolved against `dim`; throws when it is out of range.
void resolve_index(const Node& node, int64_t& index, int64_t dim) {
  if (index < -dim || index >= dim) {
    throw InputError(node.label() + ": index " + std::to_string(index) +
                     " is out of range for a dim of " + std::to_string(dim));
  }
  if (index < 0) index += dim;
}

// Index values as int64, negative ones resolved against `dim`; throws on any out of range.
std::vector<int64_t> checked_indices(const Node& node, const Tensor& indices, int64_t dim) {
  std::vector<int64_t> values = indices.to_int64s();
  for (int64_t& index : values) resolve_index(node, index, dim);
  return values;
}

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t d = begin; d < end; ++d) count *= shape[d];
  return count;
}

// Whole rows of `inner` elements: an embedding lookup copies one table row per index.
void gather(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), data.rank());
  const int64_t dim = data.dim(axis);
  const std::vector<int64_t> indices = checked_indices(node, inputs[1], dim);
  const int64_t outer = product(data.shape(), 0, axis);
  const int64_t inner = product(data.shape(), axis + 1, data.shape().size());
  const auto count = static_cast<int64_t>(indices.size());
  dispatch_by_size(data.dtype(), [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = outputs[0].data<T>();
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(outputs[0].nbytes()) > \
                                              kParallelBytes)
    for (int64_t item = 0; item < outer * count; ++item) {
      const int64_t o = item / count;
      const T* from = src + (o * dim + indices[item % count]) * inner;
      T* to = dst + item * inner;
      if (inner == 1) {
        *to = *from;
      } else {
        std::memcpy(to, from, inner * sizeof(T));
      }
    }
  });
}

void gather_elements(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const Tensor& indices_tensor = inputs[1];
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), data.rank());
  const std::vector<int64_t> indices = checked_indices(node, indices_tensor, data.dim(axis));
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  const Shape& shape = indices_tensor.shape();
  const size_t rank = shape.size();
  dispatch_by_size(data.dtype(), [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = outputs[0].data<T>();
    std::vector<int64_t> position(rank, 0);
    for (size_t i = 0; i < indices.size(); ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) {
        offset += (static_cast<int64_t>(d) == axis ? indices[i] : position[d]) * strides[d];
      }
      dst[i] = src[offset];
      for (size_t d = rank; d-- > 0;) {
        if (++position[d] < shape[d]) break;
        position[d] = 0;
      }
    }
  });
}

// Source offsets (in elements) of the slices that GatherND / ScatterND index: one per index
// tuple, each tuple of `depth` coordinates into the dims after `batch_dims`.
std::vector<int64_t> tuple_offsets(const Node& node, const Shape& data_shape, const Tensor& indices,
                                   int64_t batch_dims) {
  const int64_t depth = indices.shape().back();
  const std::vector<int64_t> strides = contiguous_strides(data_shape);
  const std::vector<int64_t> values = indices.to_int64s();
  const int64_t tuples = depth == 0 ? 0 : static_cast<int64_t>(values.size()) / depth;
  const int64_t batches = product(indices.shape(), 0, batch_dims);
  const int64_t per_batch = batches == 0 ? 0 : tuples / batches;
  const int64_t batch_stride = batch_dims == 0 ? 0 : strides[batch_dims - 1];
  std::vector<int64_t> offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = per_batch == 0 ? 0 : t / per_batch * batch_stride;
    for (int64_t j = 0; j < depth; ++j) {
      const int64_t dim = data_shape[batch_dims + j];
      int64_t index = values[t * depth + j];
      if (index < -dim || index >= dim) {
        throw InputError(node.label() + ": index " + std::to_string(index) +
                         " is out of range for a dim of " + std::to_string(dim));
      }
      if (index < 0) index += dim;
      offset += index * strides[batch_dims + j];
    }
    offsets[t] = offset;
  }
  return offsets;
}

void gather_nd(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const int64_t batch_dims = node.attr_int("batch_dims", 0);
  const int64_t depth = inputs[1].shape().back();
  const std::vector<int64_t> offsets = tuple_offsets(node, data.shape(), inputs[1], batch_dims);
  const size_t slice =
      static_cast<size_t>(product(data.shape(), batch_dims + depth, data.shape().size())) *
      dtype_size(data.dtype());
  const auto* src = static_cast<const char*>(data.raw());
  auto* dst = static_cast<char*>(outputs[0].raw());
  const size_t elem = dtype_size(data.dtype());
  const auto count = static_cast<int64_t>(offsets.size());
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(outputs[0].nbytes()) > \
                                              kParallelBytes)
  for (int64_t t = 0; t < count; ++t) std::memcpy(dst + t * slice, src + offsets[t] * elem, slice);
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction(const Node& node) {
  const std::string name = node.attr_string("reduction", "none");
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  return Reduction::kNone;
}

template <typename T>
void combine(T* to, const T* from, int64_t count, Reduction op) {
  for (int64_t i = 0; i < count; ++i) {
    switch (op) {
      case Reduction::kAdd: to[i] = static_cast<T>(to[i] + from[i]); break;
      case Reduction::kMul: to[i] = static_cast<T>(to[i] * from[i]); break;
      case Reduction::kMax: to[i] = std::max(to[i], from[i]); break;
      case Reduction::kMin: to[i] = std::min(to[i], from[i]); break;
      case Reduction::kNone: to[i] = from[i]; break;
    }
  }
}

// Applies `count` updates at the given offsets, in order (later duplicates win or accumulate).
void scatter(const Tensor& data, const Tensor& updates, Tensor& out,
             const std::vector<int64_t>& offsets, int64_t slice, Reduction op) {
  std::memcpy(out.raw(), data.raw(), data.nbytes());
  if (op == Reduction::kNone) {
    dispatch_by_size(data.dtype(), [&]<typename T>() {
      for (size_t t = 0; t < offsets.size(); ++t) {
        std::memcpy(out.data<T>() + offsets[t], updates.data<T>() + t * slice, slice * sizeof(T));
      }
    });
    return;
  }
  dispatch_numeric(data.dtype(), [&]<typename T>() {
    for (size_t t = 0; t < offsets.size(); ++t) {
      combine(out.data<T>() + offsets[t], updates.data<T>() + t * slice, slice, op);
    }
  });
}

void scatter_nd(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const int64_t depth = inputs[1].shape().back();
  const std::vector<int64_t> offsets = tuple_offsets(node, data.shape(), inputs[1], 0);
  const int64_t slice = product(data.shape(), depth, data.shape().size());
  scatter(data, inputs[2], outputs[0], offsets, slice, reduction(node));
}

void scatter_elements(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), data.rank());
  const std::vector<int64_t> indices = checked_indices(node, inputs[1], data.dim(axis));
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  const Shape& shape = inputs[1].shape();
  std::vector<int64_t> offsets(indices.size());
  std::vector<int64_t> position(shape.size(), 0);
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      offset += (static_cast<int64_t>(d) == axis ? indices[i] : position[d]) * strides[d];
    }
    offsets[i] = offset;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++position[d] < shape[d]) break;
      position[d] = 0;
    }
  }
  scatter(data, inputs[2], outputs[0], offsets, 1, reduction(node));
}

void one_hot(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& indices = inputs[0];
  Tensor& out = outputs[0];
  const auto rank = indices.rank();
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank + 1;
  const int64_t depth = out.dim(axis);
  const int64_t outer = product(indices.shape(), 0, axis);
  const int64_t inner = product(indices.shape(), axis, indices.shape().size());
  std::vector<int64_t> classes(static_cast<size_t>(indices.numel()));
  if (is_floating(indices.dtype())) {
    const std::vector<double> values = indices.to_doubles();
    std::transform(values.begin(), values.end(), classes.begin(),
                   [](double v) { return static_cast<int64_t>(v); });
  } else {
    classes = indices.to_int64s();
  }
  dispatch_by_size(out.dtype(), [&]<typename T>() {
    const T off = inputs[2].data<T>()[0];
    const T on = inputs[2].data<T>()[1];
    T* dst = out.data<T>();
    std::fill_n(dst, out.numel(), off);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t c = classes[o * inner + i];
        if (c < 0) c += depth;
        // Out-of-range classes leave the whole one-hot vector off, as ONNX specifies.
        if (c >= 0 && c < depth) dst[(o * depth + c) * inner + i] = on;
      }
    }
  });
}

// What the Loop it replaces computes (ir/fuse_embedding_bag.h), without a body run per bag:
// each bag's rows summed in place, in the order the Loop's ReduceSum adds them. Only the indices
// some bag reads are range-checked, as the Loop's Gather checks only those.
void embedding_bag(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& table = inputs[0];
  const int64_t rows = table.dim(0);
  const int64_t width = table.numel() / std::max<int64_t>(rows, 1);
  std::vector<int64_t> indices = inputs[1].to_int64s();
  const std::vector<int64_t> starts = inputs[2].to_int64s();
  const std::vector<int64_t> ends = inputs[3].to_int64s();
  const int64_t bags = outputs[0].dim(0);
  // The Loop's Gather of a bag's bounds fails at the first bag past the shorter of them.
  const auto bounded = static_cast<int64_t>(std::min(starts.size(), ends.size()));
  if (bags > bounded) {
    throw InputError(node.label() + ": index " + std::to_string(bounded) +
                     " is out of range for a dim of " + std::to_string(bounded));
  }
  const auto length = static_cast<int64_t>(indices.size());
  std::vector<SliceRange> ranges(static_cast<size_t>(bags));
  for (int64_t bag = 0; bag < bags; ++bag) {
    ranges[bag] = slice_range(starts[bag], ends[bag], 1, length);
    for (int64_t j = ranges[bag].start; j < ranges[bag].start + ranges[bag].count; ++j)
      resolve_index(node, indices[j], rows);
  }
  const bool mean = node.attr_string("mode", "sum") == "mean";
  const float* src = table.data<float>();
  float* dst = outputs[0].data<float>();
#pragma omp parallel for schedule(static) if (bags * width * 4 > kParallelBytes)
  for (int64_t bag = 0; bag < bags; ++bag) {
    const SliceRange& range = ranges[bag];
    float* out = dst + bag * width;
    std::fill(out, out + width, 0.0f);
    for (int64_t j = range.start; j < range.start + range.count; ++j) {
      const float* row = src + indices[j] * width;
      for (int64_t c = 0; c < width; ++c) out[c] += row[c];
    }
    if (mean) {
      const auto count = static_cast<float>(range.count);
      for (int64_t c = 0; c < width; ++c) out[c] /= count;
    }
  }
}

}  // namespace

void register_index_kernels(KernelRegistry& registry) {
  registry.add("Gather", gather, Elements::kAny);
  registry.add("GatherElements", gather_elements, Elements::kAny);
  registry.add("GatherND", gather_nd, Elements::kAny);
  registry.add("ScatterND", scatter_nd, Elements::kAny);
  registry.add("ScatterElements", scatter_elements, Elements::kAny);
  registry.add("OneHot", one_hot);
  registry.add("EmbeddingBag", embedding_bag);
}

}  // namespace tandem::cpu
