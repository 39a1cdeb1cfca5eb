#include <unistd.h>

#include <cstdio>

#include "cli/commands.h"
#include "ir/error.h"
#include "onnx/batch_split.h"
#include "runtime/constant_folding.h"
#include "util/npy.h"

namespace tandem::cli {

std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw InputError(option + " " + text, "expected NAME=VALUE");
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

namespace {

int64_t parse_dimension(const std::string& text, const std::string& option) {
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || value < 0 || value > kMaxElements) {
    throw InputError(option, "'" + text + "' is not a valid dimension");
  }
  return value;
}

}  // namespace

std::map<std::string, Tensor> read_input_files(const ModelOptions& options) {
  std::map<std::string, Tensor> tensors;
  for (const std::string& text : options.inputs) {
    auto [name, file] = split_assignment(text, "--input");
    if (tensors.count(name))
      throw InputError("--input " + text, "input '" + name + "' given twice");
    tensors[name] = read_npy(file);
  }
  return tensors;
}

ImportOptions import_options(const ModelOptions& options,
                             const std::map<std::string, Tensor>& input_files) {
  ImportOptions import;
  for (const std::string& dim : options.dims) {
    auto [name, value] = split_assignment(dim, "--dim");
    import.dims[name] = parse_dimension(value, "--dim " + dim);
  }
  for (const std::string& shape : options.shapes) {
    auto [name, value] = split_assignment(shape, "--shape");
    Shape dims;
    size_t start = 0;
    while (start <= value.size()) {
      const size_t end = std::min(value.find('x', start), value.size());
      dims.push_back(parse_dimension(value.substr(start, end - start), "--shape " + shape));
      start = end + 1;
    }
    import.shapes[name] = GivenShape(dims, "--shape " + shape);
  }
  // An input file's shape binds the input (and the symbolic dims it declares), as ONNX Runtime
  // takes it; a --shape for the same input must agree.
  for (const std::string& text : options.inputs) {
    auto [name, file] = split_assignment(text, "--input");
    const auto known = input_files.find(name);
    const Shape dims = known != input_files.end() ? known->second.shape() : read_npy(file).shape();
    const auto given = import.shapes.find(name);
    if (given != import.shapes.end() && given->second.dims != dims) {
      throw InputError(file, "its shape " + shape_str(dims) + " differs from " +
                                 given->second.source + " for input '" + name + "'");
    }
    import.shapes[name] = GivenShape(dims, file);
  }
  return import;
}

ImportedModel load_model(const ModelOptions& options,
                         const std::map<std::string, Tensor>& input_files) {
  ImportOptions import = import_options(options, input_files);
  const bool interactive = isatty(fileno(stderr));
  import.progress = [ interactive, last = -1 ](size_t done, size_t total) mutable {
    if (!interactive || total < (size_t{64} << 20)) return;
  const int percent =
      static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
  if (percent == last) return;
  last = percent;
  std::fprintf(stderr, "\rloading weights %3d%%%s", percent, done == total ? "\n" : "");
};
ImportedModel model = import_onnx(options.model, import);
// A --dim that names no symbolic dimension would otherwise be silently ignored.
for (const std::string& dim : options.every_dim_named ? options.dims : std::vector<std::string>{}) {
  const std::string name = split_assignment(dim, "--dim").first;
  if (model.bound_dims.count(name)) continue;
  std::string known;
  for (const auto& [symbol, size] : model.bound_dims) known += (known.empty() ? "" : ", ") + symbol;
  throw InputError("--dim " + dim,
                   "the model's inputs have no symbolic dimension '" + name + "' (" +
                       (known.empty() ? "their shapes are all fixed" : "they have: " + known) +
                       ")");
}
for (const std::string& name : model.unbound_dims) {
  if (!options.json)
    std::fprintf(stderr, "note: symbolic dimension '%s' bound to 1 (set it with --dim %s=N)\n",
                 name.c_str(), name.c_str());
}
return model;
}  // namespace tandem::cli

BatchSplit batch_split_of(const ModelOptions& options,
                          const std::map<std::string, Tensor>& input_files,
                          const ImportedModel& model, bool fuse) {
  std::function<void(Graph&)> prepare;
  if (fuse) prepare = [](Graph& graph) { prepare_for_inference(graph); };
  return find_batch_split(model, import_options(options, input_files), prepare);
}

}  // namespace tandem::cli
