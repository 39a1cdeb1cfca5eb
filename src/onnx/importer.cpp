#include "onnx/importer.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "ir/error.h"
#include "ir/infer.h"
#include "ir/op_schema.h"
#include "onnx/tensor_proto.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// Protobuf cannot parse messages of 2 GiB or more; weights beyond that live in external files.
constexpr uintmax_t kMaxModelFileBytes = (uintmax_t{1} << 31) - 1;

class Importer {
 public:
  Importer(const std::string& path, const ImportOptions& options)
      : options_(options), dims_(options.dims), weights_(fs::path(path).parent_path()) {
    for (const auto& [name, size] : options.dims)
      dim_sources_[name] = "--dim " + name + "=" + std::to_string(size);
  }

  // Binds the symbolic dims of the top-level inputs whose whole shape was given, checking each
  // given shape against the file's declaration and against every other binding of its dims.
  void bind_given_shapes(const onnx::GraphProto& proto);

  // The chain of graphs enclosing the one being converted.
  struct Scope {
    Graph* graph;
    const Scope* parent;
  };

  void convert_graph(const onnx::GraphProto& proto, Graph& graph, const Scope* parent,
                     bool top_level);

  std::vector<std::string> unbound_dims;

 private:
  int resolve(const std::string& name, Graph& graph, const Scope* parent);
  TensorType value_type(const onnx::ValueInfoProto& info, bool bind_symbols);
  Attribute convert_attribute(const onnx::AttributeProto& attr, Graph& graph, const Scope& scope);

  const ImportOptions& options_;
  std::map<std::string, int64_t> dims_;             // symbolic dim -> size, given or from shapes
  std::map<std::string, std::string> dim_sources_;  // symbolic dim -> what bound it
  ExternalWeights weights_;
};

std::string shape_source(const std::string& input, const GivenShape& given) {
  return given.source.empty() ? "--shape " + input + "=" + shape_str(given.dims) : given.source;
}

void Importer::bind_given_shapes(const onnx::GraphProto& proto) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto& init : proto.initializer()) initializers.insert(init.name());
  for (const onnx::ValueInfoProto& input : proto.input()) {
    const auto given = options_.shapes.find(input.name());
    if (given == options_.shapes.end() || initializers.count(input.name())) continue;
    const std::string source = shape_source(input.name(), given->second);
    const Shape& dims = given->second.dims;
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
    const auto& declared = input.type().tensor_type().shape().dim();
    if (declared.size() != static_cast<int>(dims.size())) {
      throw InputError(source, "rank " + std::to_string(dims.size()) + " does not match input '" +
                                   input.name() + "', of rank " + std::to_string(declared.size()) +
                                   " in the model");
    }
    for (int axis = 0; axis < declared.size(); ++axis) {
      const onnx::TensorShapeProto_Dimension& dim = declared[axis];
      if (dim.has_dim_value() && dim.dim_value() != dims[axis]) {
        throw InputError(source, "shape " + shape_str(dims) + " does not fit: dimension " +
                                     std::to_string(axis) + " is " + std::to_string(dims[axis]) +
                                     ", the model fixes it at " + std::to_string(dim.dim_value()) +
                                     " for input '" + input.name() + "'");
      }
      if (!dim.has_dim_param()) continue;
      const auto [bound, fresh] = dims_.emplace(dim.dim_param(), dims[axis]);
      if (fresh) {
        dim_sources_[dim.dim_param()] = source;
      } else if (bound->second != dims[axis]) {
        throw InputError(source, "gives '" + dim.dim_param() + "' = " + std::to_string(dims[axis]) +
                                     " (axis " + std::to_string(axis) + " of '" + input.name() +
                                     "'), but " + dim_sources_[dim.dim_param()] + " gives " +
                                     std::to_string(bound->second));
      }
    }
  }
}

TensorType Importer::value_type(const onnx::ValueInfoProto& info, bool bind_symbols) {
  if (!info.type().has_tensor_type()) {
    throw InputError("'" + info.name() +
                     "' is not a tensor (sequences and maps are not supported)");
  }
  const onnx::TypeProto_Tensor& tensor = info.type().tensor_type();
  TensorType type{dtype_from_onnx(tensor.elem_type(), info.name()), {}};
  if (!tensor.has_shape()) return type;
  for (const onnx::TensorShapeProto_Dimension& dim : tensor.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) {
        throw InputError("'" + info.name() + "' has a negative dimension " +
                         std::to_string(dim.dim_value()));
      }
      if (dim.dim_value() > kMaxElements) {
        throw InputError("'" + info.name() + "' has an absurd dimension " +
                         std::to_string(dim.dim_value()));
      }
      type.shape.push_back(dim.dim_value());
    } else if (bind_symbols && dim.has_dim_param()) {
      auto bound = dims_.find(dim.dim_param());
      if (bound != dims_.end()) {
        type.shape.push_back(bound->second);
      } else {
        if (std::find(unbound_dims.begin(), unbound_dims.end(), dim.dim_param()) ==
            unbound_dims.end()) {
          unbound_dims.push_back(dim.dim_param());
        }
        type.shape.push_back(1);
      }
    } else {
      type.shape.push_back(kDynamicDim);
    }
  }
  return type;
}

