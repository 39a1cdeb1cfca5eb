// Schemas of the ops that normalise or scan along axes: Softmax, LogSoftmax, LayerNormalization,
// InstanceNormalization, LpNormalization, BatchNormalization (inference) and CumSum.
#include <algorithm>
#include <iterator>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/ops/reduction_internal.h"

namespace tandem::reduction {
namespace {

bool known_and_different(int64_t a, int64_t b) {
  return a != kDynamicDim && b != kDynamicDim && a != b;
}

std::vector<InferredOutput> infer_softmax(const InferContext& ctx) {
  // Before opset 13 Softmax flattened the input to 2-D around `axis`; the importer's range is 13+.
  if (ctx.opset() < 13) ctx.fail("the 2-D semantics of opsets before 13 are not supported");
  require_floating(ctx, 0, "input");
  const ValueInfo& data = ctx.input(0);
  checked_axis(ctx, ctx.node().attr_int("axis", -1), static_cast<int64_t>(data.shape.size()),
               "axis");
  return {{data.dtype, data.shape, {}}};
}

// Scale and bias of LayerNormalization broadcast over the normalised dims [axis, rank) only.
void check_layer_norm_param(const InferContext& ctx, size_t index, const Shape& data_shape,
                            size_t axis, std::string_view what) {
  require_floating(ctx, index, what);
  const Shape& param = ctx.input(index).shape;
  if (param.size() > data_shape.size()) ctx.fail(std::string(what) + " has a higher rank than X");
  const size_t normalised_rank = data_shape.size() - axis;
  for (size_t k = 0; k < param.size(); ++k) {
    const int64_t param_dim = param[param.size() - 1 - k];
    const int64_t data_dim = data_shape[data_shape.size() - 1 - k];
    const bool broadcasts = param_dim == 1 || param_dim == kDynamicDim;
    if (k >= normalised_rank ? !broadcasts
                             : !broadcasts && known_and_different(param_dim, data_dim)) {
      ctx.fail(std::string(what) + " of shape " + shape_str(param) +
               " does not broadcast to the normalised dimensions of X " + shape_str(data_shape));
    }
  }
}

std::vector<InferredOutput> infer_layer_norm(const InferContext& ctx) {
  require_floating(ctx, 0, "X");
  const ValueInfo& data = ctx.input(0);
  const auto rank = static_cast<int64_t>(data.shape.size());
  const auto axis =
      static_cast<size_t>(checked_axis(ctx, ctx.node().attr_int("axis", -1), rank, "axis"));
  check_layer_norm_param(ctx, 1, data.shape, axis, "Scale");
  if (ctx.has_input(2)) check_layer_norm_param(ctx, 2, data.shape, axis, "B");
  if (ctx.node().outputs.size() > 3) ctx.fail("has at most 3 outputs");
  Shape stats_shape = data.shape;
  std::fill(stats_shape.begin() + static_cast<int64_t>(axis), stats_shape.end(), 1);
  std::vector<InferredOutput> outputs{{data.dtype, data.shape, {}}};
  for (size_t i = 1; i < ctx.node().outputs.size(); ++i) {
    outputs.push_back({DType::kFloat32, stats_shape, {}});
  }
  return outputs;
}

// A per-channel parameter: a 1-D tensor of C elements.
void check_channel_param(const InferContext& ctx, size_t index, int64_t channels,
                         std::string_view what) {
  require_floating(ctx, index, what);
  const Shape& shape = ctx.input(index).shape;
  if (shape.size() != 1 || known_and_different(shape[0], channels)) {
    ctx.fail(std::string(what) + " must have shape [" +
             (channels == kDynamicDim ? std::string("C") : std::to_string(channels)) + "], not " +
             shape_str(shape));
  }
}

std::vector<InferredOutput> infer_instance_norm(const InferContext& ctx) {
  require_floating(ctx, 0, "input");
  const ValueInfo& data = ctx.input(0);
  if (data.shape.size() < 3) ctx.fail("input must have rank 3 or more (N x C x D1...)");
  check_channel_param(ctx, 1, data.shape[1], "scale");
  check_channel_param(ctx, 2, data.shape[1], "B");
  return {{data.dtype, data.shape, {}}};
}

std::vector<InferredOutput> infer_lp_norm(const InferContext& ctx) {
  require_floating(ctx, 0, "input");
  const ValueInfo& data = ctx.input(0);
  checked_axis(ctx, ctx.node().attr_int("axis", -1), static_cast<int64_t>(data.shape.size()),
               "axis");
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, not " + std::to_string(p));
  return {{data.dtype, data.shape, {}}};
}

std::vector<InferredOutput> infer_batch_norm(const InferContext& ctx) {
  require_floating(ctx, 0, "X");
  const ValueInfo& data = ctx.input(0);
  if (data.shape.size() < 2) ctx.fail("X must have rank 2 or more (N x C x D1...)");
  const int64_t channels = data.shape[1];
  check_channel_param(ctx, 1, channels, "scale");
  check_channel_param(ctx, 2, channels, "B");
  check_channel_param(ctx, 3, channels, "input_mean");
  check_channel_param(ctx, 4, channels, "input_var");
  const std::vector<int>& outputs = ctx.node().outputs;
  const bool extra_outputs =
      std::any_of(outputs.begin() + std::min<ptrdiff_t>(1, std::ssize(outputs)), outputs.end(),
                  [](int id) { return id >= 0; });
  if (ctx.opset() < 14) {
    // Opset 9 semantics: mean, var, saved_mean and saved_var exist only in training.
    if (extra_outputs) ctx.fail("outputs beyond Y exist only in training, which is not supported");
  } else {
    if (ctx.node().attr_int("training_mode", 0) != 0) {
      ctx.fail("training_mode=1 is not supported; only inference");
    }
    if (outputs.size() > 3) ctx.fail("has at most 3 outputs from opset 14");
  }
  // Without training the running statistics pass through unchanged.
  std::vector<InferredOutput> inferred{{data.dtype, data.shape, {}}};
  for (size_t i = 1; i < outputs.size(); ++i) {
    const ValueInfo& stat = ctx.input(i == 1 ? 3 : 4);
    inferred.push_back({stat.dtype, stat.shape, {}});
  }
  return inferred;
}

std::vector<InferredOutput> infer_cumsum(const InferContext& ctx) {
  const ValueInfo& data = ctx.input(0);
  if (data.dtype != DType::kFloat32 && data.dtype != DType::kFloat64 &&
      data.dtype != DType::kFloat16 && data.dtype != DType::kBFloat16 &&
      data.dtype != DType::kInt32 && data.dtype != DType::kInt64) {
    ctx.fail("does not accept " + std::string(dtype_name(data.dtype)) + " data");
  }
  const ValueInfo& axis = ctx.input(1);
  if (axis.dtype != DType::kInt64 && axis.dtype != DType::kInt32) {
    ctx.fail("axis must be int32 or int64, not " + std::string(dtype_name(axis.dtype)));
  }
  if (axis.shape.size() > 1 || (axis.shape.size() == 1 && known_and_different(axis.shape[0], 1))) {
    ctx.fail("axis must hold a single value, not shape " + shape_str(axis.shape));
  }
  if (const Tensor* value = ctx.input_value(1)) {
    checked_axis(ctx, value->to_int64s().at(0), static_cast<int64_t>(data.shape.size()), "axis");
  }
  for (const char* flag : {"exclusive", "reverse"}) {
    const int64_t value = ctx.node().attr_int(flag, 0);
    if (value != 0 && value != 1) ctx.fail(std::string(flag) + " must be 0 or 1");
  }
  return {{data.dtype, data.shape, {}}};
}

}  // namespace

void register_normalization_ops(OpRegistry& registry) {
  for (const char* name : {"Softmax", "LogSoftmax"}) {
    registry.add({.name = name,
                  .min_inputs = 1,
                  .max_inputs = 1,
                  .infer = infer_softmax,
                  .cost = per_input_element_cost(5.0)});
  }
  registry.add({.name = "LayerNormalization",
                .min_inputs = 2,
                .max_inputs = 3,
                .infer = infer_layer_norm,
                .cost = per_input_element_cost(8.0)});
  registry.add({.name = "InstanceNormalization",
                .min_inputs = 3,
                .max_inputs = 3,
                .infer = infer_instance_norm,
                .cost = per_input_element_cost(8.0)});
  registry.add({.name = "LpNormalization",
                .min_inputs = 1,
                .max_inputs = 1,
                .infer = infer_lp_norm,
                .cost = per_input_element_cost(3.0)});
  registry.add({.name = "BatchNormalization",
                .min_inputs = 5,
                .max_inputs = 5,
                .infer = infer_batch_norm,
                .cost = per_input_element_cost(2.0)});
  registry.add({.name = "CumSum",
                .min_inputs = 2,
                .max_inputs = 2,
                .infer = infer_cumsum,
                .cost = per_input_element_cost(1.0)});
}

}  // namespace tandem::reduction
