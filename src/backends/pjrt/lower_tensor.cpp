// Lowering rules: static data movement (Reshape, Transpose, Concat, Slice, Gather, Pad, ...)
// and the ops that make constants (Shape, Size, Constant, ConstantOfShape).
#include <algorithm>
#include <numeric>

#include "backends/pjrt/lower.h"
#include "backends/pjrt/lower_rules.h"
#include "ir/op_schema.h"
#include "ir/ops/tensor_layout.h"

namespace tandem::pjrt {
namespace {

int64_t rank_of(const HloValue& value) { return static_cast<int64_t>(value.shape.size()); }

// stablehlo.slice: elements start, start + stride, ... below limit, per axis.
HloValue slice(HloBuilder& b, const HloValue& x, std::span<const int64_t> starts,
               std::span<const int64_t> limits, std::span<const int64_t> strides) {
  Shape shape;
  for (size_t d = 0; d < starts.size(); ++d) {
    shape.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
  }
  if (shape == x.shape) return x;
  return b.op("slice", {x}, x.dtype, shape,
              "start_indices = " + i64_array(starts) + ", limit_indices = " + i64_array(limits) +
                  ", strides = " + i64_array(strides));
}

// Elements [start, limit) of one axis.
HloValue slice_axis(HloBuilder& b, const HloValue& x, int64_t axis, int64_t start, int64_t limit) {
  std::vector<int64_t> starts(x.shape.size(), 0), limits = x.shape, strides(x.shape.size(), 1);
  starts[axis] = start;
  limits[axis] = limit;
  return slice(b, x, starts, limits, strides);
}

HloValue reverse(HloBuilder& b, const HloValue& x, std::span<const int64_t> axes) {
  return b.op("reverse", {x}, x.dtype, x.shape, "dimensions = " + i64_array(axes));
}

HloValue concatenate(HloBuilder& b, std::span<const HloValue> parts, int64_t axis) {
  if (parts.size() == 1) return parts[0];
  Shape shape = parts[0].shape;
  shape[axis] = 0;
  for (const HloValue& part : parts) shape[axis] += part.shape[axis];
  return b.op("concatenate", parts, parts[0].dtype, shape,
              "dimension = " + std::to_string(axis) + " : i64");
}

// Reshape, Flatten, Squeeze and Unsqueeze only rename dims: the output shape says it all.
void lower_reshape(LowerContext& context, const Node& node) {
  context.set_output(
      node, 0,
      context.builder().reshape(context.input(node, 0), context.output_type(node, 0).shape));
}

void lower_transpose(LowerContext& context, const Node& node) {
  const HloValue x = context.input(node, 0);
  std::vector<int64_t> perm(x.shape.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (node.has("perm")) perm = node.attr_ints("perm");
  context.set_output(node, 0, context.builder().transpose(x, perm));
}

void lower_concat(LowerContext& context, const Node& node) {
  std::vector<HloValue> parts;
  for (size_t i = 0; i < node.inputs.size(); ++i) parts.push_back(context.input(node, i));
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank_of(parts[0]));
  context.set_output(node, 0, concatenate(context.builder(), parts, axis));
}

void lower_split(LowerContext& context, const Node& node) {
  const HloValue x = context.input(node, 0);
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank_of(x));
  const auto count = static_cast<int64_t>(node.outputs.size());
  std::vector<int64_t> sizes;
  if (context.has_input(node, 1)) {
    sizes = context.constant_ints(node, 1);
  } else {
    // Chunks of ceil(dim / n), the last one smaller (opset 18's num_outputs; exact otherwise).
    const int64_t chunk = (x.shape[axis] + count - 1) / count;
    sizes.assign(static_cast<size_t>(count), chunk);
    sizes.back() = x.shape[axis] - chunk * (count - 1);
  }
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (context.has_output(node, i)) {
      context.set_output(node, i,
                         slice_axis(context.builder(), x, axis, offset, offset + sizes[i]));
    }
    offset += sizes[i];
  }
}

