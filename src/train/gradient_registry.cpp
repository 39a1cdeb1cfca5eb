#include "train/gradient_registry.h"

#include <algorithm>

#include "ir/error.h"

namespace tandem::train {

int GradientContext::output_grad(size_t i) {
  if (i >= output_grads_.size()) refuse("output " + std::to_string(i) + " does not exist");
  if (output_grads_[i] < 0) {
    const int out = output(i);
    output_grads_[i] = builder.filled(0.0f, builder.shape(out), builder.dtype(out));
  }
  return output_grads_[i];
}

void GradientContext::refuse(const std::string& why) const {
  throw InputError(node.label() + ": cannot differentiate: " + why);
}

int64_t GradientContext::axis(int64_t axis, size_t rank) const {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) refuse("axis " + std::to_string(axis) + " is out of range");
  return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> GradientContext::constant_ints(size_t i) const {
  const int id = input(i);
  if (id < 0) return {};
  const Value& value = builder.graph().values[id];
  if (!value.is_constant()) refuse("its input '" + value.name + "' is not a constant");
  return value.constant.to_int64s();
}

bool GradientEntry::differentiable_input(int i) const {
  return every_input ||
         std::find(differentiable.begin(), differentiable.end(), i) != differentiable.end();
}

const GradientRegistry& GradientRegistry::instance() {
  static const GradientRegistry registry = [] {
    GradientRegistry r;
    register_elementwise_gradients(r);
    register_linalg_gradients(r);
    register_normalization_gradients(r);
    register_tensor_gradients(r);
    return r;
  }();
  return registry;
}

const GradientEntry* GradientRegistry::find(std::string_view op_type) const {
  auto it = entries_.find(op_type);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> GradientRegistry::op_types() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

void GradientRegistry::add(std::string op_type, std::vector<int> differentiable,
                           GradientRule rule) {
  entries_[std::move(op_type)] = {std::move(rule), std::move(differentiable), false};
}

void GradientRegistry::add_variadic(std::string op_type, GradientRule rule) {
  entries_[std::move(op_type)] = {std::move(rule), {}, true};
}

}  // namespace tandem::train
