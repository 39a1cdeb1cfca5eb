// The Python package's native module, `tandem._tandem` (docs/PYTHON.md): models, clusters, plans
// and simulations over the same libraries the command uses, with the GIL released while Tandem
// works and Tandem's errors raised as `tandem.InputError` / `tandem.DeviceError`.
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <variant>

#include "backends/cpu/cpu_device.h"
#include "backends/registry.h"
#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "devices/cluster_json.h"
#include "ir/error.h"
#include "onnx/batch_split.h"
#include "onnx/importer.h"
#include "plan/compare.h"
#include "plan/plan_json.h"
#include "plan/whole_machine.h"
#include "python/arrays.h"
#include "report/html_report.h"
#include "report/json_schema.h"
#include "report/model_summary.h"
#include "report/plan_report.h"
#include "report/timeline.h"
#include "runtime/constant_folding.h"
#include "runtime/executor.h"
#include "runtime/fault.h"
#include "runtime/plan_executor.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tandem::python {
namespace {

nb::object json_object(const nlohmann::json& json) {
  return nb::module_::import_("json").attr("loads")(json.dump());
}

// ---- models -----------------------------------------------------------------------------------

// A model imported at one binding of its dims and input shapes, fused for inference or not.
struct LoadedModel {
  std::string path;
  std::map<std::string, int64_t> dims;  // as given to load
  std::map<std::string, Shape> shapes;  // as given to load (or taken from a run's arrays)
  bool fused = true;
  std::string shapes_from = "shapes";  // how errors name them: load's shapes, or run's inputs
  ImportedModel imported;

  const Graph& graph() const { return imported.graph; }
  ImportOptions import_options() const {
    ImportOptions options;
    options.dims = dims;
    for (const auto& [name, shape] : shapes)
      options.shapes[name] = GivenShape(shape, shapes_from + "['" + name + "']");
    return options;
  }
};

std::shared_ptr<LoadedModel> import_model(std::string path, std::map<std::string, int64_t> dims,
                                          std::map<std::string, Shape> shapes, bool fuse,
                                          std::string shapes_from = "shapes") {
  auto model = std::make_shared<LoadedModel>();
  model->shapes_from = std::move(shapes_from);
  model->path = std::move(path);
  model->dims = std::move(dims);
  model->shapes = std::move(shapes);
  model->fused = fuse;
  model->imported = import_onnx(model->path, model->import_options());
  for (const auto& [name, size] : model->dims) {
    if (model->imported.bound_dims.count(name)) continue;
    throw InputError("dims['" + name + "']",
                     "the model's inputs have no symbolic dimension '" + name + "'");
  }
  if (fuse) prepare_for_inference(model->imported.graph);
  return model;
}

// One binding of a model on this machine's CPU: the executor compiled once, run many times.
struct CpuRun {
  explicit CpuRun(std::shared_ptr<const LoadedModel> loaded)
      : model(std::move(loaded)), executor(model->graph(), device) {}
  std::shared_ptr<const LoadedModel> model;
  cpu::CpuDevice device;
  GraphExecutor executor;
  std::mutex mutex;  // one run at a time: the executor's arena is shared between runs
};

// Runs `graph` on `inputs` with `execute` while the GIL is released; the outputs as arrays.
template <typename Execute>
nb::dict run_arrays(const Graph& graph, const std::vector<InputArray>& arrays, Execute execute) {
  const std::vector<Tensor> tensors = input_tensors(graph, arrays);
  std::vector<Tensor> outputs;
  {
    nb::gil_scoped_release release;
    outputs = execute(tensors);
  }
  return output_arrays(graph, std::move(outputs));
}

nb::tuple as_tuple(const nb::handle& sequence) {
  return nb::steal<nb::tuple>(PySequence_Tuple(sequence.ptr()));
}

struct TensorInfo {
  std::string name;
  nb::object dtype;
  nb::tuple shape;        // as declared: a symbolic axis by its name
  nb::tuple bound_shape;  // as bound for this model
};

std::vector<TensorInfo> tensor_infos(const LoadedModel& model, const std::vector<int>& ids,
                                     const std::vector<std::vector<std::string>>& names) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Value& value = model.graph().values[ids[i]];
    nb::list declared;
    for (size_t axis = 0; axis < value.type.shape.size(); ++axis) {
      const std::string symbol = i < names.size() && axis < names[i].size() ? names[i][axis] : "";
      if (symbol.empty())
        declared.append(value.type.shape[axis]);
      else
        declared.append(symbol);
    }
    infos.push_back({value.name, numpy_dtype(value.type.dtype), as_tuple(declared),
                     as_tuple(nb::cast(value.type.shape))});
  }
  return infos;
}