// Slice with constant starts, ends, axes and steps. Axes with negative steps are reversed
// first, so that one stablehlo.slice with positive strides takes every axis.
void lower_slice(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  HloValue x = context.input(node, 0);
  const std::vector<int64_t> starts = context.constant_ints(node, 1);
  const std::vector<int64_t> ends = context.constant_ints(node, 2);
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (context.has_input(node, 3)) axes = context.constant_ints(node, 3);
  std::vector<int64_t> steps(starts.size(), 1);
  if (context.has_input(node, 4)) steps = context.constant_ints(node, 4);

  const size_t rank = x.shape.size();
  std::vector<int64_t> begin(rank, 0), limit = x.shape, stride(rank, 1), reversed;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalize_axis(axes[i], static_cast<int64_t>(rank));
    const int64_t dim = x.shape[axis];
    const SliceRange range = slice_range(starts[i], ends[i], steps[i], dim);
    if (range.count == 0) {
      begin[axis] = limit[axis] = 0;
      continue;
    }
    // A range of one element needs no stride (and a huge step must not overflow).
    const int64_t step = range.count == 1 ? 1 : range.step;
    if (step < 0) reversed.push_back(axis);
    begin[axis] = step < 0 ? dim - 1 - range.start : range.start;
    stride[axis] = step < 0 ? -step : step;
    limit[axis] = begin[axis] + (range.count - 1) * stride[axis] + 1;
  }
  if (!reversed.empty()) {
    std::sort(reversed.begin(), reversed.end());
    x = reverse(b, x, reversed);
  }
  context.set_output(node, 0, slice(b, x, begin, limit, stride));
}

// Gather along one axis with stablehlo.gather; negative indices count from the end.
void lower_gather(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  HloValue indices = context.input(node, 1);
  const int64_t rank = rank_of(data);
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank);
  const int64_t index_rank = rank_of(indices);
  const HloValue zero = b.splat(indices.dtype, indices.shape, 0);
  const HloValue dim = b.splat(indices.dtype, indices.shape, static_cast<double>(data.shape[axis]));
  indices = b.select(b.compare("LT", indices, zero), b.binary("add", indices, dim), indices);

  // The output is data dims before the axis, then the index dims, then data dims after it.
  std::string offset_dims;
  for (int64_t d = 0; d < rank - 1; ++d) {
    offset_dims += (d ? ", " : "") + std::to_string(d < axis ? d : d + index_rank);
  }
  Shape slice_sizes = data.shape;
  slice_sizes[axis] = 1;
  const std::string attributes =
      "dimension_numbers = #stablehlo.gather<offset_dims = [" + offset_dims +
      "], collapsed_slice_dims = [" + std::to_string(axis) + "], start_index_map = [" +
      std::to_string(axis) + "], index_vector_dim = " + std::to_string(index_rank) +
      ">, indices_are_sorted = false, slice_sizes = " + i64_array(slice_sizes);
  const TensorType& out = context.output_type(node, 0);
  context.set_output(node, 0, b.op("gather", {data, indices}, data.dtype, out.shape, attributes));
}

// "[0, 1, 2]": a list of dims in a gather or scatter dimension-numbers attribute.
std::string dim_list(std::span<const int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

std::vector<int64_t> first_dims(int64_t count) {
  std::vector<int64_t> dims(static_cast<size_t>(count));
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

// Index values as int64, negative ones counted back from `dims` (of the indices' shape).
HloValue from_end(HloBuilder& b, const HloValue& indices, const HloValue& dims) {
  const HloValue wide = b.convert(indices, DType::kInt64);
  return b.select(b.compare("LT", wide, b.splat(DType::kInt64, wide.shape, 0)),
                  b.binary("add", wide, dims), wide);
}

// The data coordinates of every element of a GatherElements / ScatterElements index tensor,
// [indices..., rank]: the element's own position on every axis but `axis`, its value on that one.
HloValue element_coordinates(LowerContext& context, const Node& node, int64_t axis) {
  HloBuilder& b = context.builder();
  const HloValue indices = context.input(node, 1);
  const int64_t dim = context.input_type(node, 0).shape[static_cast<size_t>(axis)];
  const HloValue resolved =
      from_end(b, indices, b.splat(DType::kInt64, indices.shape, static_cast<double>(dim)));
  const int64_t rank = rank_of(indices);
  Shape one = indices.shape;
  one.push_back(1);
  std::vector<HloValue> parts;
  for (int64_t d = 0; d < rank; ++d) {
    parts.push_back(d == axis ? b.reshape(resolved, one)
                              : b.op("iota", {}, DType::kInt64, one,
                                     "iota_dimension = " + std::to_string(d) + " : i64"));
  }
  return concatenate(b, parts, rank);
}

void lower_gather_elements(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const int64_t rank = rank_of(data);
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank);
  const HloValue coordinates = element_coordinates(context, node, axis);
  const std::vector<int64_t> all = first_dims(rank);
  const std::string attributes =
      "dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = " +
      dim_list(all) + ", start_index_map = " + dim_list(all) +
      ", index_vector_dim = " + std::to_string(rank) +
      ">, indices_are_sorted = false, slice_sizes = " +
      i64_array(std::vector<int64_t>(static_cast<size_t>(rank), 1));
  context.set_output(node, 0,
                     b.op("gather", {data, coordinates}, data.dtype,
                          context.output_type(node, 0).shape, attributes));
}

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims;  // scatter_dims_to_operand_dims
  int64_t index_vector_dim;                                       // = inserted_window_dims
};

