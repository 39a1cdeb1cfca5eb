#include "report/model_summary.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/json_schema.h"
#include "report/table.h"

namespace tandem {

ModelSummary summarize(const Graph& graph, std::string path, std::string producer) {
  ModelSummary summary;
  summary.path = std::move(path);
  summary.producer = std::move(producer);
  summary.opset = graph.opset;
  summary.nodes = graph.nodes.size();
  std::map<std::string, OpTypeSummary> by_type;
  for (const Node& node : graph.nodes) {
    OpTypeSummary& row = by_type[node.op_type];
    row.op_type = node.op_type;
    ++row.count;
    row.flops += node.cost.flops;
    row.bytes += node.cost.bytes;
    summary.total_flops += node.cost.flops;
    summary.total_bytes += node.cost.bytes;
  }
  for (auto& [type, row] : by_type) summary.op_types.push_back(row);
  std::stable_sort(
      summary.op_types.begin(), summary.op_types.end(),
      [](const OpTypeSummary& a, const OpTypeSummary& b) { return a.flops > b.flops; });
  for (const Value& value : graph.values) {
    if (!value.is_constant() || value.outer_scope) continue;
    summary.parameters += value.constant.numel();
    summary.parameter_bytes += static_cast<double>(value.constant.nbytes());
  }
  for (int id : graph.inputs)
    summary.inputs.push_back(
        {graph.values[id].name, graph.values[id].type.dtype, graph.values[id].type.shape});
  for (int id : graph.outputs)
    summary.outputs.push_back(
        {graph.values[id].name, graph.values[id].type.dtype, graph.values[id].type.shape});
  return summary;
}

std::string render_summary(const ModelSummary& s) {
  std::string out = format("model       %s\n", s.path.c_str());
  out += format("opset       %d%s\n", s.opset,
                s.producer.empty() ? "" : ("   (from " + s.producer + ")").c_str());
  out += format("nodes       %zu\n", s.nodes);
  out += "parameters  " + si(static_cast<double>(s.parameters)) + " (" +
         human_bytes(s.parameter_bytes) + ")\n";
  out += "work        " + si(s.total_flops) + "FLOP, " + human_bytes(s.total_bytes) + " moved\n\n";
  Table tensors({"", "name", "dtype", "shape"});
  for (const TensorSummary& t : s.inputs)
    tensors.add_row({"input", t.name, std::string(dtype_name(t.dtype)), shape_str(t.shape)});
  for (const TensorSummary& t : s.outputs)
    tensors.add_row({"output", t.name, std::string(dtype_name(t.dtype)), shape_str(t.shape)});
  out += tensors.render() + "\n";
  Table ops({"op type", "count", "FLOPs", "% FLOPs", "bytes moved"});
  for (const OpTypeSummary& row : s.op_types) {
    ops.add_row({row.op_type, std::to_string(row.count), si(row.flops),
                 format("%.1f", s.total_flops > 0 ? 100.0 * row.flops / s.total_flops : 0.0),
                 human_bytes(row.bytes)});
  }
  ops.add_separator();
  ops.add_row(
      {"total", std::to_string(s.nodes), si(s.total_flops), "100.0", human_bytes(s.total_bytes)});
  return out + ops.render();
}

nlohmann::json tensor_json(const TensorSummary& tensor) {
  return {{"name", tensor.name}, {"dtype", dtype_name(tensor.dtype)}, {"shape", tensor.shape}};
}

nlohmann::json summary_json(const ModelSummary& s) {
  // FLOPs and bytes are counts: whole numbers in JSON.
  const auto whole = [](double count) { return static_cast<int64_t>(std::llround(count)); };
  nlohmann::json ops = nlohmann::json::array();
  for (const OpTypeSummary& row : s.op_types) {
    ops.push_back({{"op_type", row.op_type},
                   {"count", row.count},
                   {"flops", whole(row.flops)},
                   {"bytes", whole(row.bytes)}});
  }
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const TensorSummary& t : s.inputs) inputs.push_back(tensor_json(t));
  for (const TensorSummary& t : s.outputs) outputs.push_back(tensor_json(t));
  return {{"schema_version", kJsonSchemaVersion},
          {"model", s.path},
          {"producer", s.producer},
          {"opset", s.opset},
          {"nodes", s.nodes},
          {"parameters", s.parameters},
          {"parameter_bytes", whole(s.parameter_bytes)},
          {"flops", whole(s.total_flops)},
          {"bytes", whole(s.total_bytes)},
          {"op_types", ops},
          {"inputs", inputs},
          {"outputs", outputs}};
}

}  // namespace tandem
