#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_device.h"
#include "cli/commands.h"
#include "cli/run_cluster.h"
#include "ir/error.h"
#include "ir/fuse.h"
#include "report/model_summary.h"
#include "report/run_report.h"
#include "runtime/executor.h"
#include "runtime/memory_limit.h"
#include "util/compare.h"
#include "util/npy.h"
#include "util/random_tensor.h"

namespace tandem::cli {
namespace {

std::vector<Tensor> prepare_inputs(const Graph& graph, const RunOptions& options,
                                   const std::map<std::string, Tensor>& files) {
  std::map<std::string, std::string> paths;  // input name -> its file
  for (const std::string& text : options.inputs) {
    const auto [name, path] = split_assignment(text, "--input");
    if (graph.find_value(name) < 0 || std::find(graph.inputs.begin(), graph.inputs.end(),
                                                graph.find_value(name)) == graph.inputs.end()) {
      throw InputError("--input " + text, "the model has no input '" + name + "'");
    }
    paths[name] = path;
  }
  double input_bytes = 0;
  for (int id : graph.inputs)
    input_bytes += numel(graph.values[id].type.shape) * dtype_size(graph.values[id].type.dtype);
  check_fits_in_memory(input_bytes, "the inputs");
  std::mt19937_64 rng(options.seed);
  std::vector<Tensor> inputs;
  for (int id : graph.inputs) {
    const Value& value = graph.values[id];
    auto file = files.find(value.name);
    if (file == files.end()) {
      inputs.push_back(random_tensor(value.type.dtype, value.type.shape, rng));
      continue;
    }
    const Tensor& tensor = file->second;
    const std::string& source = paths.at(value.name);
    if (tensor.dtype() != value.type.dtype) {
      throw InputError(source, "dtype " + std::string(dtype_name(tensor.dtype())) +
                                   " does not match input '" + value.name + "' (" +
                                   std::string(dtype_name(value.type.dtype)) + ")");
    }
    if (tensor.shape() != value.type.shape) {
      throw InputError(source, "shape " + shape_str(tensor.shape()) + " does not match input '" +
                                   value.name + "' (" + shape_str(value.type.shape) + ")");
    }
    inputs.push_back(tensor);
  }
  return inputs;
}

std::string file_name_for(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == '\\' || c == ':' || c == ' ') c = '_';
  }
  return name + ".npy";
}

}  // namespace

int run_command(const RunOptions& options) {
  cpu::set_cpu_threads(options.threads);
  const std::map<std::string, Tensor> input_files = read_input_files(options);
  ImportedModel model = load_model(options, input_files);
  if (options.fuse) fuse_for_inference(model.graph);
  const Graph& graph = model.graph;
  std::map<std::string, Tensor> expected;
  for (const std::string& text : options.expects) {
    auto [name, file] = split_assignment(text, "--expect");
    const int id = graph.find_value(name);
    if (id < 0 ||
        std::find(graph.outputs.begin(), graph.outputs.end(), id) == graph.outputs.end()) {
      throw InputError("--expect " + text, "the model has no output '" + name + "'");
    }
    expected[name] = read_npy(file);
  }
  const std::vector<Tensor> inputs = prepare_inputs(graph, options, input_files);
  if (!options.cluster.empty())
    return run_on_cluster(options, model, input_files, inputs, expected);
  if (!options.plan.empty() || !options.trace.empty() || options.failover ||
      !options.strategy.empty() || options.microbatches != 1)
    throw InputError("--plan, --strategy, --microbatches, --trace and --failover",
                     "need --cluster");

  cpu::CpuDevice device;
  GraphExecutor executor(graph, device);
  std::map<std::string, OpTimeSummary> op_times;
  bool timing = false;  // only timed iterations count
  if (options.profile) {
    executor.set_observer([&](const Node& node, std::chrono::nanoseconds elapsed) {
      if (!timing) return;
      OpTimeSummary& row = op_times[node.op_type];
      row.op_type = node.op_type;
      ++row.calls;
      row.total_ms += std::chrono::duration<double, std::milli>(elapsed).count();
      row.flops += node.cost.flops;
    });
  }
  const bool interactive = isatty(fileno(stderr)) && !options.json;
  const int total_runs = options.warmup + options.iterations;
  std::vector<double> latencies_ms;
  std::vector<Tensor> outputs;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < total_runs; ++i) {
    timing = i >= options.warmup;
    const auto start = std::chrono::steady_clock::now();
    outputs = executor.run(inputs);
    const auto end = std::chrono::steady_clock::now();
    if (i >= options.warmup)
      latencies_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    if (interactive && end - started > std::chrono::seconds(2)) {
      std::fprintf(stderr, "\rrun %d/%d", i + 1, total_runs);
      if (i + 1 == total_runs) std::fprintf(stderr, "\n");
    }
  }

  RunReport report;
  report.model = model.path;
  report.threads = cpu::cpu_threads();
  report.batch = graph.inputs.empty() || graph.values[graph.inputs[0]].type.shape.empty()
                     ? 1
                     : graph.values[graph.inputs[0]].type.shape[0];
  report.latencies_ms = latencies_ms;
  report.arena_bytes = executor.memory_plan().arena_bytes;
  report.unplanned_bytes = executor.memory_plan().requested_bytes;
  for (auto& [type, row] : op_times) {
    row.calls /= options.iterations;
    row.total_ms /= options.iterations;
    row.flops /= options.iterations;
    report.op_times.push_back(row);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph.values[graph.outputs[i]].name;
    report.outputs.push_back({name, outputs[i]});
    auto reference = expected.find(name);
    if (reference != expected.end())
      report.checks.push_back({name, compare_tensors(outputs[i], reference->second)});
  }
  if (!options.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.output_dir, error);
    if (error) throw InputError(options.output_dir, "cannot create the folder: " + error.message());
    for (const auto& [name, tensor] : report.outputs) {
      write_npy((std::filesystem::path(options.output_dir) / file_name_for(name)).string(), tensor);
    }
  }
  std::printf("%s\n", options.json ? run_report_json(report).dump(2).c_str()
                                   : render_run_report(report).c_str());
  for (const auto& [name, comparison] : report.checks) {
    if (comparison.matches) continue;
    std::fprintf(stderr, "tandem: mismatch: %s\n", describe_mismatch(name, comparison).c_str());
    return kExitMismatch;
  }
  return kExitOk;
}

}  // namespace tandem::cli