// The body that combines the value already there with an update: the reduction's op (bools:
// add and max are or, mul and min are and, as the CPU's casts make them).
std::string combining_region(HloBuilder& b, const std::string& reduction, DType dtype) {
  const bool boolean = dtype == DType::kBool;
  if (reduction == "add") return b.binary_region(boolean ? "or" : "add", dtype);
  if (reduction == "mul") return b.binary_region(boolean ? "and" : "multiply", dtype);
  if (reduction == "max") return b.binary_region(boolean ? "or" : "maximum", dtype);
  if (reduction == "min") return b.binary_region(boolean ? "and" : "minimum", dtype);
  throw LoweringRefused("reduction " + reduction);
}

// The body of a scatter without reduction over (value, position) pairs: the update made later
// (the higher position) wins, as the CPU applies updates in order. Taking the maximum position
// is order-free, so repeated indices give the CPU's result whatever order XLA applies them in.
std::string later_update_region(DType dtype) {
  const std::string value = tensor_type(dtype, {});
  const std::string position = tensor_type(DType::kInt64, {});
  const auto select = [](const std::string& name, const std::string& a, const std::string& b,
                         const std::string& type) {
    return "      " + name + " = \"stablehlo.select\"(%later, " + a + ", " + b +
           ") : (tensor<i1>, " + type + ", " + type + ") -> " + type + "\n";
  };
  return "({\n    ^bb0(%current: " + value + ", %current_position: " + position +
         ", %update: " + value + ", %update_position: " + position +
         "):\n      %later = \"stablehlo.compare\"(%update_position, %current_position) "
         "{comparison_direction = #stablehlo<comparison_direction GT>, compare_type = "
         "#stablehlo<comparison_type SIGNED>} : (" +
         position + ", " + position + ") -> tensor<i1>\n" +
         select("%value", "%update", "%current", value) +
         select("%position", "%update_position", "%current_position", position) +
         "      \"stablehlo.return\"(%value, %position) : (" + value + ", " + position +
         ") -> ()\n    })";
}

// stablehlo.scatter of `updates` into `data` at `indices` (int64, in range), combined as the
// node's reduction says.
HloValue scatter(HloBuilder& b, const Node& node, const HloValue& data, const HloValue& indices,
                 const HloValue& updates, const ScatterDims& dims) {
  const std::string attributes =
      "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = " +
      dim_list(dims.update_window_dims) +
      ", inserted_window_dims = " + dim_list(dims.inserted_window_dims) +
      ", scatter_dims_to_operand_dims = " + dim_list(dims.inserted_window_dims) +
      ", index_vector_dim = " + std::to_string(dims.index_vector_dim) +
      ">, indices_are_sorted = false, unique_indices = false";
  const std::string reduction = node.attr_string("reduction", "none");
  if (reduction != "none") {
    const HloValue operands[] = {data, indices, updates};
    return b.op("scatter", operands, data.dtype, data.shape, attributes,
                combining_region(b, reduction, data.dtype));
  }
  // Each update's position in the CPU's order: row-major over the updates (the index tuples
  // lead), after the data's own elements (-1).
  const HloValue positions =
      b.reshape(b.op("iota", {}, DType::kInt64, {numel(updates.shape)}, "iota_dimension = 0 : i64"),
                updates.shape);
  const HloValue operands[] = {data, b.splat(DType::kInt64, data.shape, -1), indices, updates,
                               positions};
  const TensorType results[] = {{data.dtype, data.shape}, {DType::kInt64, data.shape}};
  return b.op_results("scatter", operands, results, attributes, later_update_region(data.dtype))[0];
}

void lower_scatter_elements(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const int64_t rank = rank_of(data);
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank);
  const Shape& indices = context.input_type(node, 1).shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && indices[static_cast<size_t>(d)] > data.shape[static_cast<size_t>(d)]) {
      throw LoweringRefused("ScatterElements indices larger than the data on axis " +
                            std::to_string(d));
    }
  }
  const HloValue coordinates = element_coordinates(context, node, axis);
  context.set_output(
      node, 0,
      scatter(b, node, data, coordinates, context.input(node, 2), {{}, first_dims(rank), rank}));
}

