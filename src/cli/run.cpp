#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_device.h"
#include "cli/commands.h"
#include "cli/run_cluster.h"
#include "cli/timed_runs.h"
#include "ir/error.h"
#include "plan/plan_json.h"
#include "report/model_summary.h"
#include "report/run_report.h"
#include "report/table.h"
#include "runtime/constant_folding.h"
#include "runtime/executor.h"
#include "runtime/fault.h"
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

// The --expect references by output name; a name that is not an output is bad input.
std::map<std::string, Tensor> read_expected(const RunOptions& options, const Graph& graph) {
  std::map<std::string, Tensor> expected;
  for (const std::string& text : options.expects) {
    auto [name, file] = split_assignment(text, "--expect");
    const int id = graph.find_value(name);
    if (id < 0 ||
        std::find(graph.outputs.begin(), graph.outputs.end(), id) == graph.outputs.end()) {
      std::string outputs;
      for (int output : graph.outputs)
        outputs += (outputs.empty() ? "" : ", ") + graph.values[output].name;
      throw InputError("--expect " + text,
                       "the model has no output '" + name + "' (its outputs: " + outputs + ")");
    }
    expected[name] = read_npy(file);
  }
  return expected;
}

std::string file_name_for(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == '\\' || c == ':' || c == ' ') c = '_';
  }
  return name + ".npy";
}

// `--plan plan.json` names the model, the cluster, the dims and the fusion it was made with;
// what the command line leaves out is taken from it, and a model or cluster that changed since
// is refused.
void take_from_plan(RunOptions& options) {
  const PlanProvenance made_from = plan_provenance(read_plan_document(options.plan), options.plan);
  // A file the command line names must be the one the plan was made from; one it leaves out is
  // the plan's, unchanged since.
  const auto take = [&](std::string& given, const PlanSource& source, const std::string& what) {
    if (given.empty()) {
      check_unchanged(source, what, options.plan);
      given = source.resolved();
    } else if (plan_source(given).sha256 != source.sha256) {
      throw InputError(options.plan, "it was made for the " + what + " " + source.path + ", not " +
                                         given + " (their contents differ)");
    }
  };
  take(options.model, made_from.model, "model");
  take(options.cluster, made_from.cluster, "cluster");
  if (options.dims.empty() && options.shapes.empty() && options.inputs.empty()) {
    options.dims = made_from.dim_arguments();
    options.shapes = made_from.shape_arguments();
  }
  if (!made_from.fused) options.fuse = false;  // the graph the plan was made for
}

void check_options(const RunOptions& options) {
  if (options.model.empty())
    throw InputError("run", "model is required (or --plan PLAN.json, which names its model)");
  if (options.cluster.empty() &&
      (!options.trace.empty() || !options.report.empty() || options.failover ||
       !options.strategy.empty() || options.microbatches != 1 || options.calibrate_from_run ||
       !options.trial))
    throw InputError(
        "--strategy, --microbatches, --trace, --report, --failover, --calibrate-from-run and "
        "--no-trial",
        "need --cluster (or --plan)");
  if (!options.plan.empty() && !options.strategy.empty())
    throw InputError("--plan and --strategy", "give one: a plan file, or a strategy to plan with");
  if (options.precision != "fp32") {
    if (!options.cluster.empty())
      throw InputError("--precision " + options.precision,
                       "is for a run on this machine's CPU; a cluster's devices compute in fp32");
    const std::string refusal = cpu::precision_refusal(*parse_matrix_precision(options.precision));
    if (!refusal.empty()) throw InputError("--precision " + options.precision, refusal);
  }
}

void say_model_decisions(const ImportedModel& model, const InferencePreparation& prepared,
                         bool fused) {
  std::string dims;
  for (const auto& [name, size] : model.bound_dims) {
    const bool defaulted = std::find(model.unbound_dims.begin(), model.unbound_dims.end(), name) !=
                           model.unbound_dims.end();
    dims += (dims.empty() ? "" : ", ") + name + "=" + std::to_string(size) +
            (defaulted ? " (default)" : "");
  }
  std::fprintf(stderr,
               "verbose: model: %zu nodes after import, %zu folded into constants; dims %s\n",
               model.graph.nodes.size(), model.folded_nodes, dims.empty() ? "none" : dims.c_str());
  if (!fused) {
    std::fprintf(stderr, "verbose: fusion: off (--no-fusion)\n");
    return;
  }
  const ConstantFolding& folding = prepared.constants;
  std::fprintf(stderr,
               "verbose: constants: %d nodes of constant inputs folded at load (%s) in %s; left "
               "to run: %d with outputs over %s, %d the CPU's kernels refused\n",
               folding.nodes, human_bytes(static_cast<double>(folding.bytes)).c_str(),
               seconds_text(folding.seconds).c_str(), folding.over_cap,
               human_bytes(static_cast<double>(kMaxFoldedConstantBytes)).c_str(), folding.refused);
  const FusionStats& fusion = prepared.fusion;
  std::fprintf(stderr,
               "verbose: fusion: %d BatchNormalization folded into Conv, %d residual Add and %d "
               "activations fused into Conv/Gemm/MatMul, %d embedding-bag Loops as EmbeddingBag\n",
               fusion.batch_norms_folded, fusion.residuals_fused, fusion.activations_fused,
               fusion.embedding_bags_fused);
}

