#include "backends/pjrt/pjrt_device.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "backends/pjrt/lower.h"
#include "ir/error.h"

namespace tandem::pjrt {
namespace {

PjrtBuffer upload(const PjrtClient& client, const Tensor& tensor, size_t device) {
  const PJRT_Buffer_Type type = buffer_type(tensor.dtype());
  if (type == PJRT_Buffer_Type_INVALID) {
    throw InputError("PJRT: no buffer type for " + std::string(dtype_name(tensor.dtype())));
  }
  return client.to_device(tensor.raw(), type, tensor.shape(), device);
}

// A host tensor with a device-side twin: when the last reference to the host memory goes, the
// twin is forgotten (before the memory is freed, so its address cannot be reused meanwhile).
struct Shadowed {
  Shadowed(Tensor host, std::shared_ptr<PjrtSession> session)
      : host(std::move(host)), session(std::move(session)) {}
  Shadowed(const Shadowed&) = delete;
  Shadowed& operator=(const Shadowed&) = delete;
  ~Shadowed() { session->resident.forget(host.raw()); }
  Tensor host;
  std::shared_ptr<PjrtSession> session;
};

bool same_dims(const PjrtBuffer& buffer, const Tensor& tensor) {
  const std::vector<int64_t> dims = buffer.dims();
  return dims.size() == tensor.shape().size() &&
         std::equal(dims.begin(), dims.end(), tensor.shape().begin());
}

// A lowered graph, compiled, with its weights uploaded once.
class PjrtProgram : public GraphProgram {
 public:
  PjrtProgram(const Graph& graph, std::shared_ptr<PjrtSession> session, size_t device,
              const std::string& device_name)
      : session_(std::move(session)),
        device_(device),
        target_(session_->client.addressable_device(device)) {
    const LoweredGraph lowered = lower_graph(graph);
    executable_ = session_->cache.get(session_->client, lowered.module, [&] {
      if (session_->progress) {
        const size_t ops = graph.nodes.size();
        session_->progress(device_name + ": compiling a segment of " + std::to_string(ops) +
                           (ops == 1 ? " op" : " ops") + " with XLA");
      }
    });
    if (executable_->num_outputs() != graph.outputs.size()) {
      throw std::logic_error("PJRT program has " + std::to_string(executable_->num_outputs()) +
                             " outputs for a graph with " + std::to_string(graph.outputs.size()));
    }
    for (const Tensor& constant : lowered.constants) {
      weights_.push_back(upload(session_->client, constant, device));
    }
    for (int id : graph.outputs)
      output_types_.push_back(graph.values[static_cast<size_t>(id)].type);
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    std::vector<std::shared_ptr<const PjrtBuffer>> fed;
    fed.reserve(inputs.size());
    for (const Tensor& input : inputs) fed.push_back(on_device(input));
    std::vector<const PjrtBuffer*> arguments;
    for (const auto& buffer : fed) arguments.push_back(buffer.get());
    for (const PjrtBuffer& buffer : weights_) arguments.push_back(&buffer);
    std::vector<PjrtBuffer> results = executable_->execute(arguments, target_);
    std::vector<Tensor> outputs;
    for (size_t i = 0; i < results.size(); ++i) {
      Tensor host = Tensor::allocate(output_types_[i].dtype, output_types_[i].shape);
      results[i].to_host(host.raw(), host.nbytes());
      // The result stays on the device as the host tensor's twin, for a next program.
      session_->resident.keep(host.raw(), device_,
                              std::make_shared<const PjrtBuffer>(std::move(results[i])));
      auto shadow = std::make_shared<Shadowed>(host, session_);
      outputs.push_back(Tensor::wrap(host.dtype(), host.shape(), host.raw(), std::move(shadow)));
    }
    return outputs;
  }