// ScatterND: index tuples of depth k into the first k dims of the data, each updating a slice
// of the remaining dims.
void lower_scatter_nd(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue data = context.input(node, 0);
  const HloValue indices = context.input(node, 1);
  const int64_t depth = indices.shape.back();
  const int64_t tuple_axis = rank_of(indices) - 1;
  const Tensor dims = Tensor::from_vector(
      DType::kInt64, {depth}, std::vector<int64_t>(data.shape.begin(), data.shape.begin() + depth));
  const int64_t last[] = {tuple_axis};
  const HloValue resolved =
      from_end(b, indices, b.broadcast_in_dim(b.constant(dims), indices.shape, last));
  std::vector<int64_t> window;
  for (int64_t d = 0; d < rank_of(data) - depth; ++d) window.push_back(tuple_axis + d);
  context.set_output(node, 0,
                     scatter(b, node, data, resolved, context.input(node, 2),
                             {window, first_dims(depth), tuple_axis}));
}

// Expand broadcasts both ways (the shape may be smaller than the input): the inferred output
// shape is the numpy broadcast of the two.
void lower_expand(LowerContext& context, const Node& node) {
  context.set_output(
      node, 0,
      context.builder().broadcast_to(context.input(node, 0), context.output_type(node, 0).shape));
}

// Tile as a broadcast to [r0, d0, r1, d1, ...], which reshaped is the tiled tensor.
void lower_tile(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue x = context.input(node, 0);
  const std::vector<int64_t> repeats = context.constant_ints(node, 1);
  Shape interleaved;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    interleaved.insert(interleaved.end(), {repeats[d], x.shape[d]});
    dims.push_back(static_cast<int64_t>(2 * d + 1));
  }
  context.set_output(
      node, 0,
      b.reshape(b.broadcast_in_dim(x, interleaved, dims), context.output_type(node, 0).shape));
}

// The border of one axis that edge, reflect or wrap padding adds before and after `x`.
HloValue pad_axis(HloBuilder& b, const HloValue& x, int64_t axis, int64_t before, int64_t after,
                  const std::string& mode) {
  const int64_t length = x.shape[axis];
  std::vector<HloValue> parts;
  const auto edge = [&](int64_t at, int64_t count) {
    Shape shape = x.shape;
    shape[axis] = count;
    std::vector<int64_t> dims(x.shape.size());
    std::iota(dims.begin(), dims.end(), 0);
    return b.broadcast_in_dim(slice_axis(b, x, axis, at, at + 1), shape, dims);
  };
  const int64_t axes[] = {axis};
  if (mode == "edge") {
    if (before > 0) parts.push_back(edge(0, before));
    parts.push_back(x);
    if (after > 0) parts.push_back(edge(length - 1, after));
  } else if (mode == "reflect") {
    // Mirrors without repeating the edge element.
    if (before >= length || after >= length) {
      throw LoweringRefused("reflect pads as large as the (cropped) dim");
    }
    if (before > 0) parts.push_back(reverse(b, slice_axis(b, x, axis, 1, before + 1), axes));
    parts.push_back(x);
    if (after > 0) {
      parts.push_back(reverse(b, slice_axis(b, x, axis, length - 1 - after, length - 1), axes));
    }
  } else {
    if (before > length || after > length) throw LoweringRefused("wrap pads larger than the dim");
    if (before > 0) parts.push_back(slice_axis(b, x, axis, length - before, length));
    parts.push_back(x);
    if (after > 0) parts.push_back(slice_axis(b, x, axis, 0, after));
  }
  return concatenate(b, parts, axis);
}

