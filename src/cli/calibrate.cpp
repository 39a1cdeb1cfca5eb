#include "calibrate/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "backends/registry.h"
#include "calibrate/host.h"
#include "calibrate/microbench.h"
#include "calibrate/op_history.h"
#include "cli/commands.h"
#include "ir/error.h"
#include "report/json_schema.h"
#include "report/table.h"
#include "runtime/constant_folding.h"
#include "util/random_tensor.h"

namespace tandem::cli {
namespace {

using Measurement = CalibrationProfile::Measurement;

std::string with_unit(double value, const std::string& unit) {
  if (unit == "s") {
    return value < 1e-3 ? format("%.3g us", value * 1e6)
           : value < 1  ? format("%.3g ms", value * 1e3)
                        : format("%.3g s", value);
  }
  if (unit == "B") return human_bytes(value);
  if (unit == "B/s") return human_bytes(value) + "/s";
  return si(value) + unit;
}

struct SummaryRow {
  std::string figure;
  const Figure* value;
  std::string unit;
  std::string key;  // in --json: the figure's name and unit
};

std::vector<SummaryRow> summary_rows(const CalibrationProfile& profile) {
  const size_t fp32 = static_cast<size_t>(Precision::kFp32);
  return {{"matrix fp32 peak", &profile.figures.matrix_flops[fp32], "FLOP/s",
           "matrix_fp32_flops_per_s"},
          {"vector fp32", &profile.figures.vector_flops[fp32], "FLOP/s", "vector_fp32_flops_per_s"},
          {"memory bandwidth", &profile.figures.memory_bandwidth, "B/s",
           "memory_bandwidth_bytes_per_s"},
          {"launch overhead", &profile.figures.launch_overhead, "s", "launch_overhead_s"},
          {"memory capacity", &profile.figures.memory_bytes, "B", "memory_bytes"},
          {"host link", &profile.host_link_bandwidth, "B/s", "host_link_bandwidth_bytes_per_s"}};
}

std::string render(const CalibrationProfile& profile, const std::string& path, size_t models,
                   double seconds) {
  Table table({"figure", "value", "how measured"});
  for (const SummaryRow& row : summary_rows(profile)) {
    // The source reads "calibration FILE: how"; the file is named once, below.
    const size_t colon = row.value->source.find(": ");
    table.add_row(
        {row.figure, with_unit(row.value->value, row.unit),
         colon == std::string::npos ? row.value->source : row.value->source.substr(colon + 2)});
  }
  std::string text = profile.device_name + "\n" + table.render();
  text += format("GEMM curve: %zu shapes; %zu measurements in all", profile.gemm_curve.size(),
                 profile.measurements.size());
  if (models > 0) {
    text += format("; measured times of %zu op signatures from %zu model%s",
                   profile.op_seconds.size(), models, models == 1 ? "" : "s");
  }
  return text + format("\nwrote %s in %.1f s\n", path.c_str(), seconds);
}

// The slowest of the speed reference's timings through the calibration over the fastest: the
// profile's drift is that less 1.
double speed_spread(const CalibrationProfile& profile) { return 1 + profile.speed_drift.value; }

// How busy the machine was while calibrating: other processes' cores, contended measurements.
struct Quietness {
  double others_cores = 0;
  calibrate::ContentionLog contention;
};

nlohmann::json to_json(const CalibrationProfile& profile, const std::string& path, double seconds,
                       const Quietness& quietness) {
  nlohmann::json figures = nlohmann::json::object();
  for (const SummaryRow& row : summary_rows(profile)) {
    if (!row.value->known()) {
      figures[row.key] = nullptr;
      continue;
    }
    nlohmann::json value = row.value->value;
    if (row.unit == "B") value = static_cast<int64_t>(std::llround(row.value->value));
    figures[row.key] = {{"value", value}, {"source", row.value->source}};
  }
  nlohmann::json measurements = nlohmann::json::array();
  for (const Measurement& row : profile.measurements) {
    measurements.push_back(
        {{"name", row.name}, {"value", row.value}, {"unit", row.unit}, {"method", row.method}});
  }
  return {{"schema_version", kJsonSchemaVersion},
          {"profile", path},
          {"device_name", profile.device_name},
          {"threads", profile.threads},
          {"figures", figures},
          {"measurements", measurements},
          {"op_signatures", profile.op_seconds.size()},
          {"elapsed_s", seconds},
          {"contention",
           {{"other_processes_cores", quietness.others_cores},
            {"measurements", quietness.contention.measurements},
            {"contended", quietness.contention.contended},
            {"unsettled", quietness.contention.unsettled},
            {"speed_change", quietness.contention.speed_change},
            {"speed_spread", speed_spread(profile)},
            {"remeasured", quietness.contention.remeasured},
            {"team_on_distinct_cores",
             quietness.contention.team_on_distinct_cores
                 ? nlohmann::json(*quietness.contention.team_on_distinct_cores)
                 : nlohmann::json(nullptr)}}}};
}

// The models to time, loaded and fused as `tandem run` runs them; loaded before any
// measurement so that a bad model fails at once.
std::vector<ImportedModel> load_models(const CalibrateOptions& options) {
  std::vector<ImportedModel> models;
  for (const std::string& path : options.models) {
    ModelOptions model_options;
    model_options.model = path;
    model_options.dims = options.dims;
    model_options.shapes = options.shapes;
    model_options.json = options.json;
    model_options.every_dim_named = false;
    models.push_back(load_model(model_options));
    prepare_for_inference(models.back().graph);
  }
  // Models of different inputs share one --dim list: each dim must name some model's dimension.
  for (const std::string& dim : options.dims) {
    const std::string name = dim.substr(0, dim.find('='));
    const bool named = std::any_of(models.begin(), models.end(), [&](const ImportedModel& model) {
      return model.bound_dims.count(name) > 0;
    });
    if (!named && !models.empty()) {
      throw InputError("--dim " + dim, "no model given has a symbolic dimension '" + name + "'");
    }
  }
  return models;
}

// Measured time of every op of the models, by signature, on `tandem run`'s default inputs.
std::map<std::string, double> time_model_ops(const std::vector<ImportedModel>& models, bool quick) {
  calibrate::OpHistory history;
  cpu::CpuDevice device;
  const int runs = quick ? 3 : 20;
  for (const ImportedModel& model : models) {
    std::mt19937_64 rng(0);  // the seed `tandem run` uses by default
    std::vector<Tensor> inputs;
    for (int id : model.graph.inputs) {
      const Value& value = model.graph.values[id];
      inputs.push_back(random_tensor(value.type.dtype, value.type.shape, rng));
    }
    std::fprintf(stderr, "timing the ops of %s (%d runs)\n", model.path.c_str(), runs);
    history.record(model.graph, device, inputs, runs);
  }
  return history.median_seconds();
}

// The first device of a backend with a calibration of its own (PJRT, CUDA), measured through
// its kernels or compiled programs; the host link by copying a buffer in and out.
CalibrationProfile calibrate_backend(const std::string& name, const std::string& plugin,
                                     const calibrate::CalibrationOptions& options) {
  const Backend* backend = find_backend(name);
  if (!backend) throw InputError("--backend", "no backend " + name);
  if (const std::string why = backend->missing(); !why.empty()) {
    throw InputError("--backend " + name, why);
  }
  if (!backend->calibration) {
    throw InputError("--backend " + name, "backend " + name + " has no calibration");
  }
  CalibrationTarget target;
  try {
    target = backend->calibration(plugin);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& error) {
    throw InputError("--backend " + name, error.what());
  }
  std::fprintf(stderr, "calibrating %s%s\n", target.description.c_str(),
               options.quick ? ", quick" : "");
  return calibrate::calibrate_device(*target.device, target.kind, target.description,
                                     target.memory_bytes, target.round_trip, options);
}

void check_writable_folder(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    throw InputError(path, "cannot write the profile: no folder " + folder.string());
  }
}

}  // namespace