// A Python Model: the model as loaded, and the bindings `run` compiled for it by input shapes
// (shared by copies of the handle, which Python objects hold by value).
class Model {
 public:
  explicit Model(std::shared_ptr<const LoadedModel> loaded)
      : model_(std::move(loaded)), runs_(std::make_shared<Runs>()) {}
  const LoadedModel& loaded() const { return *model_; }
  std::shared_ptr<const LoadedModel> shared() const { return model_; }

  // On this machine's CPU, the model bound by the arrays' shapes (compiled once per shape).
  nb::dict run(const nb::dict& inputs) {
    const std::vector<InputArray> arrays = input_arrays(model_->graph(), inputs);
    const std::vector<Shape> shapes = shapes_of(arrays);
    std::shared_ptr<CpuRun> cpu_run;
    {
      nb::gil_scoped_release release;
      cpu_run = cpu_run_for(shapes);
    }
    return run_arrays(cpu_run->model->graph(), arrays, [&](const std::vector<Tensor>& tensors) {
      std::lock_guard lock(cpu_run->mutex);
      return cpu_run->executor.run(tensors);
    });
  }

  size_t compiled_shapes() const {
    std::lock_guard lock(runs_->mutex);
    return runs_->by_shapes.size();
  }

 private:
  struct Runs {
    std::mutex mutex;
    std::map<std::vector<Shape>, std::shared_ptr<CpuRun>> by_shapes;
  };

  std::shared_ptr<CpuRun> cpu_run_for(const std::vector<Shape>& shapes) {
    std::lock_guard lock(runs_->mutex);
    auto known = runs_->by_shapes.find(shapes);
    if (known != runs_->by_shapes.end()) return known->second;
    std::shared_ptr<const LoadedModel> bound = model_;
    const Graph& graph = model_->graph();
    bool same = true;
    for (size_t i = 0; i < shapes.size(); ++i)
      same &= graph.values[graph.inputs[i]].type.shape == shapes[i];
    if (!same) {
      std::map<std::string, Shape> given;
      for (size_t i = 0; i < shapes.size(); ++i)
        given[graph.values[graph.inputs[i]].name] = shapes[i];
      bound = import_model(model_->path, model_->dims, given, model_->fused, "inputs");
    }
    return runs_->by_shapes[shapes] = std::make_shared<CpuRun>(bound);
  }

  std::shared_ptr<const LoadedModel> model_;
  std::shared_ptr<Runs> runs_;
};

// ---- clusters ---------------------------------------------------------------------------------

struct ClusterHandle {
  std::shared_ptr<const Cluster> cluster;
};

struct DeviceInfo {
  std::string id, kind, backend, host, preset;
  double memory_bytes = 0;
  bool backend_built = false;  // this build has its backend: Plan.run can use it
};

std::vector<DeviceInfo> device_infos(const Cluster& cluster) {
  std::vector<DeviceInfo> infos;
  for (const DeviceSpec& device : cluster.devices) {
    infos.push_back(
        {device.id, std::string(device_kind_name(device.kind)),
         std::string(backend_name(device.backend)), device.host, device.preset,
         device.figures.memory_bytes.value,
         device.backend != BackendKind::kNone && backend_of(device.backend).missing().empty()});
  }
  return infos;
}

// ---- plans ------------------------------------------------------------------------------------

Objective objective_of(const std::string& name) {
  if (const std::optional<Objective> objective = objective_named(name)) return *objective;
  throw InputError("objective='" + name + "'", "expected latency, throughput or cost");
}

// A plan and everything it stands on: the model it places, the cluster, the planning problem
// (which points into both), and, once it runs, the devices and the executor.
struct PlanState {
  std::shared_ptr<const LoadedModel> model;
  std::shared_ptr<const Cluster> cluster;
  std::unique_ptr<CostModel> cost;
  BatchSplit split;
  std::unique_ptr<PlanningProblem> problem;
  std::string asked;  // the strategy asked for
  std::vector<StrategyResult> strategies;
  Plan plan;
  bool whole_machine = false;  // planned on the cluster's whole-machine view

  std::mutex mutex;  // one run at a time, and the executor made once
  std::vector<std::unique_ptr<Device>> devices;
  std::unique_ptr<PlanExecutor> executor;

