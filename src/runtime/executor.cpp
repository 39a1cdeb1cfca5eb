#include "runtime/executor.h"

#include <cstring>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "runtime/memory_limit.h"

namespace tandem {

struct GraphExecutor::Step {
  enum class Kind { kKernel, kView, kIf, kLoop };
  const Node* node = nullptr;
  const OpSchema* schema = nullptr;
  Kind kind = Kind::kKernel;
  bool static_shapes = false;  // output shapes known at build time
  std::unique_ptr<Kernel> kernel;
  // If: then, else; Loop: body. With the ids of this graph's values each one captures.
  std::vector<std::unique_ptr<GraphExecutor>> subgraphs;
  std::vector<std::vector<int>> captures;
};

std::vector<std::pair<const Node*, std::string>> GraphExecutor::kernel_implementations() const {
  std::vector<std::pair<const Node*, std::string>> implementations;
  for (const auto& step : steps_) {
    if (step->kernel) implementations.emplace_back(step->node, step->kernel->implementation());
  }
  return implementations;
}

GraphExecutor::GraphExecutor(const Graph& graph, Device& device) : graph_(graph), device_(device) {
  program_ = device.compile_graph(graph);
  if (program_) return;
  // Kernels are compiled from the device's version of each node; everything else (observers,
  // the memory plan, subgraphs) sees the graph as given.
  specialised_ = device.specialise(graph);
  const Graph& compiled = specialised_ ? *specialised_ : graph;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    auto step = std::make_unique<Step>();
    step->node = &node;
    step->schema = OpRegistry::instance().find(node.op_type);
    if (!step->schema) throw InputError(node.label() + ": unsupported op");
    step->static_shapes = !step->schema->data_dependent_shape;
    for (int out : node.outputs) {
      if (out >= 0 && !is_static(graph.values[out].type.shape)) step->static_shapes = false;
    }
    if (node.op_type == "If" || node.op_type == "Loop") {
      step->kind = node.op_type == "If" ? Step::Kind::kIf : Step::Kind::kLoop;
      for (const char* attr : {"then_branch", "else_branch", "body"}) {
        std::shared_ptr<Graph> sub = node.attr_graph(attr);
        if (!sub) continue;
        step->subgraphs.push_back(std::make_unique<GraphExecutor>(*sub, device));
        std::vector<int> ids;
        for (const std::string& name : Graph::captured_names(*sub))
          ids.push_back(graph.find_value(name));
        step->captures.push_back(std::move(ids));
      }
    } else if (step->schema->output_aliases_input) {
      step->kind = Step::Kind::kView;
    } else {
      std::vector<TensorType> input_types, output_types;
      std::vector<const Tensor*> constants;
      for (int in : node.inputs) {
        input_types.push_back(in >= 0 ? graph.values[in].type : TensorType{});
        constants.push_back(in >= 0 && graph.values[in].is_constant() ? &graph.values[in].constant
                                                                      : nullptr);
      }
      for (int out : node.outputs)
        output_types.push_back(out >= 0 ? graph.values[out].type : TensorType{});
      step->kernel = device.compile(
          KernelSpec{compiled.nodes[n], graph.opset, input_types, output_types, constants});
    }
    steps_.push_back(std::move(step));
  }
  last_use_ = graph.last_uses();
  constants_.resize(graph.values.size());
  for (size_t id = 0; id < graph.values.size(); ++id) {
    if (graph.values[id].is_constant()) constants_[id] = resident(graph.values[id].constant);
  }
  plan_buffers();
}

Tensor GraphExecutor::resident(const Tensor& tensor) {
  return !tensor.defined() || tensor.memory() == device_.memory() ? tensor
                                                                  : device_.receive(tensor);
}

Tensor GraphExecutor::output_tensor(DType dtype, Shape shape) {
  return device_.memory() ? device_.allocate(dtype, std::move(shape))
                          : output_memory_.allocate(dtype, std::move(shape));
}

GraphExecutor::~GraphExecutor() = default;

void GraphExecutor::finish() {
  if (const std::shared_ptr<const Event> done = device_.record()) done->synchronize();
}