// Per op type, how many of its nodes each implementation ran ("Conv: 9 oneDNN brg_conv_fwd:avx2").
void say_kernels(const GraphExecutor& executor, const std::string& device) {
  std::map<std::string, std::map<std::string, int>> by_type;
  for (const auto& [node, implementation] : executor.kernel_implementations())
    ++by_type[node->op_type][implementation.empty() ? "tandem" : implementation];
  for (const auto& [type, implementations] : by_type) {
    std::string text;
    for (const auto& [implementation, count] : implementations)
      text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + implementation;
    std::fprintf(stderr, "verbose: kernels on %s: %s: %s\n", device.c_str(), type.c_str(),
                 text.c_str());
  }
}

bool is_matrix_product(const Node& node) {
  return node.op_type == "MatMul" || node.op_type == "Gemm" || node.op_type == "Conv" ||
         node.op_type == "ConvTranspose";
}

// How many matrix products the executor has, and how many of them ran in a lower precision (their
// kernels say so with precision_mark: "oneDNN brg:avx512_core_bf16 [bf16]").
std::pair<int, int> count_lowered(const GraphExecutor& executor, MatrixPrecision precision) {
  const std::string mark = precision_mark(precision);
  int products = 0, lowered = 0;
  for (const auto& [node, implementation] : executor.kernel_implementations()) {
    if (!is_matrix_product(*node)) continue;
    ++products;
    if (implementation.find(mark) != std::string::npos) ++lowered;
  }
  return {products, lowered};
}

// Sets each output of `report` beside the same output computed in float32.
void compare_with_fp32(const std::vector<Tensor>& fp32_outputs, RunReport& report) {
  for (size_t i = 0; i < report.outputs.size() && i < fp32_outputs.size(); ++i) {
    const auto& [name, lower] = report.outputs[i];
    const Tensor& reference = fp32_outputs[i];
    if (const auto d = deviation(lower, reference)) {
      report.precision->outputs.emplace_back(name, *d);
    } else if (lower.shape() != reference.shape()) {
      report.precision->not_compared.emplace_back(
          name, "shape " + shape_str(lower.shape()) + " against " + shape_str(reference.shape()) +
                    " in fp32");
    } else {
      report.precision->not_compared.emplace_back(
          name, "no error measure for " + std::string(dtype_name(lower.dtype())));
    }
  }
}

// One device: the graph executor on this machine's CPU, its matrix products in `precision`. In a
// lower precision the model also runs in float32, alternating run by run with the other so that
// the machine's noise hits both alike, for the speed-up and the outputs' error.
RunReport run_on_cpu(const RunOptions& options, const RunSchedule& schedule, const Graph& graph,
                     const std::vector<Tensor>& inputs, MatrixPrecision precision) {
  cpu::CpuDevice device("cpu:0", {}, precision);
  GraphExecutor executor(graph, device);
  RunReport report;
  std::optional<cpu::CpuDevice> fp32_device;
  std::optional<GraphExecutor> fp32_executor;
  if (precision != MatrixPrecision::kFloat32) {
    PrecisionFigures figures;
    figures.precision = matrix_precision_name(precision);
    report.precision = figures;
    fp32_device.emplace("cpu:0 (fp32)");
    fp32_executor.emplace(graph, *fp32_device);
  }
  if (options.verbose) {
    std::fprintf(stderr,
                 "verbose: memory: intermediates share a %s arena (%s if each had its own); "
                 "device %s, %d threads\n",
                 human_bytes(static_cast<double>(executor.memory_plan().arena_bytes)).c_str(),
                 human_bytes(static_cast<double>(executor.memory_plan().requested_bytes)).c_str(),
                 device.name().c_str(), cpu::cpu_threads());
  }
  std::map<const Node*, NodeTotal> node_totals;
  bool timing = false;  // only timed runs count
  if (options.profile) {
    executor.set_observer([&](const Node& node, std::chrono::nanoseconds elapsed) {
      if (!timing) return;
      NodeTotal& total = node_totals[&node];
      NodeTime& row = total.node;
      ++total.calls;
      if (row.node.empty()) {
        row.node = node.name.empty() ? "(unnamed " + node.op_type + ")" : node.name;
        row.op_type = node.op_type;
        row.device = device.name();
      }
      row.seconds += std::chrono::duration<double>(elapsed).count();
      row.flops += node.cost.flops;
    });
  }
  std::vector<Tensor> outputs, fp32_outputs;
  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const TimedRuns runs = time_runs(schedule, [&](bool timed) {
    if (fp32_executor) {
      const auto start = std::chrono::steady_clock::now();
      fp32_outputs = fp32_executor->run(inputs);
      if (timed) report.precision->fp32_latencies_seconds.push_back(seconds_since(start));
    }
    timing = timed;
    const auto start = std::chrono::steady_clock::now();
    outputs = executor.run(inputs);
    return seconds_since(start);
  });
  if (options.verbose) say_kernels(executor, device.name());
  if (report.precision) {
    std::tie(report.precision->products, report.precision->lowered) =
        count_lowered(executor, precision);
  }
  report.warmup_runs = runs.warmup_runs;
  report.latencies_seconds = runs.latencies_seconds;
  report.duration_seconds = runs.duration_seconds;
  report.arena_bytes = executor.memory_plan().arena_bytes;
  report.unplanned_bytes = executor.memory_plan().requested_bytes;
  if (options.profile) {
    std::vector<NodeTotal> totals;
    for (const auto& [node, total] : node_totals) totals.push_back(total);
    set_profile(report, totals, runs.latencies_seconds.size());
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    report.outputs.push_back({graph.values[graph.outputs[i]].name, outputs[i]});
  if (report.precision) compare_with_fp32(fp32_outputs, report);
  return report;
}

}  // namespace

