#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem {

struct OpTypeSummary {
  std::string op_type;
  int count = 0;
  double flops = 0;
  double bytes = 0;
};

struct TensorSummary {
  std::string name;
  DType dtype;
  Shape shape;
};

// What `tandem inspect` shows: op types with their work, parameters, inputs and outputs.
struct ModelSummary {
  std::string path;
  std::string producer;
  int opset = 0;
  size_t nodes = 0;
  std::vector<OpTypeSummary> op_types;  // by descending FLOPs
  double total_flops = 0;
  double total_bytes = 0;
  int64_t parameters = 0;  // elements of constant tensors
  double parameter_bytes = 0;
  std::vector<TensorSummary> inputs, outputs;
};

ModelSummary summarize(const Graph& graph, std::string path, std::string producer);
std::string render_summary(const ModelSummary& summary);
nlohmann::json summary_json(const ModelSummary& summary);
nlohmann::json tensor_json(const TensorSummary& tensor);

}  // namespace tandem