void GraphExecutor::plan_buffers() {
  planned_slot_.assign(graph_.values.size(), -1);
  std::vector<bool> is_output(graph_.values.size(), false);
  for (int out : graph_.outputs) is_output[out] = true;
  std::vector<BufferRequest> requests;
  // A view keeps the buffer it looks into alive until the view's own last use.
  std::vector<int> root(graph_.values.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = *steps_[s];
    const Node& node = *step.node;
    if (step.kind == Step::Kind::kView && node.inputs[0] >= 0) {
      const int slot = planned_slot_[node.inputs[0]] >= 0 ? node.inputs[0] : root[node.inputs[0]];
      for (int out : node.outputs) {
        if (out < 0 || slot < 0) continue;
        root[out] = slot;
        BufferRequest& request = requests[planned_slot_[slot]];
        request.last_step = std::max(request.last_step, last_use_[out]);
      }
    }
    if (step.kind != Step::Kind::kKernel || !step.static_shapes) continue;
    for (int out : node.outputs) {
      if (out < 0 || is_output[out]) continue;
      const TensorType& type = graph_.values[out].type;
      planned_slot_[out] = static_cast<int>(requests.size());
      requests.push_back({numel(type.shape) * dtype_size(type.dtype), static_cast<int>(s),
                          std::max(static_cast<int>(s), last_use_[out])});
    }
  }
  plan_ = plan_memory(requests);
  if (!device_.memory()) {
    check_fits_in_memory(static_cast<double>(plan_.arena_bytes), "intermediate tensors");
  }
  if (plan_.arena_bytes) {
    arena_ = device_.allocate(DType::kUInt8, {static_cast<int64_t>(plan_.arena_bytes)});
  }
}

std::vector<Tensor> GraphExecutor::run(std::span<const Tensor> inputs,
                                       std::span<const Tensor> captured) {
  if (inputs.size() != graph_.inputs.size()) {
    throw InputError("the graph takes " + std::to_string(graph_.inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  if (program_) {
    std::vector<Tensor> here;
    for (const Tensor& input : inputs) here.push_back(resident(input));
    return program_->run(here);
  }
  std::vector<Tensor> env = constants_;
  for (size_t i = 0; i < inputs.size(); ++i) env[graph_.inputs[i]] = resident(inputs[i]);
  const std::vector<int> outer = graph_.outer_scope_values();
  for (size_t i = 0; i < outer.size() && i < captured.size(); ++i) {
    if (!graph_.values[outer[i]].is_constant()) env[outer[i]] = resident(captured[i]);
  }
  if (observer_) finish();
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& step = *steps_[s];
    current_step_ = s;
    const auto start = std::chrono::steady_clock::now();
    run_step(step, env);
    if (observer_) {
      finish();
      observer_(*step.node, std::chrono::steady_clock::now() - start);
    }
    // Drop what is dead, so run-time allocations are freed as early as they can be.
    for (int in : step.node->inputs) {
      if (in >= 0 && last_use_[in] == static_cast<int>(s)) env[in] = Tensor();
    }
  }
  std::vector<Tensor> outputs;
  const auto* arena_begin = static_cast<const std::byte*>(arena_.raw());
  for (int out : graph_.outputs) {
    Tensor tensor = env[out];
    if (!tensor.defined())
      throw std::logic_error("graph output '" + graph_.values[out].name + "' was not computed");
    const auto* data = static_cast<const std::byte*>(tensor.raw());
    const bool in_arena =
        arena_begin && data >= arena_begin && data < arena_begin + plan_.arena_bytes;
    // The next run reuses the arena: an output there is copied out of it (within the device).
    if (in_arena && !device_.memory()) {
      Tensor copy = output_tensor(tensor.dtype(), tensor.shape());
      std::memcpy(copy.raw(), tensor.raw(), tensor.nbytes());
      outputs.push_back(std::move(copy));
    } else {
      outputs.push_back(in_arena ? device_.receive(tensor) : tensor);
    }
  }
  return outputs;
}

void GraphExecutor::run_step(Step& step, std::vector<Tensor>& env) {
  const Node& node = *step.node;
  std::vector<Tensor> inputs;
  inputs.reserve(node.inputs.size());
  for (int in : node.inputs) inputs.push_back(in >= 0 ? env[in] : Tensor());

  std::vector<Shape> shapes;
  if (step.static_shapes) {
    for (int out : node.outputs)
      shapes.push_back(out >= 0 ? graph_.values[out].type.shape : Shape{});
  } else if (step.kind == Step::Kind::kKernel || step.kind == Step::Kind::kView) {
    // Inference reads the values of shape-like inputs, which must be in host memory.
    std::vector<Tensor> readable(inputs.size());
    std::vector<ValueInfo> infos;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (!t.defined()) {
        infos.push_back({});
        continue;
      }
      const bool shape_like = is_integer(t.dtype()) && t.numel() <= kMaxShapeLikeElements;
      if (t.on_host() || shape_like) readable[i] = t.to_host();
      infos.push_back(
          ValueInfo{t.dtype(), t.shape(), readable[i].defined() ? &readable[i] : nullptr});
    }
    InferContext context(node, graph_.opset, infos);
    for (const InferredOutput& out : step.schema->infer(context)) shapes.push_back(out.shape);
  }

  std::vector<Tensor> outputs(node.outputs.size());
  switch (step.kind) {
    case Step::Kind::kView: outputs[0] = inputs[0].reshaped(shapes[0]); break;
    case Step::Kind::kKernel:
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        const int out = node.outputs[i];
        if (out < 0 || step.schema->data_dependent_shape || !is_static(shapes[i])) continue;
        const DType dtype = graph_.values[out].type.dtype;
        // Without an arena slot: a graph output, or a value whose shape only the run knows.
        const int slot = planned_slot_[out];
        outputs[i] = slot >= 0 ? arena_.view(plan_.offsets[slot], dtype, shapes[i])
                               : output_tensor(dtype, shapes[i]);
      }
      step.kernel->run(inputs, outputs);
      break;
    case Step::Kind::kIf: run_if(step, env, outputs); break;
    case Step::Kind::kLoop: run_loop(step, env, outputs); break;
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] < 0) continue;
    if (!outputs[i].defined())
      throw std::logic_error(node.label() + ": output " + std::to_string(i) + " not produced");
    env[node.outputs[i]] = std::move(outputs[i]);
  }
}