  // The planning problem, with the options `options_for` gives for the model's batch split.
  void make_problem(const std::function<PlanOptions(const BatchSplit&)>& options_for) {
    cost = std::make_unique<CostModel>(*cluster);
    std::function<void(Graph&)> prepare;
    if (model->fused) prepare = [](Graph& graph) { prepare_for_inference(graph); };
    split = find_batch_split(model->imported, model->import_options(), prepare);
    problem = std::make_unique<PlanningProblem>(model->graph(), cost->cluster(), *cost,
                                                options_for(split));
  }

  PlanProvenance provenance() const {
    if (cluster->file.empty())
      throw InputError("Plan.save",
                       "the plan's cluster is Cluster.local(), which has no file: plan "
                       "on Cluster.from_file(...) to save a plan that can be run again");
    PlanProvenance made_from;
    made_from.model = plan_source(model->path);
    made_from.cluster = plan_source(cluster->file);
    made_from.dims = model->dims;
    for (const std::string& name : model->imported.unbound_dims) made_from.dims[name] = 1;
    made_from.shapes = model->shapes;
    made_from.fused = model->fused;
    made_from.whole_machine = whole_machine;
    return made_from;
  }

  PlanReport report() const {
    PlanReport report;
    report.model = model->path;
    report.cluster = cluster->file.empty() ? "this machine" : cluster->file;
    report.chosen_strategy = asked;
    report.plan = plan;
    report.strategies = strategies;
    return report;
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    std::lock_guard lock(mutex);
    if (!executor) {
      devices = make_devices(cost->cluster());
      std::vector<Device*> pointers;
      for (const auto& device : devices) pointers.push_back(device.get());
      PlanExecutor::Options options;
      options.faults = faults_from_environment();  // TANDEM_FAULT, as for `tandem run`
      executor = std::make_unique<PlanExecutor>(model->graph(), plan, pointers, split, options);
    }
    return executor->run(inputs);
  }
};

struct PlanHandle {
  std::shared_ptr<PlanState> state;
};

PlanHandle make_plan(const Model& model, const ClusterHandle& cluster, const std::string& strategy,
                     const std::string& objective, int microbatches,
                     std::optional<double> max_latency,
                     const std::map<std::string, std::string>& pins,
                     const std::vector<std::string>& exclude) {
  if (microbatches < 1) throw InputError("microbatches", "must be at least 1");
  PlanOptions options;
  options.objective = objective_of(objective);
  options.microbatches = microbatches;
  if (max_latency) {
    if (!(*max_latency > 0))
      throw InputError("max_latency", "must be a positive number of seconds");
    options.max_latency_seconds = *max_latency;
  }
  for (const auto& [pattern, device] : pins) options.pins.push_back({pattern, device});
  options.excluded = exclude;
  auto state = std::make_shared<PlanState>();
  state->model = model.shared();
  state->cluster = cluster.cluster;
  state->asked = strategy;
  {
    nb::gil_scoped_release release;
    state->make_problem([&](const BatchSplit& split) {
      options.batch = split.batch;
      options.batch_unsplittable = split.refusal;
      return options;
    });
    state->strategies = compare_strategies(*state->problem, strategy, model.loaded().path);
    // As `tandem plan` plans: auto's plan against the machine as one device.
    if (strategy == "auto") {
      std::optional<PlannedCluster> whole = compare_whole_machine(
          *state->problem, whole_machine_view(*state->cluster), *state->strategies.back().plan);
      if (whole) {
        state->cluster = std::make_shared<const Cluster>(whole->cost->cluster());
        state->problem = std::move(whole->problem);
        state->cost = std::move(whole->cost);
        state->whole_machine = true;
      }
    }
    state->plan = *state->strategies.back().plan;
  }
  return {state};
}

PlanHandle load_plan(const std::filesystem::path& file) {
  const std::string path = file.string();
  auto state = std::make_shared<PlanState>();
  {
    nb::gil_scoped_release release;
    const nlohmann::json document = read_plan_document(path);
    const PlanProvenance made_from = plan_provenance(document, path);
    check_provenance(made_from, path);
    state->model =
        import_model(made_from.model.resolved(), made_from.dims, made_from.shapes, made_from.fused);
    state->cluster = std::make_shared<const Cluster>(
        cluster_as_planned(made_from.cluster.resolved(), made_from, path));
    state->make_problem(
        [&](const BatchSplit& split) { return plan_options_of(document, split, path); });
    state->plan = plan_from_json(document, *state->problem, path);
    state->whole_machine = made_from.whole_machine;
    state->asked = state->plan.strategy;
    state->strategies.push_back({state->plan.strategy, state->plan, "", 0});
  }
  return {state};
}

