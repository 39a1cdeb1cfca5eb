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
#include "util/cpu_affinity.h"

namespace tandem::pjrt {
namespace {

PjrtBuffer upload(const PjrtClient& client, const Tensor& tensor, size_t device) {
  const PJRT_Buffer_Type type = buffer_type(tensor.dtype());
  if (type == PJRT_Buffer_Type_INVALID) {
    throw InputError("PJRT: no buffer type for " + std::string(dtype_name(tensor.dtype())));
  }
  return client.to_device(tensor.raw(), type, tensor.shape(), device);
}

// A lowered graph, compiled, with its weights uploaded once.
class PjrtProgram : public GraphProgram {
 public:
  PjrtProgram(const Graph& graph, std::shared_ptr<PjrtSession> session, size_t device,
              const std::string& device_name, const PjrtMemory& memory)
      : session_(std::move(session)),
        device_(device),
        memory_(memory),
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

  // Inputs come in this device's memory (GraphExecutor receives the others); outputs stay
  // there.
  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    std::vector<const PjrtBuffer*> arguments;
    for (const Tensor& input : inputs) {
      if (input.memory() != &memory_) {
        throw std::logic_error("PJRT program input not in " + memory_.name());
      }
      session_->transfers.program_inputs++;
      arguments.push_back(static_cast<const PjrtBuffer*>(input.raw()));
    }
    for (const PjrtBuffer& buffer : weights_) arguments.push_back(&buffer);
    std::vector<PjrtBuffer> results = executable_->execute(arguments, target_);
    std::vector<Tensor> outputs;
    for (size_t i = 0; i < results.size(); ++i) {
      outputs.push_back(
          memory_.wrap(std::move(results[i]), output_types_[i].dtype, output_types_[i].shape));
    }
    return outputs;
  }

 private:
  std::shared_ptr<PjrtSession> session_;
  size_t device_;
  const PjrtMemory& memory_;
  PJRT_Device* target_;
  std::shared_ptr<const PjrtExecutable> executable_;
  std::vector<PjrtBuffer> weights_;
  std::vector<TensorType> output_types_;
};

// One node run as its own program; the executor hands it allocated outputs to fill.
class PjrtKernel : public Kernel {
 public:
  PjrtKernel(std::unique_ptr<Graph> graph, std::unique_ptr<GraphProgram> program,
             std::vector<int> fed_inputs, Device& device)
      : device_(device),
        graph_(std::move(graph)),
        program_(std::move(program)),
        fed_inputs_(std::move(fed_inputs)) {}

  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    std::vector<Tensor> fed;
    for (int i : fed_inputs_) fed.push_back(device_.receive(inputs[static_cast<size_t>(i)]));
    std::vector<Tensor> results = program_->run(fed);
    size_t next = 0;
    for (Tensor& output : outputs) {
      if (!output.defined()) continue;
      const Tensor& result = results[next++];
      result.memory()->copy_to_host(result, output.raw());
    }
  }

 private:
  Device& device_;
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

int PjrtDevice::busy_host_cores() const {
  if (session_->client.platform_name() != "cpu") return 1;
  return static_cast<int>(affinity_cores().size());
}

std::unique_ptr<GraphProgram> PjrtDevice::compile_graph(const Graph& graph) {
  return std::make_unique<PjrtProgram>(graph, session_, device_, name_, memory_);
}

std::string PjrtMemory::name() const { return device_.name() + " memory"; }

void PjrtMemory::copy_to_host(const Tensor& tensor, void* host) const {
  static_cast<const PjrtBuffer*>(tensor.raw())->to_host(host, tensor.nbytes());
}

Tensor PjrtMemory::wrap(PjrtBuffer buffer, DType dtype, Shape shape) const {
  auto owned = std::make_shared<PjrtBuffer>(std::move(buffer));
  PjrtBuffer* handle = owned.get();
  return Tensor::wrap(dtype, std::move(shape), handle, std::move(owned), this);
}

Tensor PjrtDevice::allocate(DType, Shape) {
  throw std::logic_error(name_ + ": PJRT buffers are made by programs and copies only");
}

Tensor PjrtDevice::receive(const Tensor& tensor) {
  if (tensor.memory() == &memory_) return tensor;
  const auto* peer = dynamic_cast<const PjrtMemory*>(tensor.memory());
  if (peer && &peer->device().session() == session_.get()) {
    const auto* buffer = static_cast<const PjrtBuffer*>(tensor.raw());
    session_->transfers.device_to_device++;
    return memory_.wrap(buffer->copy_to_device(session_->client.addressable_device(device_)),
                        tensor.dtype(), tensor.shape());
  }
  // From host memory, or another backend's device through it.
  const Tensor host = tensor.to_host();
  session_->transfers.uploaded++;
  return memory_.wrap(upload(session_->client, host, device_), host.dtype(), host.shape());
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
  return std::make_unique<PjrtKernel>(std::move(graph), std::move(program), std::move(fed_inputs),
                                      *this);
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
