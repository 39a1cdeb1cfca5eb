#include "ir/op_schema.h"

#include <algorithm>

#include "ir/error.h"
#include "ir/ops/families.h"

namespace tandem {

const ValueInfo& InferContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return inputs_[i];
}

void InferContext::fail(const std::string& message) const {
  throw InputError(node_.label() + ": " + message);
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_op_families(r);
    return r;
  }();
  return registry;
}

const OpSchema* OpRegistry::find(std::string_view op_type) const {
  auto it = std::lower_bound(schemas_.begin(), schemas_.end(), op_type,
                             [](const OpSchema& s, std::string_view key) { return s.name < key; });
  return it != schemas_.end() && it->name == op_type ? &*it : nullptr;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> names;
  for (const OpSchema& s : schemas_) names.push_back(s.name);
  return names;
}

void OpRegistry::add(OpSchema schema) {
  auto it =
      std::lower_bound(schemas_.begin(), schemas_.end(), schema.name,
                       [](const OpSchema& s, const std::string& key) { return s.name < key; });
  if (it != schemas_.end() && it->name == schema.name) {
    throw std::logic_error("op schema registered twice: " + schema.name);
  }
  schemas_.insert(it, std::move(schema));
}

double type_bytes(const TensorType& type) {
  double count = 1;
  for (int64_t d : type.shape) count *= d < 0 ? 1.0 : static_cast<double>(d);
  return count * static_cast<double>(dtype_size(type.dtype));
}

bool is_elementwise(const Node& node) {
  const OpSchema* schema =
      node.domain.empty() ? OpRegistry::instance().find(node.op_type) : nullptr;
  return schema && schema->elementwise;
}

bool is_view(const Node& node) {
  const OpSchema* schema =
      node.domain.empty() ? OpRegistry::instance().find(node.op_type) : nullptr;
  return schema && schema->output_aliases_input;
}

OpCost default_cost(const Node&, std::span<const TensorType> inputs,
                    std::span<const TensorType> outputs) {
  OpCost cost;
  for (const TensorType& t : inputs) cost.bytes += type_bytes(t);
  for (const TensorType& t : outputs) {
    cost.bytes += type_bytes(t);
    if (t.dtype != DType::kUndefined) cost.flops += type_bytes(t) / dtype_size(t.dtype);
  }
  return cost;
}

}  // namespace tandem