int run_command(const RunOptions& given) {
  // Under mpirun, MPI starts before anything else (every rank then reads the same files).
  const std::shared_ptr<RankWorld> ranks = join_ranks_if_launched();
  RunOptions options = given;
  if (!options.profile_out.empty()) options.profile = true;
  if (!options.plan.empty()) take_from_plan(options);
  if (ranks && options.cluster.empty())
    throw InputError("mpirun",
                     "tandem run under mpirun needs --cluster FILE (or --plan): a "
                     "cluster whose hosts the ranks run");
  if (ranks && options.calibrate_from_run)
    throw InputError("--calibrate-from-run",
                     "not under mpirun: each host's profiles are files on that host; run "
                     "`tandem calibrate` on each host instead");
  check_options(options);
  cpu::set_cpu_threads(options.threads);
  const std::map<std::string, Tensor> input_files = read_input_files(options);
  ImportedModel model = load_model(options, input_files);
  InferencePreparation prepared;
  if (options.fuse) prepared = prepare_for_inference(model.graph);
  if (options.verbose) say_model_decisions(model, prepared, options.fuse);
  const Graph& graph = model.graph;
  const std::map<std::string, Tensor> expected = read_expected(options, graph);
  const std::vector<Tensor> inputs = prepare_inputs(graph, options, input_files);

  RunSchedule schedule;
  schedule.warmup_runs = options.warmup;
  schedule.warmup_seconds = options.warmup_seconds;
  schedule.iterations = options.iterations;
  schedule.duration_seconds = options.duration;
  schedule.progress = isatty(fileno(stderr)) && !options.json;
  RunReport report;
  if (options.cluster.empty()) {
    const MatrixPrecision precision = *parse_matrix_precision(options.precision);
    report = run_on_cpu(options, schedule, graph, inputs, precision);
  } else {
    try {
      if (!ranks) {
        report = run_on_cluster(options, schedule, model, input_files, inputs);
      } else {
        std::optional<RunReport> gathered =
            run_on_ranks(*ranks, options, schedule, model, input_files, inputs);
        if (!gathered) return kExitOk;  // rank 0 reports for every rank
        report = std::move(*gathered);
      }
    } catch (const DeviceFailure& failure) {
      std::fprintf(stderr, "tandem: error: device failed: %s\n", failure.what());
      return kExitDeviceFailed;
    }
  }
  report.model = model.path;
  report.threads = cpu::cpu_threads();
  report.batch = graph.inputs.empty() || graph.values[graph.inputs[0]].type.shape.empty()
                     ? 1
                     : graph.values[graph.inputs[0]].type.shape[0];

  Tolerance tolerance;
  tolerance.rtol = options.rtol;
  tolerance.atol = options.atol;
  for (const auto& [name, tensor] : report.outputs) {
    auto reference = expected.find(name);
    if (reference != expected.end())
      report.checks.push_back({name, compare_tensors(tensor, reference->second, tolerance)});
  }
  if (!options.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.output_dir, error);
    if (error) throw InputError(options.output_dir, "cannot create the folder: " + error.message());
    for (const auto& [name, tensor] : report.outputs) {
      write_npy((std::filesystem::path(options.output_dir) / file_name_for(name)).string(), tensor);
    }
  }
  if (!options.profile_out.empty()) {
    std::ofstream file(options.profile_out);
    file << profile_json(report).dump(2) << "\n";
    if (!file) throw InputError(options.profile_out, "cannot write the profile");
  }
  std::printf("%s\n", options.json ? run_report_json(report).dump(2).c_str()
                                   : render_run_report(report).c_str());
  if (!options.json) {
    if (!options.trace.empty()) std::printf("trace written to %s\n", options.trace.c_str());
    if (!options.report.empty()) std::printf("report written to %s\n", options.report.c_str());
    if (!options.profile_out.empty())
      std::printf("profile written to %s\n", options.profile_out.c_str());
  }
  int status = kExitOk;
  for (const auto& [name, comparison] : report.checks) {
    if (comparison.matches) continue;
    std::fprintf(stderr, "tandem: mismatch: %s\n", describe_mismatch(name, comparison).c_str());
    status = kExitMismatch;
  }
  return status;
}

}  // namespace tandem::cli
