#include "python/arrays.h"

#include <nanobind/stl/string.h>

#include <optional>
#include <set>

#include "ir/error.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tandem::python {
namespace {

struct DTypePair {
  DType dtype;
  nb::dlpack::dtype code;
};

// Every element type both sides have (numpy has no bfloat16).
const std::vector<DTypePair>& dtype_pairs() {
  using nb::dlpack::dtype_code;
  static const std::vector<DTypePair> pairs = {
      {DType::kFloat32, {static_cast<uint8_t>(dtype_code::Float), 32, 1}},
      {DType::kFloat16, {static_cast<uint8_t>(dtype_code::Float), 16, 1}},
      {DType::kFloat64, {static_cast<uint8_t>(dtype_code::Float), 64, 1}},
      {DType::kInt8, {static_cast<uint8_t>(dtype_code::Int), 8, 1}},
      {DType::kInt16, {static_cast<uint8_t>(dtype_code::Int), 16, 1}},
      {DType::kInt32, {static_cast<uint8_t>(dtype_code::Int), 32, 1}},
      {DType::kInt64, {static_cast<uint8_t>(dtype_code::Int), 64, 1}},
      {DType::kUInt8, {static_cast<uint8_t>(dtype_code::UInt), 8, 1}},
      {DType::kBool, {static_cast<uint8_t>(dtype_code::Bool), 8, 1}},
  };
  return pairs;
}

std::optional<DType> tandem_dtype(nb::dlpack::dtype code) {
  for (const DTypePair& pair : dtype_pairs()) {
    if (pair.code == code) return pair.dtype;
  }
  return std::nullopt;
}

nb::dlpack::dtype dlpack_dtype(DType dtype, const std::string& what) {
  for (const DTypePair& pair : dtype_pairs()) {
    if (pair.dtype == dtype) return pair.code;
  }
  throw InputError(what,
                   "its element type " + std::string(dtype_name(dtype)) + " has no numpy dtype");
}

std::string input_names(const Graph& graph) {
  std::string names;
  for (int id : graph.inputs) names += (names.empty() ? "" : ", ") + graph.values[id].name;
  return names;
}

Shape shape_of(const InputArray& array) {
  Shape shape;
  for (size_t axis = 0; axis < array.ndim(); ++axis)
    shape.push_back(static_cast<int64_t>(array.shape(axis)));
  return shape;
}

}  // namespace

std::vector<InputArray> input_arrays(const Graph& graph, const nb::dict& inputs) {
  std::set<std::string> names;
  for (int id : graph.inputs) names.insert(graph.values[id].name);
  for (auto [key, value] : inputs) {
    if (!nb::isinstance<nb::str>(key)) throw InputError("inputs", "keys must be input names (str)");
    const std::string name = nb::cast<std::string>(key);
    if (!names.count(name))
      throw InputError("inputs['" + name + "']", "the model has no input '" + name +
                                                     "' (its inputs: " + input_names(graph) + ")");
  }
  const nb::module_ numpy = nb::module_::import_("numpy");
  const nb::object contiguous = numpy.attr("ascontiguousarray");
  std::vector<InputArray> arrays;
  for (int id : graph.inputs) {
    const std::string& name = graph.values[id].name;
    const std::string where = "inputs['" + name + "']";
    if (!inputs.contains(name.c_str()))
      throw InputError("inputs", "input '" + name + "' is missing (the model's inputs: " +
                                     input_names(graph) + ")");
    // A list or scalar takes the input's dtype; an array keeps its own (and is checked).
    const nb::handle given = inputs[name.c_str()];
    const bool is_array = nb::isinstance(given, numpy.attr("ndarray"));
    nb::object array;
    try {
      array = is_array ? contiguous(given)
                       : contiguous(given, "dtype"_a = numpy_dtype(graph.values[id].type.dtype));
    } catch (const nb::python_error& error) {
      throw InputError(where, "not an array of " +
                                  std::string(dtype_name(graph.values[id].type.dtype)) + ": " +
                                  error.what());
    }
    InputArray converted;
    if (!nb::try_cast(array, converted) || !tandem_dtype(converted.dtype()))
      throw InputError(where, "dtype " + nb::cast<std::string>(array.attr("dtype").attr("name")) +
                                  " is none Tandem runs (float16/32/64, int8-64, uint8, bool)");
    arrays.push_back(std::move(converted));
  }
  return arrays;
}

std::vector<Shape> shapes_of(const std::vector<InputArray>& arrays) {
  std::vector<Shape> shapes;
  for (const InputArray& array : arrays) shapes.push_back(shape_of(array));
  return shapes;
}

std::vector<Tensor> input_tensors(const Graph& graph, const std::vector<InputArray>& arrays) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Value& value = graph.values[graph.inputs[i]];
    const std::string where = "inputs['" + value.name + "']";
    const DType dtype = *tandem_dtype(arrays[i].dtype());
    if (dtype != value.type.dtype)
      throw InputError(where, "dtype " + std::string(dtype_name(dtype)) +
                                  " does not match input '" + value.name + "' (" +
                                  std::string(dtype_name(value.type.dtype)) + ")");
    const Shape shape = shape_of(arrays[i]);
    if (shape != value.type.shape)
      throw InputError(where, "shape " + shape_str(shape) + " does not match input '" + value.name +
                                  "' (" + shape_str(value.type.shape) + ")");
    // Kernels only read a graph's inputs; the array outlives the run (the caller holds it).
    tensors.push_back(
        Tensor::wrap(dtype, shape, const_cast<void*>(arrays[i].data()), nullptr, nullptr));
  }
  return tensors;
}

nb::dict output_arrays(const Graph& graph, std::vector<Tensor>&& outputs) {
  nb::dict result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph.values[graph.outputs[i]].name;
    Tensor host = outputs[i].to_host();
    outputs[i] = Tensor();
    // A view of an input or of a constant, or storage the executor still holds, is copied.
    if (!host.owns_storage_alone()) host = host.clone();
    const nb::dlpack::dtype dtype = dlpack_dtype(host.dtype(), "output '" + name + "'");
    std::vector<size_t> shape(host.shape().begin(), host.shape().end());
    auto* owner = new Tensor(std::move(host));
    nb::capsule keep(owner, [](void* tensor) noexcept { delete static_cast<Tensor*>(tensor); });
    nb::ndarray<nb::numpy> array(owner->raw(), shape.size(), shape.data(), keep, nullptr, dtype);
    result[name.c_str()] = array.cast();
  }
  return result;
}

nb::object numpy_dtype(DType dtype) {
  const nb::dlpack::dtype code = dlpack_dtype(dtype, "dtype");
  static const char* kNames[] = {"int", "uint", "float"};
  const std::string kind =
      code.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool) ? "bool" : kNames[code.code];
  return nb::module_::import_("numpy").attr("dtype")(
      kind == "bool" ? kind : kind + std::to_string(code.bits));
}

}  // namespace tandem::python
