#include "onnx/export.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "ir/error.h"
#include "onnx/tensor_proto.h"

namespace tandem {
namespace {

void set_raw(onnx::TensorProto& proto, const Tensor& host) {
  proto.clear_float_data();
  proto.clear_double_data();
  proto.clear_int32_data();
  proto.clear_int64_data();
  proto.clear_external_data();
  proto.set_data_location(onnx::TensorProto::DEFAULT);
  proto.set_raw_data(host.raw(), host.nbytes());
}

}  // namespace

void write_with_initializers(const std::string& source, const std::string& destination,
                             const std::map<std::string, Tensor>& values) {
  std::ifstream in(source, std::ios::binary);
  if (!in) throw InputError(source, "cannot read the model");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in) || !model.has_graph())
    throw InputError(source, "not an ONNX model (truncated or corrupt protobuf?)");
  const ExternalWeights weights(std::filesystem::path(source).parent_path());
  std::set<std::string> written;
  for (onnx::TensorProto& init : *model.mutable_graph()->mutable_initializer()) {
    auto value = values.find(init.name());
    if (value == values.end()) {
      if (init.data_location() == onnx::TensorProto::EXTERNAL)
        set_raw(init, tensor_from_proto(init, weights));
      continue;
    }
    const Tensor host = value->second.to_host();
    const Tensor original = tensor_from_proto(init, weights);
    if (original.dtype() != host.dtype() || original.shape() != host.shape()) {
      throw InputError(source, "initializer '" + init.name() + "' is " +
                                   std::string(dtype_name(original.dtype())) + " " +
                                   shape_str(original.shape()) + ", the value to write " +
                                   std::string(dtype_name(host.dtype())) + " " +
                                   shape_str(host.shape()));
    }
    set_raw(init, host);
    written.insert(init.name());
  }
  for (const auto& [name, tensor] : values)
    if (!written.count(name)) throw InputError(source, "has no initializer '" + name + "'");
  if (model.ByteSizeLong() > static_cast<size_t>(INT32_MAX))
    throw InputError(destination, "the model would pass protobuf's 2 GiB limit");
  // Written beside and renamed, so that a checkpoint interrupted half-way leaves the last one.
  const std::string partial = destination + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out) || !out.flush())
      throw InputError(destination, "cannot write the model");
  }
  std::error_code error;
  std::filesystem::rename(partial, destination, error);
  if (error) throw InputError(destination, "cannot write the model: " + error.message());
}

}  // namespace tandem