// Id of the value called `name` as seen from `graph`: its own, or an enclosing graph's, which
// then becomes an outer-scope value of every graph in between.
int Importer::resolve(const std::string& name, Graph& graph, const Scope* parent) {
  if (name.empty()) return -1;
  const int local = graph.find_value(name);
  if (local >= 0) return local;
  if (parent) {
    if (resolve(name, *parent->graph, parent->parent) >= 0) {
      const int id = graph.add_value(name);
      graph.values[id].outer_scope = true;
      return id;
    }
  }
  throw InputError("tensor '" + name + "' is used but never defined");
}

Attribute Importer::convert_attribute(const onnx::AttributeProto& attr, Graph& graph,
                                      const Scope& scope) {
  using onnx::AttributeProto;
  switch (attr.type()) {
    case AttributeProto::INT: return attr.i();
    case AttributeProto::FLOAT: return attr.f();
    case AttributeProto::STRING: return attr.s();
    case AttributeProto::INTS: return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
    case AttributeProto::FLOATS:
      return std::vector<float>(attr.floats().begin(), attr.floats().end());
    case AttributeProto::STRINGS:
      return std::vector<std::string>(attr.strings().begin(), attr.strings().end());
    case AttributeProto::TENSOR: return tensor_from_proto(attr.t(), weights_);
    case AttributeProto::GRAPH: {
      auto subgraph = std::make_shared<Graph>();
      subgraph->opset = graph.opset;
      convert_graph(attr.g(), *subgraph, &scope, false);
      return subgraph;
    }
    default:
      throw InputError("attribute '" + attr.name() + "' has an unsupported type " +
                       AttributeProto::AttributeType_Name(attr.type()));
  }
}

void Importer::convert_graph(const onnx::GraphProto& proto, Graph& graph, const Scope* parent,
                             bool top_level) {
  size_t total_weight_bytes = 0, loaded_weight_bytes = 0;
  for (const onnx::TensorProto& init : proto.initializer())
    total_weight_bytes += declared_bytes(init);
  for (const onnx::TensorProto& init : proto.initializer()) {
    const int id = graph.add_value(init.name());
    graph.values[id].constant = tensor_from_proto(init, weights_);
    graph.values[id].type = {graph.values[id].constant.dtype(), graph.values[id].constant.shape()};
    loaded_weight_bytes += declared_bytes(init);
    if (options_.progress && top_level) options_.progress(loaded_weight_bytes, total_weight_bytes);
  }
  for (const onnx::ValueInfoProto& input : proto.input()) {
    if (graph.find_value(input.name()) >= 0) continue;  // an initializer that may be overridden
    TensorType type = value_type(input, top_level);
    if (top_level) {
      auto given = options_.shapes.find(input.name());
      if (given != options_.shapes.end()) {
        if (!type.shape.empty() && given->second.dims.size() != type.shape.size()) {
          throw InputError(shape_source(input.name(), given->second),
                           "rank " + std::to_string(given->second.dims.size()) +
                               " does not match the model's rank " +
                               std::to_string(type.shape.size()));
        }
        type.shape = given->second.dims;
      }
    }
    graph.inputs.push_back(graph.add_value(input.name(), type));
  }
  Scope scope{&graph, parent};
  for (const onnx::NodeProto& proto_node : proto.node()) {
    Node node;
    node.name = proto_node.name();
    node.op_type = proto_node.op_type();
    node.domain = proto_node.domain() == "ai.onnx" ? "" : proto_node.domain();
    if (const OpSchema* schema = OpRegistry::instance().find(node.op_type);
        schema && schema->internal) {
      throw InputError(node.label() + ": unsupported op '" + node.op_type + "'");
    }
    for (const std::string& name : proto_node.input())
      node.inputs.push_back(resolve(name, graph, parent));
    for (const onnx::AttributeProto& attr : proto_node.attribute()) {
      node.attributes.emplace(attr.name(), convert_attribute(attr, graph, scope));
    }
    for (const std::string& name : proto_node.output()) {
      node.outputs.push_back(name.empty() ? -1 : graph.add_value(name));
    }
    graph.nodes.push_back(std::move(node));
  }
  for (const onnx::ValueInfoProto& output : proto.output()) {
    const int id = graph.find_value(output.name());
    if (id < 0) throw InputError("graph output '" + output.name() + "' is never produced");
    graph.outputs.push_back(id);
  }
  // Subgraph inputs declare their shapes; a body's carried values may have them only partly.
  if (!top_level) {
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      const onnx::ValueInfoProto& input = proto.input(static_cast<int>(i));
      if (input.type().has_tensor_type())
        graph.values[graph.inputs[i]].type = value_type(input, false);
    }
  }
  // Nodes may come in any order in the file; order them before inference.
  graph.sort_topologically();
}

