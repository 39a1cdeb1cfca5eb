#pragma once
#include <functional>
#include <map>
#include <string>

#include "ir/graph.h"

namespace tandem {

struct ImportOptions {
  std::map<std::string, int64_t> dims;  // symbolic dimension name -> size (--dim batch=8)
  std::map<std::string, Shape> shapes;  // input name -> full shape (--shape x=8x3x224x224)
  // Called while loading large weights: bytes read so far and in total.
  std::function<void(size_t done, size_t total)> progress;
};

struct ImportedModel {
  Graph graph;
  std::string path;
  std::string producer;  // e.g. "pytorch 1.13.0"
  int64_t ir_version = 0;
  std::vector<std::string> unbound_dims;  // symbolic dims bound to 1 because none was given
};

// Supported default-domain opsets.
inline constexpr int kMinOpset = 13;
inline constexpr int kMaxOpset = 21;

// Reads, checks and imports an ONNX model, binds its symbolic dimensions, and infers every
// shape. Throws InputError (subject: the file) on anything it cannot use.
ImportedModel import_onnx(const std::string& path, const ImportOptions& options = {});

}  // namespace tandem