struct DeviceFigure {
  std::string id;
  double busy_seconds = 0;
  double memory_bytes = 0;
  int nodes = 0;
  double batch_share = 0;  // data-parallel plans: this device's share of the batch
};

struct StrategyFigure {
  std::string strategy;
  bool feasible = false;
  std::optional<double> latency_seconds, throughput_samples_per_second;
  std::string why_not;
  double planning_seconds = 0;
};

struct SegmentInfo {
  std::string device;
  std::vector<std::string> nodes;
};

std::vector<DeviceFigure> device_figures(const PlanState& state) {
  const Plan& plan = state.plan;
  std::vector<DeviceFigure> figures;
  for (size_t d = 0; d < state.cluster->devices.size(); ++d) {
    DeviceFigure figure{state.cluster->devices[d].id};
    if (d < plan.predicted.busy_seconds.size())
      figure.busy_seconds = plan.predicted.busy_seconds[d];
    if (d < plan.predicted.memory_bytes.size())
      figure.memory_bytes = plan.predicted.memory_bytes[d];
    for (int device : plan.device_of_node) figure.nodes += device == static_cast<int>(d);
    if (d < plan.batch_share.size()) figure.batch_share = plan.batch_share[d];
    figures.push_back(figure);
  }
  return figures;
}

// ---- simulations ------------------------------------------------------------------------------

struct SimulationHandle {
  std::shared_ptr<PlanState> state;
  SimulationResult result;
};

SimulationHandle simulate_plan(const PlanHandle& handle, int replicas,
                               const std::optional<std::filesystem::path>& trace,
                               const std::optional<std::filesystem::path>& report) {
  if (replicas < 1) throw InputError("replicas", "must be at least 1");
  SimulationHandle simulation{handle.state, {}};
  nb::gil_scoped_release release;
  const PlanState& state = *handle.state;
  SimulationOptions options;
  options.replicas = replicas;
  options.record_timeline = trace.has_value() || report.has_value();
  simulation.result = simulate(*state.problem, state.plan, options);
  if (trace) {
    simulation.result.timeline.source = "predicted (simulated)";
    write_chrome_trace(trace->string(), simulation.result.timeline);
  }
  if (report) {
    write_html_report(report->string(),
                      simulation_html(simulation.result, state.plan, *state.problem,
                                      state.model->path + " on " +
                                          (state.cluster->file.empty() ? std::string("this machine")
                                                                       : state.cluster->file)));
  }
  return simulation;
}

struct SimulatedDevice {
  std::string id;
  double busy_seconds = 0, idle_seconds = 0, peak_memory_bytes = 0;
  std::optional<double> capacity_bytes;
};

// ---- errors -----------------------------------------------------------------------------------

nb::object error_type, input_error_type, device_error_type;

void raise(const nb::object& type, const std::string& subject, const std::string& detail) {
  const std::string message = subject.empty() ? detail : subject + ": " + detail;
  nb::object error = type(message);
  error.attr("subject") = subject;
  error.attr("detail") = detail;
  PyErr_SetObject(type.ptr(), error.ptr());
}

}  // namespace
}  // namespace tandem::python

