#include "ir/graph.h"

#include <algorithm>

#include "ir/error.h"

namespace tandem {
namespace {

template <typename T>
const T* find_attr(const Node& node, std::string_view attr) {
  auto it = node.attributes.find(attr);
  if (it == node.attributes.end()) return nullptr;
  const T* value = std::get_if<T>(&it->second);
  if (!value)
    throw InputError(node.label() + ": attribute '" + std::string(attr) + "' has the wrong type");
  return value;
}

}  // namespace

int64_t Node::attr_int(std::string_view attr, int64_t fallback) const {
  const int64_t* value = find_attr<int64_t>(*this, attr);
  return value ? *value : fallback;
}

float Node::attr_float(std::string_view attr, float fallback) const {
  const float* value = find_attr<float>(*this, attr);
  return value ? *value : fallback;
}

std::string Node::attr_string(std::string_view attr, std::string fallback) const {
  const std::string* value = find_attr<std::string>(*this, attr);
  return value ? *value : fallback;
}

std::vector<int64_t> Node::attr_ints(std::string_view attr, std::vector<int64_t> fallback) const {
  const auto* value = find_attr<std::vector<int64_t>>(*this, attr);
  return value ? *value : fallback;
}

std::vector<float> Node::attr_floats(std::string_view attr) const {
  const auto* value = find_attr<std::vector<float>>(*this, attr);
  return value ? *value : std::vector<float>{};
}

const Tensor* Node::attr_tensor(std::string_view attr) const {
  return find_attr<Tensor>(*this, attr);
}

std::shared_ptr<Graph> Node::attr_graph(std::string_view attr) const {
  const auto* value = find_attr<std::shared_ptr<Graph>>(*this, attr);
  return value ? *value : nullptr;
}

std::string Node::label() const {
  return (name.empty() ? std::string("<unnamed>") : name) + " (" + op_type + ")";
}

int Graph::add_value(std::string name, TensorType type) {
  if (!name.empty() && index_.count(name)) {
    throw InputError("tensor '" + name + "' is defined twice");
  }
  const int id = static_cast<int>(values.size());
  if (!name.empty()) index_.emplace(name, id);
  values.push_back(Value{std::move(name), std::move(type), {}, -1, false});
  return id;
}

int Graph::find_value(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> Graph::outer_scope_values() const {
  std::vector<int> ids;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].outer_scope) ids.push_back(static_cast<int>(i));
  }
  return ids;
}

std::vector<std::string> Graph::captured_names(const Graph& subgraph) {
  std::vector<std::string> names;
  for (int id : subgraph.outer_scope_values()) names.push_back(subgraph.values[id].name);
  return names;
}

void Graph::erase_nodes(const std::vector<bool>& erased) {
  size_t kept = 0;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (erased[n]) continue;
    if (kept != n) nodes[kept] = std::move(nodes[n]);  // self-move would empty it
    ++kept;
  }
  nodes.resize(kept);
}

void Graph::sort_topologically() {
  const size_t count = nodes.size();
  std::vector<int> producer(values.size(), -1);
  for (size_t n = 0; n < count; ++n) {
    for (int out : nodes[n].outputs) {
      if (out < 0) continue;
      if (producer[out] != -1) {
        throw InputError("tensor '" + values[out].name + "' is produced by two nodes");
      }
      producer[out] = static_cast<int>(n);
    }
  }
  // Dependencies of a node: producers of its inputs and of values its subgraphs capture.
  std::vector<std::vector<int>> users(count);
  std::vector<int> pending(count, 0);
  auto depend = [&](size_t n, int value) {
    if (value < 0) return;
    const Value& v = values[value];
    if (producer[value] >= 0) {
      users[producer[value]].push_back(static_cast<int>(n));
      ++pending[n];
    } else if (!v.is_constant() && !v.outer_scope &&
               std::find(inputs.begin(), inputs.end(), value) == inputs.end()) {
      throw InputError(nodes[n].label() + ": input '" + v.name + "' is not produced by any node");
    }
  };
  for (size_t n = 0; n < count; ++n) {
    for (int in : nodes[n].inputs) depend(n, in);
    for (const auto& [key, attr] : nodes[n].attributes) {
      if (const auto* sub = std::get_if<std::shared_ptr<Graph>>(&attr)) {
        for (const std::string& name : captured_names(**sub)) depend(n, find_value(name));
      }
    }
  }
  std::vector<int> ready;
  for (size_t n = count; n-- > 0;) {
    if (pending[n] == 0) ready.push_back(static_cast<int>(n));
  }
  std::vector<Node> sorted;
  sorted.reserve(count);
  std::vector<bool> done(count, false);
  while (!ready.empty()) {
    const int n = ready.back();
    ready.pop_back();
    done[n] = true;
    sorted.push_back(std::move(nodes[n]));
    for (int user : users[n]) {
      if (--pending[user] == 0) ready.push_back(user);
    }
  }
  if (sorted.size() != count) {
    for (size_t n = 0; n < count; ++n) {
      if (!done[n]) throw InputError("the graph has a cycle through node " + nodes[n].label());
    }
  }
  nodes = std::move(sorted);
  for (Value& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int out : nodes[n].outputs) {
      if (out >= 0) values[out].producer = static_cast<int>(n);
    }
  }
}

std::vector<int> Graph::values_read(const Node& node) const {
  std::vector<int> read;
  for (int in : node.inputs) {
    if (in >= 0) read.push_back(in);
  }
  for (const auto& [key, attr] : node.attributes) {
    if (const auto* sub = std::get_if<std::shared_ptr<Graph>>(&attr)) {
      for (const std::string& name : captured_names(**sub)) {
        const int id = find_value(name);
        if (id >= 0) read.push_back(id);
      }
    }
  }
  std::sort(read.begin(), read.end());
  read.erase(std::unique(read.begin(), read.end()), read.end());
  return read;
}

std::vector<int> Graph::last_uses() const {
  std::vector<int> last(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int id : values_read(nodes[n])) last[id] = static_cast<int>(n);
  }
  for (int out : outputs) last[out] = static_cast<int>(nodes.size());
  return last;
}

}  // namespace tandem