void lower_pad(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  HloValue x = context.input(node, 0);
  const size_t rank = x.shape.size();
  const std::vector<int64_t> axes =
      context.has_input(node, 3) ? context.constant_ints(node, 3) : std::vector<int64_t>{};
  const std::vector<int64_t> amounts = pads_per_axis(rank, context.constant_ints(node, 1), axes);
  const std::vector<int64_t> low(amounts.begin(), amounts.begin() + rank);
  const std::vector<int64_t> high(amounts.begin() + rank, amounts.end());
  const std::string mode = node.attr_string("mode", "constant");
  if (mode == "constant") {
    // stablehlo.pad crops with negative amounts.
    const HloValue value =
        context.has_input(node, 2) ? b.reshape(context.input(node, 2), {}) : b.scalar(x.dtype, 0);
    const HloValue operands[] = {x, value};
    const std::vector<int64_t> interior(rank, 0);
    context.set_output(node, 0,
                       b.op("pad", operands, x.dtype, context.output_type(node, 0).shape,
                            "edge_padding_low = " + i64_array(low) + ", edge_padding_high = " +
                                i64_array(high) + ", interior_padding = " + i64_array(interior)));
    return;
  }
  if (mode != "edge" && mode != "reflect" && mode != "wrap") {
    throw LoweringRefused("Pad mode " + mode);
  }
  // Crop first (negative pads), then pad what remains, one axis at a time, as the CPU does.
  std::vector<int64_t> begin(rank), limit(rank), stride(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    begin[d] = std::max<int64_t>(0, -low[d]);
    limit[d] = x.shape[d] - std::max<int64_t>(0, -high[d]);
  }
  x = slice(b, x, begin, limit, stride);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t before = std::max<int64_t>(0, low[d]), after = std::max<int64_t>(0, high[d]);
    if (before == 0 && after == 0) continue;
    if (x.shape[d] <= 0) throw LoweringRefused("padding an axis that cropping emptied");
    x = pad_axis(b, x, static_cast<int64_t>(d), before, after, mode);
  }
  context.set_output(node, 0, x);
}

void lower_shape(LowerContext& context, const Node& node) {
  const Shape& input = context.input_type(node, 0).shape;
  const auto rank = static_cast<int64_t>(input.size());
  const auto clamp_to_rank = [rank](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = 0, end = rank;
  if (context.graph().opset >= 15) {
    start = clamp_to_rank(node.attr_int("start", 0));
    end = clamp_to_rank(node.attr_int("end", rank));
  }
  const std::vector<int64_t> dims(input.begin() + start, input.begin() + std::max(start, end));
  context.set_output(node, 0,
                     context.builder().constant(Tensor::from_vector(
                         DType::kInt64, {static_cast<int64_t>(dims.size())}, dims)));
}

void lower_size(LowerContext& context, const Node& node) {
  const int64_t count = numel(context.input_type(node, 0).shape);
  context.set_output(node, 0,
                     context.builder().constant(
                         Tensor::from_vector(DType::kInt64, {}, std::vector<int64_t>{count})));
}

void lower_constant(LowerContext& context, const Node& node) {
  context.set_output(node, 0, context.builder().constant(constant_node_value(node)));
}

void lower_constant_of_shape(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const Tensor* fill = node.attr_tensor("value");
  const Tensor value = fill ? fill->reshaped({}) : Tensor::zeros(DType::kFloat32, {});
  context.set_output(node, 0,
                     b.broadcast_in_dim(b.constant(value), context.output_type(node, 0).shape, {}));
}

// The membership matrix of an EmbeddingBag is [bags, indices]: past this many elements (256 MiB
// of float32) the lowering is refused and the node stays with a device that runs it by loops.
constexpr int64_t kMaxBagMembership = int64_t{1} << 26;

// EmbeddingBag (Tandem's, from a Loop of per-bag lookups) as one matrix product: a [bags, N]
// membership matrix, 1 where index j lies in bag b's slice [starts[b], ends[b]), times the
// gathered rows [N, width]. Matrix units run it (a TPU's MXU) where a scatter-add would be
// serial, and slices that overlap or skip indices come out as the Loop computes them. An index
// out of the table's range is clamped by XLA's gather, where the CPU backend fails the run.
void lower_embedding_bag(LowerContext& context, const Node& node) {
  HloBuilder& b = context.builder();
  const HloValue table = context.input(node, 0);
  const TensorType& out = context.output_type(node, 0);
  const int64_t rows = table.shape[0];
  const int64_t width = rows > 0 ? numel(table.shape) / rows : 0;
  const int64_t bags = out.shape[0];
  const int64_t length = context.input_type(node, 1).shape[0];
  for (size_t i = 2; i < 4; ++i) {
    if (context.input_type(node, i).shape[0] < bags) {
      throw LoweringRefused("EmbeddingBag has fewer bounds than its " + std::to_string(bags) +
                            " bags");
    }
  }
  if (bags * length > kMaxBagMembership) {
    throw LoweringRefused("EmbeddingBag of " + std::to_string(bags) + " bags over " +
                          std::to_string(length) + " indices (a membership matrix over " +
                          std::to_string(kMaxBagMembership) + " elements)");
  }
  // A bag's bounds as Slice reads them: negative ones count from the end, then clamped.
  const auto bound = [&](size_t i) {
    const HloValue all = b.convert(context.input(node, i), DType::kInt64);
    const HloValue x = slice_axis(b, all, 0, 0, bags);
    const HloValue n = b.splat(DType::kInt64, x.shape, static_cast<double>(length));
    const HloValue zero = b.splat(DType::kInt64, x.shape, 0);
    const HloValue wrapped = b.select(b.compare("LT", x, zero), b.binary("add", x, n), x);
    return b.binary("minimum", b.binary("maximum", wrapped, zero), n);
  };
  const HloValue starts = bound(2), ends = bound(3);
  const Shape membership_shape{bags, length};
  const int64_t bag_axis[] = {0};
  const HloValue position =
      b.op("iota", {}, DType::kInt64, membership_shape, "iota_dimension = 1 : i64");
  const HloValue member = b.convert(
      b.binary("and",
               b.compare("GE", position, b.broadcast_in_dim(starts, membership_shape, bag_axis)),
               b.compare("LT", position, b.broadcast_in_dim(ends, membership_shape, bag_axis))),
      table.dtype);
  HloValue indices = b.convert(context.input(node, 1), DType::kInt64);
  indices = b.select(
      b.compare("LT", indices, b.splat(DType::kInt64, indices.shape, 0)),
      b.binary("add", indices, b.splat(DType::kInt64, indices.shape, static_cast<double>(rows))),
      indices);
  const HloValue gathered = b.op(
      "gather", {b.reshape(table, {rows, width}), indices}, table.dtype, {length, width},
      "dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
      "start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = " +
          i64_array(std::vector<int64_t>{1, width}));
  HloValue sum = b.op("dot_general", {member, gathered}, table.dtype, {bags, width},
                      "dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
                      "rhs_contracting_dimensions = [0]>");
  if (node.attr_string("mode", "sum") == "mean") {  // an empty bag's mean is 0 / 0: NaN
    const HloValue count = b.convert(b.binary("maximum", b.binary("subtract", ends, starts),
                                              b.splat(DType::kInt64, starts.shape, 0)),
                                     table.dtype);
    sum = b.binary("divide", sum, b.broadcast_in_dim(count, sum.shape, bag_axis));
  }
  context.set_output(node, 0, b.reshape(sum, out.shape));
}

}  // namespace

