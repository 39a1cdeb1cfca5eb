#include "backends/pjrt/pjrt_device.h"

#include <algorithm>
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

// A lowered graph, compiled, with its weights uploaded once.
class PjrtProgram : public GraphProgram {
 public:
  PjrtProgram(const Graph& graph, PjrtSession& session, size_t device)
      : session_(session), device_(device), target_(session.client.addressable_device(device)) {
    const LoweredGraph lowered = lower_graph(graph);
    executable_ = session.cache.get(session.client, lowered.module);
    if (executable_->num_outputs() != graph.outputs.size()) {
      throw std::logic_error("PJRT program has " + std::to_string(executable_->num_outputs()) +
                             " outputs for a graph with " + std::to_string(graph.outputs.size()));
    }
    for (const Tensor& constant : lowered.constants) {
      weights_.push_back(upload(session.client, constant, device));
    }
    for (int id : graph.outputs)
      output_types_.push_back(graph.values[static_cast<size_t>(id)].type);
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    std::vector<PjrtBuffer> uploaded;
    uploaded.reserve(inputs.size());
    for (const Tensor& input : inputs) uploaded.push_back(upload(session_.client, input, device_));
    std::vector<const PjrtBuffer*> arguments;
    for (const PjrtBuffer& buffer : uploaded) arguments.push_back(&buffer);
    for (const PjrtBuffer& buffer : weights_) arguments.push_back(&buffer);
    std::vector<PjrtBuffer> results = executable_->execute(arguments, target_);
    std::vector<Tensor> outputs;
    for (size_t i = 0; i < results.size(); ++i) {
      Tensor output = Tensor::allocate(output_types_[i].dtype, output_types_[i].shape);
      results[i].to_host(output.raw(), output.nbytes());
      outputs.push_back(std::move(output));
    }
    return outputs;
  }

 private:
  PjrtSession& session_;
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

bool PjrtDevice::supports(const Node& node) const {
  const std::vector<std::string> types = lowered_op_types();
  return node.domain.empty() && std::binary_search(types.begin(), types.end(), node.op_type);
}

std::unique_ptr<GraphProgram> PjrtDevice::compile_graph(const Graph& graph) {
  return std::make_unique<PjrtProgram>(graph, *session_, device_);
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

}  // namespace tandem::pjrt