std::vector<char> read_model_file(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) throw InputError(path, "no such file");
  if (fs::is_directory(status)) throw InputError(path, "is a directory, not an ONNX model");
  const uintmax_t size = fs::file_size(path, error);
  if (error) throw InputError(path, "cannot read: " + error.message());
  if (size == 0) throw InputError(path, "is empty, not an ONNX model");
  if (size > kMaxModelFileBytes)
    throw InputError(path, "is over 2 GiB; keep large weights in external data files");
  std::vector<char> bytes(size);
  std::ifstream file(path, std::ios::binary);
  if (!file.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw InputError(path, "cannot read");
  return bytes;
}

int default_opset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return static_cast<int>(opset.version());
  }
  throw InputError("the model imports no default-domain opset");
}

// libonnx's checker, after our own conversion has validated weights and external data with
// clearer messages. libonnx 1.12 knows op definitions up to opset 17 only.
void check_with_libonnx(onnx::ModelProto& proto, const std::string& path) {
  if (default_opset(proto) > 17) return;
  // The 1.12 checker requires a shape on every graph output, which the format does not.
  for (onnx::ValueInfoProto& output : *proto.mutable_graph()->mutable_output()) {
    if (output.type().has_tensor_type() && !output.type().tensor_type().has_shape()) {
      output.mutable_type()->mutable_tensor_type()->mutable_shape();
    }
  }
  onnx::checker::CheckerContext context;
  context.set_ir_version(static_cast<int>(proto.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const onnx::OperatorSetIdProto& opset : proto.opset_import())
    opsets[opset.domain()] = static_cast<int>(opset.version());
  context.set_opset_imports(opsets);
  context.set_model_dir(fs::path(path).parent_path().string());
  try {
    onnx::checker::LexicalScopeContext scope;
    onnx::checker::check_graph(proto.graph(), context, scope);
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw InputError("invalid ONNX model: " + what.substr(0, what.find('\n')));
  }
}

std::vector<std::string> dim_names(const onnx::ValueInfoProto& info) {
  std::vector<std::string> names;
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return names;
  for (const auto& dim : info.type().tensor_type().shape().dim())
    names.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  return names;
}

// The symbolic dims the file declares on the graph's inputs and outputs, and their bound sizes.
void record_dim_names(const onnx::GraphProto& proto, ImportedModel& model) {
  const Graph& graph = model.graph;
  for (int id : graph.inputs) {
    std::vector<std::string> names;
    for (const onnx::ValueInfoProto& input : proto.input()) {
      if (input.name() == graph.values[id].name) names = dim_names(input);
    }
    const Shape& shape = graph.values[id].type.shape;
    for (size_t axis = 0; axis < names.size() && axis < shape.size(); ++axis) {
      if (!names[axis].empty()) model.bound_dims.emplace(names[axis], shape[axis]);
    }
    model.input_dim_names.push_back(std::move(names));
  }
  for (const onnx::ValueInfoProto& output : proto.output())
    model.output_dim_names.push_back(dim_names(output));
}

}  // namespace

ImportedModel import_onnx(const std::string& path, const ImportOptions& options) {
  try {
    std::vector<char> bytes = read_model_file(path);
    onnx::ModelProto proto;
    if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !proto.has_graph() ||
        proto.opset_import_size() == 0) {
      throw InputError("not an ONNX model (truncated or corrupt protobuf?)");
    }
    const int opset = default_opset(proto);
    if (opset < kMinOpset || opset > kMaxOpset) {
      throw InputError("opset " + std::to_string(opset) + " is not supported (supported: " +
                       std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
    }
    ImportedModel model;
    model.path = path;
    model.ir_version = proto.ir_version();
    model.producer = proto.producer_name() +
                     (proto.producer_version().empty() ? "" : " " + proto.producer_version());
    model.graph.opset = opset;
    for (const auto& [name, given] : options.shapes) {
      const auto& inputs = proto.graph().input();
      if (std::none_of(inputs.begin(), inputs.end(),
                       [&wanted = name](const onnx::ValueInfoProto& input) {
                         return input.name() == wanted;  // clang < 16 cannot capture a binding
                       })) {
        throw InputError(shape_source(name, given), "the model has no input '" + name + "'");
      }
    }
    Importer importer(path, options);
    importer.bind_given_shapes(proto.graph());
    importer.convert_graph(proto.graph(), model.graph, nullptr, true);
    check_with_libonnx(proto, path);
    model.unbound_dims = importer.unbound_dims;
    for (const onnx::TensorProto& init : proto.graph().initializer())
      model.initializers.push_back(init.name());
    record_dim_names(proto.graph(), model);
    const size_t imported = model.graph.nodes.size();
    infer_graph(model.graph, options.keep_nodes);
    model.folded_nodes = imported - model.graph.nodes.size();
    return model;
  } catch (InputError& e) {
    if (e.subject().empty()) e.set_subject(path);
    throw;
  }
}

}  // namespace tandem