int calibrate_command(const CalibrateOptions& options) {
  if (options.mpi) return calibrate_links_command(options);
  cpu::set_cpu_threads(options.threads);
  const auto started = std::chrono::steady_clock::now();
  const calibrate::CpuTimes cpu_before = calibrate::cpu_times();
  check_writable_folder(options.output);
  const std::vector<ImportedModel> models = load_models(options);
  calibrate::CalibrationOptions calibration;
  calibration.quick = options.quick;
  calibration.profile_path = options.output;
  calibration.progress = [](const Measurement& row) {
    std::fprintf(stderr, "  %-36s %s\n", row.name.c_str(), with_unit(row.value, row.unit).c_str());
  };
  CalibrationProfile profile;
  if (options.backend != "cpu") {
    if (!options.models.empty()) {
      throw InputError("--model", "per-op times are measured on the CPU backend only");
    }
    profile = calibrate_backend(options.backend, options.plugin, calibration);
  } else {
    std::fprintf(stderr, "calibrating the CPU (%d threads)%s\n", cpu::cpu_threads(),
                 options.quick ? ", quick" : "");
    profile = calibrate::calibrate_cpu(calibration);
    profile.op_seconds = time_model_ops(models, options.quick);
  }
  write_profile(options.output, profile);
  // Contended measurements report their fast runs; a figure still contended after more runs
  // may be slow, and the user is told to calibrate again.
  const calibrate::ContentionLog& contention = calibrate::contention_log();
  const double others = calibrate::others_cores(
      cpu_before, calibrate::cpu_times(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  // A quarter of a core: more than a quiet machine's background, less than one busy process.
  if (others > 0.25) {
    std::fprintf(stderr,
                 "warning: other processes kept %.1f core(s) busy while calibrating (of %u), and "
                 "%d of %d measurements stayed uneven after more runs: the figures may be slow; "
                 "calibrate again with the cores free\n",
                 others, std::max(1u, std::thread::hardware_concurrency()), contention.unsettled,
                 contention.measurements);
  } else if (contention.contended > 0) {
    std::fprintf(stderr,
                 "note: %d of %d measurements varied from run to run (up to %.1fx); their figures "
                 "are the median of the runs at full speed after more runs, not of all\n",
                 contention.contended, contention.measurements, contention.worst_spread);
  }
  if (contention.team_on_distinct_cores == false) {
    std::fprintf(stderr,
                 "note: the kernels' threads could not each be kept to a core of their own (the "
                 "system refused to move one): they were measured where the scheduler put them, "
                 "and beside a busy process their figures may be slow\n");
  }
  if (contention.remeasured > 0) {
    std::fprintf(stderr,
                 "note: %d curve points took longer than a larger point of their curve and were "
                 "measured again (each kept its faster timing)\n",
                 contention.remeasured);
  }
  if (speed_spread(profile) > calibrate::kSpeedChangeWarning) {
    std::fprintf(stderr,
                 "warning: the machine's speed changed while calibrating: the same product took "
                 "%.2fx as long at the end as at the start, and its slowest timing was %.2fx its "
                 "fastest, so the figures were measured at different speeds; calibrate again "
                 "when the machine is steadier\n",
                 contention.speed_change, speed_spread(profile));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.json) {
    std::printf("%s\n",
                to_json(profile, options.output, seconds, {others, contention}).dump(2).c_str());
  } else {
    std::printf("%s", render(profile, options.output, options.models.size(), seconds).c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