std::optional<LoweredMatrixProduct> lowered_product(const Node& node, const Graph& graph) {
  if (node.op_type != "EmbeddingBag" || !node.domain.empty() || node.inputs.size() < 2 ||
      node.outputs.empty() || node.inputs[0] < 0 || node.inputs[1] < 0 || node.outputs[0] < 0)
    return std::nullopt;
  const TensorType& table = graph.values[static_cast<size_t>(node.inputs[0])].type;
  const TensorType& indices = graph.values[static_cast<size_t>(node.inputs[1])].type;
  const TensorType& out = graph.values[static_cast<size_t>(node.outputs[0])].type;
  if (!is_static(table.shape) || !is_static(indices.shape) || !is_static(out.shape) ||
      table.shape.empty() || indices.shape.empty() || out.shape.empty())
    return std::nullopt;
  const int64_t rows = table.shape[0];
  const int64_t width = rows > 0 ? numel(table.shape) / rows : 0;
  const int64_t bags = out.shape[0], length = indices.shape[0];
  return LoweredMatrixProduct{bags, width, length,
                              static_cast<double>(bags) * static_cast<double>(length) *
                                  static_cast<double>(dtype_size(table.dtype))};
}

void add_tensor_rules(RuleTable& rules) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) rules[op] = lower_reshape;
  rules["Transpose"] = lower_transpose;
  rules["Concat"] = lower_concat;
  rules["Split"] = lower_split;
  rules["Slice"] = lower_slice;
  rules["Gather"] = lower_gather;
  rules["GatherElements"] = lower_gather_elements;
  rules["EmbeddingBag"] = lower_embedding_bag;
  rules["ScatterElements"] = lower_scatter_elements;
  rules["ScatterND"] = lower_scatter_nd;
  rules["Expand"] = lower_expand;
  rules["Tile"] = lower_tile;
  rules["Pad"] = lower_pad;
  rules["Shape"] = lower_shape;
  rules["Size"] = lower_size;
  rules["Constant"] = lower_constant;
  rules["ConstantOfShape"] = lower_constant_of_shape;
}

}  // namespace tandem::pjrt