namespace {

std::vector<Tensor> gather(const std::vector<Tensor>& env, const std::vector<int>& ids) {
  std::vector<Tensor> tensors;
  for (int id : ids) tensors.push_back(id >= 0 ? env[id] : Tensor());
  return tensors;
}

bool truth(const Tensor& t, const Node& node) {
  if (!t.defined() || t.numel() != 1)
    throw InputError(node.label() + ": the condition must hold one element");
  return t.to_host().data<uint8_t>()[0] != 0;
}

Tensor scalar_int64(int64_t value) {
  return Tensor::from_vector<int64_t>(DType::kInt64, {}, {value});
}
Tensor scalar_bool(bool value) { return Tensor::from_vector<uint8_t>(DType::kBool, {}, {value}); }

}  // namespace

void GraphExecutor::run_if(Step& step, std::vector<Tensor>& env, std::span<Tensor> outputs) {
  const size_t branch = truth(env[step.node->inputs[0]], *step.node) ? 0 : 1;
  std::vector<Tensor> results = step.subgraphs[branch]->run({}, gather(env, step.captures[branch]));
  for (size_t i = 0; i < outputs.size() && i < results.size(); ++i)
    outputs[i] = std::move(results[i]);
}

void GraphExecutor::run_loop(Step& step, std::vector<Tensor>& env, std::span<Tensor> outputs) {
  const Node& node = *step.node;
  GraphExecutor& body = *step.subgraphs[0];
  const std::vector<Tensor> captured = gather(env, step.captures[0]);
  const bool has_trip_count = node.inputs[0] >= 0;
  const int64_t trip_count = has_trip_count ? env[node.inputs[0]].to_int64s().at(0) : 0;
  bool condition = node.inputs.size() < 2 || node.inputs[1] < 0 || truth(env[node.inputs[1]], node);
  const size_t carried = node.inputs.size() - 2;
  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(env[node.inputs[2 + i]]);
  const size_t scans = outputs.size() - carried;
  std::vector<std::vector<Tensor>> scanned(scans);

  std::vector<Tensor> body_inputs(2 + carried);
  for (int64_t iteration = 0; condition && (!has_trip_count || iteration < trip_count);
       ++iteration) {
    body_inputs[0] = scalar_int64(iteration);
    body_inputs[1] = scalar_bool(condition);
    for (size_t i = 0; i < carried; ++i) body_inputs[2 + i] = state[i];
    std::vector<Tensor> results = body.run(body_inputs, captured);
    condition = truth(results[0], node);
    for (size_t i = 0; i < carried; ++i) state[i] = std::move(results[1 + i]);
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(results[1 + carried + k]));
  }
  for (size_t i = 0; i < carried; ++i) outputs[i] = state[i];
  for (size_t k = 0; k < scans; ++k) {
    const int out = node.outputs[carried + k];
    const TensorType& type = graph_.values[out].type;
    Shape slice = scanned[k].empty() ? Shape(type.shape.begin() + 1, type.shape.end())
                                     : scanned[k][0].shape();
    for (int64_t& d : slice) d = std::max<int64_t>(d, 0);
    Shape shape{static_cast<int64_t>(scanned[k].size())};
    shape.insert(shape.end(), slice.begin(), slice.end());
    // Stacked in host memory: the loop is driven from the host.
    Tensor stacked = Tensor::allocate(type.dtype, shape);
    auto* cursor = static_cast<std::byte*>(stacked.raw());
    for (const Tensor& piece : scanned[k]) {
      if (piece.shape() != slice) {
        throw InputError(node.label() + ": scan output " + std::to_string(k) +
                         " changes shape between iterations");
      }
      const Tensor host = piece.to_host();
      std::memcpy(cursor, host.raw(), host.nbytes());
      cursor += host.nbytes();
    }
    outputs[carried + k] = resident(stacked);
  }
}

}  // namespace tandem