 private:
  // The input as a buffer on this program's device: its twin here, a device-to-device copy of
  // its twin elsewhere on the plugin, or an upload from host memory.
  std::shared_ptr<const PjrtBuffer> on_device(const Tensor& input) {
    ResidentBuffers& resident = session_->resident;
    if (auto twin = resident.find(input.raw(), device_); twin && same_dims(*twin, input)) {
      resident.count(&ResidentBuffers::Counts::reused);
      return twin;
    }
    if (auto twin = resident.find_any(input.raw()); twin && same_dims(*twin, input)) {
      auto copy = std::make_shared<const PjrtBuffer>(twin->copy_to_device(target_));
      resident.keep(input.raw(), device_, copy);
      resident.count(&ResidentBuffers::Counts::device_to_device);
      return copy;
    }
    resident.count(&ResidentBuffers::Counts::uploaded);
    return std::make_shared<const PjrtBuffer>(upload(session_->client, input, device_));
  }

  std::shared_ptr<PjrtSession> session_;
  size_t device_;
  PJRT_Device* target_;
  std::shared_ptr<const PjrtExecutable> executable_;
  std::vector<PjrtBuffer> weights_;
  std::vector<TensorType> output_types_;
};

// One node run as its own program; the executor hands it allocated outputs to fill.
class PjrtKernel : public Kernel {
 public:
  PjrtKernel(std::unique_ptr<Graph> graph, std::unique_ptr<GraphProgram> program,
             std::vector<int> fed_inputs)
      : graph_(std::move(graph)),
        program_(std::move(program)),
        fed_inputs_(std::move(fed_inputs)) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    std::vector<Tensor> fed;
    for (int i : fed_inputs_) fed.push_back(inputs[static_cast<size_t>(i)]);
    std::vector<Tensor> results = program_->run(fed);
    size_t next = 0;
    for (Tensor& output : outputs) {
      if (!output.defined()) continue;
      const Tensor& result = results[next++];
      std::copy_n(static_cast<const std::byte*>(result.raw()), result.nbytes(),
                  static_cast<std::byte*>(output.raw()));
    }
  }

 private:
  std::unique_ptr<Graph> graph_;  // the program's graph, kept for its lifetime
  std::unique_ptr<GraphProgram> program_;
  std::vector<int> fed_inputs_;  // the node's inputs that are graph inputs (not constants)
};

}  // namespace

std::shared_ptr<PjrtSession> PjrtSession::open(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<PjrtSession>> sessions;
  std::lock_guard lock(mutex);
  auto& session = sessions[path];
  if (!session) {
    const char* setting = std::getenv("TANDEM_CACHE_DIR");
    const bool off = setting && std::string_view(setting) == "off";
    session = std::make_shared<PjrtSession>(PjrtPlugin::load(path),
                                            off ? "" : ExecutableCache::default_directory());
  }
  return session;
}

PjrtDevice::PjrtDevice(std::string name, std::shared_ptr<PjrtSession> session, size_t device)
    : name_(std::move(name)), session_(std::move(session)), device_(device) {
  session_->client.addressable_device(device_);  // InputError when there is no such device
}

std::unique_ptr<GraphProgram> PjrtDevice::compile_graph(const Graph& graph) {
  return std::make_unique<PjrtProgram>(graph, session_, device_, name_);
}

Tensor PjrtDevice::receive(const Tensor& tensor) {
  ResidentBuffers& resident = session_->resident;
  if (resident.find(tensor.raw(), device_)) return tensor;
  const auto twin = resident.find_any(tensor.raw());
  if (!twin || !same_dims(*twin, tensor)) return tensor.clone();
  resident.keep(tensor.raw(), device_,
                std::make_shared<const PjrtBuffer>(
                    twin->copy_to_device(session_->client.addressable_device(device_))));
  resident.count(&ResidentBuffers::Counts::device_to_device);
  return tensor;  // host memory is shared: nothing writes to a tensor once made
}

void ResidentBuffers::keep(const void* host, size_t device,
                           std::shared_ptr<const PjrtBuffer> buffer) {
  std::lock_guard lock(mutex_);
  buffers_[host][device] = std::move(buffer);
}

std::shared_ptr<const PjrtBuffer> ResidentBuffers::find(const void* host, size_t device) const {
  std::lock_guard lock(mutex_);
  const auto twins = buffers_.find(host);
  if (twins == buffers_.end()) return nullptr;
  const auto twin = twins->second.find(device);
  return twin == twins->second.end() ? nullptr : twin->second;
}

std::shared_ptr<const PjrtBuffer> ResidentBuffers::find_any(const void* host) const {
  std::lock_guard lock(mutex_);
  const auto twins = buffers_.find(host);
  return twins == buffers_.end() || twins->second.empty() ? nullptr : twins->second.begin()->second;
}