NB_MODULE(_tandem, m) {
  using namespace tandem;
  using namespace tandem::python;
  m.doc() = "Tandem's native module; use the `tandem` package, which wraps it.";

  error_type = nb::steal(PyErr_NewException("tandem.Error", PyExc_Exception, nullptr));
  nb::object input_bases = nb::make_tuple(error_type, nb::handle(PyExc_ValueError));
  input_error_type = nb::steal(PyErr_NewException("tandem.InputError", input_bases.ptr(), nullptr));
  nb::object device_bases = nb::make_tuple(error_type, nb::handle(PyExc_RuntimeError));
  device_error_type =
      nb::steal(PyErr_NewException("tandem.DeviceError", device_bases.ptr(), nullptr));
  m.attr("Error") = error_type;
  m.attr("InputError") = input_error_type;
  m.attr("DeviceError") = device_error_type;
  nb::register_exception_translator([](const std::exception_ptr& pointer, void*) {
    try {
      std::rethrow_exception(pointer);
    } catch (const InputError& error) {
      raise(input_error_type, error.subject(), error.what());
    } catch (const DeviceFailure& failure) {
      raise(device_error_type, failure.device_name(), failure.what());
    }
  });

  m.def("set_threads", &cpu::set_cpu_threads, "threads"_a,
        "Threads the CPU backend uses (0: every core), as `tandem run --threads`.");
  m.def("threads", &cpu::cpu_threads, "Threads the CPU backend uses now.");
  m.attr("json_schema_version") = kJsonSchemaVersion;
  m.attr("__version__") = TANDEM_VERSION;

  nb::class_<TensorInfo>(m, "TensorInfo", "A model input or output: name, dtype and shape.")
      .def_ro("name", &TensorInfo::name)
      .def_ro("dtype", &TensorInfo::dtype, "The numpy dtype.")
      .def_ro(
          "shape", &TensorInfo::shape,
          "As the file declares it: an int per fixed axis, the dimension's name per symbolic one.")
      .def_ro("bound_shape", &TensorInfo::bound_shape,
              "As bound for this model (symbols given or 1).")
      .def("__repr__", [](const TensorInfo& info) {
        return nb::str("TensorInfo(name={!r}, dtype={}, shape={!r})")
            .format(info.name, info.dtype, info.shape);
      });

  nb::class_<Model>(m, "Model", "An ONNX model imported by Tandem (tandem.load).")
      .def_prop_ro(
          "path", [](const Model& model) { return model.loaded().path; },
          "The ONNX file (for a model loaded from bytes, its copy in Tandem's cache).")
      .def_prop_ro("producer", [](const Model& model) { return model.loaded().imported.producer; })
      .def_prop_ro("inputs",
                   [](const Model& model) {
                     return tensor_infos(model.loaded(), model.loaded().graph().inputs,
                                         model.loaded().imported.input_dim_names);
                   })
      .def_prop_ro("outputs",
                   [](const Model& model) {
                     return tensor_infos(model.loaded(), model.loaded().graph().outputs,
                                         model.loaded().imported.output_dim_names);
                   })
      .def_prop_ro(
          "dims", [](const Model& model) { return model.loaded().imported.bound_dims; },
          "Every symbolic dimension of the inputs, as bound (1 where none was given).")
      .def_prop_ro(
          "given_dims", [](const Model& model) { return model.loaded().dims; },
          "The dims passed to load.")
      .def_prop_ro(
          "given_shapes", [](const Model& model) { return model.loaded().shapes; },
          "The shapes passed to load.")
      .def_prop_ro(
          "fused", [](const Model& model) { return model.loaded().fused; },
          "Whether the graph was prepared for inference: constants folded, BatchNormalization "
          "folded, activations and embedding bags fused.")
      .def_prop_ro("nodes", [](const Model& model) { return model.loaded().graph().nodes.size(); })
      .def_prop_ro(
          "flops",
          [](const Model& model) {
            double flops = 0;
            for (const Node& node : model.loaded().graph().nodes) flops += node.cost.flops;
            return flops;
          },
          "Floating-point operations of one run at the bound shapes.")
      .def_prop_ro(
          "op_counts",
          [](const Model& model) {
            std::map<std::string, int> counts;
            for (const Node& node : model.loaded().graph().nodes) ++counts[node.op_type];
            return counts;
          },
          "Nodes per op type.")
      .def(
          "summary",
          [](const Model& model) {
            const LoadedModel& loaded = model.loaded();
            return render_summary(summarize(loaded.graph(), loaded.path, loaded.imported.producer));
          },
          "The op summary `tandem inspect` prints.")
      .def(
          "to_json",
          [](const Model& model) {
            const LoadedModel& loaded = model.loaded();
            return json_object(
                summary_json(summarize(loaded.graph(), loaded.path, loaded.imported.producer)));
          },
          "The op summary as `tandem inspect --json` gives it.")
      .def("run", &Model::run, "inputs"_a,
           "Runs the model on this machine's CPU. `inputs` maps input names to arrays; their "
           "shapes bind the model's symbolic dims (each new set of shapes is imported and "
           "compiled once, then reused). Returns the outputs by name as numpy arrays.")
      .def_prop_ro("compiled_shapes", &Model::compiled_shapes,
                   "How many sets of input shapes `run` has compiled the model for.")
      .def(
          "plan",
          [](const Model& model, const ClusterHandle& cluster, const std::string& strategy,
             const std::string& objective, int microbatches, std::optional<double> max_latency,
             const std::map<std::string, std::string>& pins,
             const std::vector<std::string>& exclude) {
            return make_plan(model, cluster, strategy, objective, microbatches, max_latency, pins,
                             exclude);
          },
          "cluster"_a, "strategy"_a = "auto", "objective"_a = "latency", "microbatches"_a = 1,
          "max_latency"_a = nb::none(), "pins"_a = std::map<std::string, std::string>{},
          "exclude"_a = std::vector<std::string>{},
          "Plans the model on the cluster as `tandem plan` does: every baseline strategy and "
          "`strategy` side by side. `pins` maps node-name patterns to device ids, `exclude` "
          "lists devices no op may use, `max_latency` (seconds) bounds a cost plan.")
      .def("__repr__", [](const Model& model) {
        return "<tandem.Model " + model.loaded().path + ": " +
               std::to_string(model.loaded().graph().nodes.size()) + " nodes>";
      });
  m.def(
      "_load",
      [](const std::string& path, const std::map<std::string, int64_t>& dims,
         const std::map<std::string, std::vector<int64_t>>& shapes, bool fuse) {
        nb::gil_scoped_release release;
        std::map<std::string, Shape> given(shapes.begin(), shapes.end());
        return Model(import_model(path, dims, given, fuse));
      },
      "path"_a, "dims"_a, "shapes"_a, "fuse"_a);

  nb::class_<DeviceInfo>(m, "DeviceInfo", "A device of a cluster.")
      .def_ro("id", &DeviceInfo::id)
      .def_ro("kind", &DeviceInfo::kind, "cpu, gpu or tpu.")
      .def_ro("backend", &DeviceInfo::backend, "cpu, cuda, pjrt or none (plan and simulate only).")
      .def_ro("host", &DeviceInfo::host)
      .def_ro("preset", &DeviceInfo::preset)
      .def_ro("memory_bytes", &DeviceInfo::memory_bytes)
      .def_ro("backend_built", &DeviceInfo::backend_built,
              "Whether this build has the device's backend.")
      .def("__repr__", [](const DeviceInfo& device) {
        return "<tandem.DeviceInfo " + device.id + " (" + device.kind + ", " + device.backend +
               ")>";
      });

  nb::class_<ClusterHandle>(m, "Cluster", "Devices, hosts and links (docs/CLUSTERS.md).")
      .def_static(
          "from_file",
          [](const std::filesystem::path& path) {
            nb::gil_scoped_release release;
            return ClusterHandle{std::make_shared<const Cluster>(load_cluster(path.string()))};
          },
          "path"_a, "Reads and checks a cluster file.")
      .def_static(
          "local",
          [](const std::string& profile) {
            return ClusterHandle{std::make_shared<const Cluster>(local_cluster(profile))};
          },
          "profile"_a = "",
          "This machine's CPU as one device, cpu0 (figures from a calibration "
          "profile when one is given).")
      .def_prop_ro("file",
                   [](const ClusterHandle& cluster) -> std::optional<std::string> {
                     if (cluster.cluster->file.empty()) return std::nullopt;
                     return cluster.cluster->file;
                   })
      .def_prop_ro("devices",
                   [](const ClusterHandle& cluster) { return device_infos(*cluster.cluster); })
      .def(
          "to_json",
          [](const ClusterHandle& cluster) { return json_object(cluster_json(*cluster.cluster)); },
          "The cluster as `tandem devices --json` gives it.")
      .def("__repr__", [](const ClusterHandle& cluster) {
        return "<tandem.Cluster " +
               (cluster.cluster->file.empty() ? "local" : cluster.cluster->file) + ": " +
               std::to_string(cluster.cluster->devices.size()) + " devices>";
      });

  nb::class_<DeviceFigure>(m, "DeviceFigure", "A device's predicted share of a plan.")
      .def_ro("id", &DeviceFigure::id)
      .def_ro("busy_seconds", &DeviceFigure::busy_seconds, "Predicted compute per batch.")
      .def_ro("memory_bytes", &DeviceFigure::memory_bytes, "Weights and peak live activations.")
      .def_ro("nodes", &DeviceFigure::nodes, "Nodes placed on it.")
      .def_ro("batch_share", &DeviceFigure::batch_share,
              "Data-parallel plans: its share of the batch.")
      .def("__repr__", [](const DeviceFigure& figure) {
        return nb::str("DeviceFigure(id={!r}, busy_seconds={:.3g}, nodes={})")
            .format(figure.id, figure.busy_seconds, figure.nodes);
      });
  nb::class_<StrategyFigure>(m, "StrategyFigure", "One strategy's result, beside the others.")
      .def_ro("strategy", &StrategyFigure::strategy)
      .def_ro("feasible", &StrategyFigure::feasible)
      .def_ro("latency_seconds", &StrategyFigure::latency_seconds)
      .def_ro("throughput_samples_per_second", &StrategyFigure::throughput_samples_per_second)
      .def_ro("why_not", &StrategyFigure::why_not, "Why it found no plan.")
      .def_ro("planning_seconds", &StrategyFigure::planning_seconds)
      .def("__repr__", [](const StrategyFigure& figure) {
        return "<tandem.StrategyFigure " + figure.strategy +
               (figure.feasible ? "" : " (no plan: " + figure.why_not + ")") + ">";
      });
  nb::class_<SegmentInfo>(m, "Segment", "Consecutive nodes a plan runs on one device.")
      .def_ro("device", &SegmentInfo::device)
      .def_ro("nodes", &SegmentInfo::nodes);

  nb::class_<PlanHandle>(m, "Plan", "A placement of a model on a cluster, with its prediction.")
      .def_static("load", &load_plan, "path"_a,
                  "Reads a plan file (`tandem plan -o`, Plan.save), with the model and cluster it "
                  "names; refused when either changed since.")
      .def(
          "save",
          [](const PlanHandle& plan, const std::filesystem::path& path) {
            const PlanState& state = *plan.state;
            write_plan(path.string(), state.plan, *state.problem, state.provenance());
          },
          "path"_a, "Writes the plan file, which `tandem run --plan` and Plan.load read.")
      .def_prop_ro("strategy", [](const PlanHandle& plan) { return plan.state->plan.strategy; })
      .def_prop_ro(
          "chosen",
          [](const PlanHandle& plan) {
            return plan.state->plan.chosen.empty() ? plan.state->plan.strategy
                                                   : plan.state->plan.chosen;
          },
          "The strategy whose placement this is (what auto chose).")
      .def_prop_ro("reason", [](const PlanHandle& plan) { return plan.state->plan.reason; })
      .def_prop_ro("objective",
                   [](const PlanHandle& plan) {
                     return std::string(objective_name(plan.state->plan.objective));
                   })
      .def_prop_ro("microbatches",
                   [](const PlanHandle& plan) { return plan.state->plan.microbatches; })
      .def_prop_ro(
          "latency_seconds",
          [](const PlanHandle& plan) { return plan.state->plan.predicted.latency_seconds; },
          "Predicted, one batch end to end.")
      .def_prop_ro("throughput_samples_per_second",
                   [](const PlanHandle& plan) {
                     return plan.state->plan.predicted.throughput_samples_per_second;
                   })
      .def_prop_ro(
          "cost_per_million_samples",
          [](const PlanHandle& plan) -> std::optional<double> {
            const double cost = plan.state->plan.predicted.cost_per_million_samples;
            if (!(cost > 0)) return std::nullopt;
            return cost;
          },
          "USD, where every device used has a price; None otherwise.")
      .def_prop_ro(
          "lower_bound", [](const PlanHandle& plan) { return plan.state->plan.lower_bound; },
          "What no plan can beat, in the objective's unit.")
      .def_prop_ro("efficiency", [](const PlanHandle& plan) { return plan.state->plan.efficiency; })
      .def_prop_ro("speedup_over_best_single",
                   [](const PlanHandle& plan) { return plan.state->plan.speedup_over_best_single; })
      .def_prop_ro("batch", [](const PlanHandle& plan) { return plan.state->split.batch; })
      .def_prop_ro("devices", [](const PlanHandle& plan) { return device_figures(*plan.state); })
      .def_prop_ro("segments",
                   [](const PlanHandle& plan) {
                     std::vector<SegmentInfo> segments;
                     const PlanState& state = *plan.state;
                     for (const Segment& segment : state.plan.segments) {
                       SegmentInfo info{state.cluster->devices[segment.device].id, {}};
                       for (int node : segment.nodes)
                         info.nodes.push_back(state.model->graph().nodes[node].label());
                       segments.push_back(std::move(info));
                     }
                     return segments;
                   })
      .def_prop_ro(
          "strategies",
          [](const PlanHandle& plan) {
            std::vector<StrategyFigure> figures;
            for (const StrategyResult& result : plan.state->strategies) {
              StrategyFigure figure{result.strategy, result.plan.has_value(), {}, {},
                                    result.why_not,  result.planning_seconds};
              if (result.plan) {
                figure.latency_seconds = result.plan->predicted.latency_seconds;
                figure.throughput_samples_per_second =
                    result.plan->predicted.throughput_samples_per_second;
              }
              figures.push_back(std::move(figure));
            }
            return figures;
          },
          "Every strategy tried, side by side; the one asked for last.")
      .def_prop_ro("model", [](const PlanHandle& plan) { return Model(plan.state->model); })
      .def_prop_ro("cluster",
                   [](const PlanHandle& plan) { return ClusterHandle{plan.state->cluster}; })
      .def(
          "summary",
          [](const PlanHandle& plan) {
            return render_plan_report(plan.state->report(), *plan.state->problem);
          },
          "The report `tandem plan` prints.")
      .def(
          "to_json",
          [](const PlanHandle& plan) {
            return json_object(plan_report_json(plan.state->report(), *plan.state->problem));
          },
          "The plan as `tandem plan --json` gives it (docs/JSON.md).")
      .def(
          "run",
          [](const PlanHandle& plan, const nb::dict& inputs) {
            PlanState& state = *plan.state;
            const std::vector<InputArray> arrays = input_arrays(state.model->graph(), inputs);
            return run_arrays(
                state.model->graph(), arrays,
                [&](const std::vector<Tensor>& tensors) { return state.run(tensors); });
          },
          "inputs"_a,
          "Runs the plan across the cluster's devices (those this build has). The arrays must "
          "have the shapes the plan was made for; tandem.Session plans each new shape.")
      .def("simulate", &simulate_plan, "replicas"_a = 1, "trace"_a = nb::none(),
           "report"_a = nb::none(),
           "The discrete-event simulation of the plan (`tandem simulate`): optionally writes the "
           "predicted timeline as Chrome trace events and the HTML report.")
      .def("__repr__", [](const PlanHandle& plan) {
        const Plan& p = plan.state->plan;
        return nb::str("<tandem.Plan {} ({}): {} segments, predicted {:.3g} ms>")
            .format(p.strategy, p.chosen.empty() ? p.strategy : p.chosen, p.segments.size(),
                    p.predicted.latency_seconds * 1e3);
      });

  nb::class_<SimulatedDevice>(m, "SimulatedDevice", "A device over a simulated run.")
      .def_ro("id", &SimulatedDevice::id)
      .def_ro("busy_seconds", &SimulatedDevice::busy_seconds)
      .def_ro("idle_seconds", &SimulatedDevice::idle_seconds)
      .def_ro("peak_memory_bytes", &SimulatedDevice::peak_memory_bytes)
      .def_ro("capacity_bytes", &SimulatedDevice::capacity_bytes, "None when unknown.");
  nb::class_<SimulationHandle>(m, "Simulation", "A plan's discrete-event simulation (predicted).")
      .def_prop_ro("latency_seconds",
                   [](const SimulationHandle& s) { return s.result.latency_seconds; })
      .def_prop_ro("throughput_samples_per_second",
                   [](const SimulationHandle& s) { return s.result.throughput_samples_per_second; })
      .def_prop_ro("replicas", [](const SimulationHandle& s) { return s.result.replicas; })
      .def_prop_ro(
          "overflow",
          [](const SimulationHandle& s) -> std::optional<std::string> {
            if (!s.result.overflow) return std::nullopt;
            return s.result.overflow->device;
          },
          "The device that ran out of memory, or None.")
      .def_prop_ro("devices",
                   [](const SimulationHandle& s) {
                     std::vector<SimulatedDevice> devices;
                     for (const DeviceActivity& device : s.result.devices) {
                       SimulatedDevice row{device.id, device.busy_seconds, device.idle_seconds,
                                           device.peak_memory_bytes, std::nullopt};
                       if (std::isfinite(device.capacity_bytes))
                         row.capacity_bytes = device.capacity_bytes;
                       devices.push_back(std::move(row));
                     }
                     return devices;
                   })
      .def(
          "summary",
          [](const SimulationHandle& s) {
            return render_simulation(s.result, s.state->plan, *s.state->problem);
          },
          "The report `tandem simulate` prints.")
      .def("to_json", [](const SimulationHandle& s) {
        return json_object(simulation_json(s.result, s.state->plan, *s.state->problem));
      });
}
