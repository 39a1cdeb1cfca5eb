#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>

#include "ir/graph.h"

namespace tandem {

// An input's whole shape as the user gave it, and where from (for errors naming both sides of
// a conflict): "--shape x=8x3x224x224", or the file's path when taken from an input file.
struct GivenShape {
  GivenShape() = default;
  GivenShape(Shape dims, std::string source = "")
      : dims(std::move(dims)), source(std::move(source)) {}
  Shape dims;
  std::string source;
};

struct ImportOptions {
  std::map<std::string, int64_t> dims;       // symbolic dimension name -> size (--dim batch=8)
  std::map<std::string, GivenShape> shapes;  // input name -> full shape; binds its symbols too
  // Nodes to keep as nodes even where shape inference could fold them into constants: a model
  // re-imported at another batch keeps the nodes it had (folding depends on sizes).
  std::set<std::string> keep_nodes;
  // Called while loading large weights: bytes read so far and in total.
  std::function<void(size_t done, size_t total)> progress;
};

struct ImportedModel {
  Graph graph;
  std::string path;
  std::string producer;  // e.g. "pytorch 1.13.0"
  int64_t ir_version = 0;
  size_t folded_nodes = 0;  // nodes shape inference turned into constants (of the top graph)
  std::vector<std::string> initializers;  // names of the top graph's initializers, in file order
  std::vector<std::string> unbound_dims;  // symbolic dims bound to 1 because none was given
  std::map<std::string, int64_t> bound_dims;  // every symbolic dim of the inputs, as bound
  // Per graph input, per axis: the symbolic dimension the file declares there, "" where none.
  std::vector<std::vector<std::string>> input_dim_names;
  // Per graph output, likewise.
  std::vector<std::vector<std::string>> output_dim_names;
};

// Supported default-domain opsets.
inline constexpr int kMinOpset = 13;
inline constexpr int kMaxOpset = 21;

// Reads, checks and imports an ONNX model, binds its symbolic dimensions (from `dims`, and from
// the given shapes of the inputs that declare them; a disagreement between two is an error
// naming both), and infers every shape. Throws InputError (subject: the file) on anything it cannot
// use.
ImportedModel import_onnx(const std::string& path, const ImportOptions& options = {});

}  // namespace tandem