void ResidentBuffers::forget(const void* host) {
  std::lock_guard lock(mutex_);
  buffers_.erase(host);
}

void ResidentBuffers::count(int Counts::*which) {
  std::lock_guard lock(mutex_);
  ++(counts_.*which);
}

ResidentBuffers::Counts ResidentBuffers::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::unique_ptr<Kernel> PjrtDevice::compile(const KernelSpec& spec) {
  auto graph = std::make_unique<Graph>();
  graph->opset = spec.opset;
  Node node = spec.node;
  std::vector<int> fed_inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] < 0) continue;
    const int id = graph->add_value("in" + std::to_string(i), spec.input_types[i]);
    if (spec.constant_inputs[i]) {
      graph->values[static_cast<size_t>(id)].constant = *spec.constant_inputs[i];
    } else {
      graph->inputs.push_back(id);
      fed_inputs.push_back(static_cast<int>(i));
    }
    node.inputs[i] = id;
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] < 0) continue;
    node.outputs[i] = graph->add_value("out" + std::to_string(i), spec.output_types[i]);
    graph->outputs.push_back(node.outputs[i]);
  }
  graph->nodes.push_back(std::move(node));
  graph->sort_topologically();
  const std::string refusal = lowering_refusal(graph->nodes[0], *graph);
  if (!refusal.empty()) throw InputError(spec.node.label(), "PJRT: " + refusal);
  auto program = compile_graph(*graph);
  return std::make_unique<PjrtKernel>(std::move(graph), std::move(program), std::move(fed_inputs));
}

std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster,
                                                  std::span<const DeviceSpec* const> specs,
                                                  bool progress) {
  std::vector<std::unique_ptr<Device>> devices;
  std::map<std::string, size_t> next_ordinal;  // per plugin
  for (const DeviceSpec* spec : specs) {
    const std::string plugin = plugin_path(spec->plugin, device_kind_name(spec->kind));
    std::shared_ptr<PjrtSession> session;
    try {
      session = PjrtSession::open(plugin);
    } catch (const std::exception& error) {
      throw InputError(cluster.file,
                       "device " + spec->id + " (backend pjrt) cannot start: " + error.what());
    }
    if (progress) {
      session->progress = [](const std::string& what) {
        std::fprintf(stderr, "%s\n", what.c_str());
      };
    }
    const size_t ordinal = next_ordinal[plugin]++;
    if (ordinal >= session->client.addressable_device_count()) {
      throw InputError(cluster.file,
                       "device " + spec->id + ": the PJRT plugin " + plugin + " has " +
                           std::to_string(session->client.addressable_device_count()) +
                           " devices, fewer than the cluster declares");
    }
    devices.push_back(std::make_unique<PjrtDevice>(spec->id, session, ordinal));
  }
  return devices;
}

CalibrationTarget calibration_target(const std::string& plugin_option) {
  const std::string plugin = plugin_path(plugin_option);
  auto session = PjrtSession::open(plugin);
  CalibrationTarget target;
  target.device = std::make_unique<PjrtDevice>("pjrt0", session, 0);
  const std::string platform = session->client.platform_name();
  target.kind = platform == "tpu"                         ? DeviceKind::kTpu
                : platform == "cuda" || platform == "gpu" ? DeviceKind::kGpu
                                                          : DeviceKind::kCpu;
  const auto devices = session->client.devices();
  const std::string device_kind = devices.empty() ? platform : devices.front().kind;
  target.description = "pjrt " + platform + ": " + device_kind;
  target.round_trip = [session](size_t bytes) {
    std::vector<float> host(bytes / sizeof(float), 1.0f);
    const int64_t dims[] = {static_cast<int64_t>(host.size())};
    const auto start = std::chrono::steady_clock::now();
    PjrtBuffer buffer = session->client.to_device(host.data(), PJRT_Buffer_Type_F32, dims);
    buffer.to_host(host.data(), bytes);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // A CPU plugin's device memory is the host's.
  if (target.kind == DeviceKind::kCpu) {
    target.memory_bytes =
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  }
  return target;
}

}  // namespace tandem::pjrt
