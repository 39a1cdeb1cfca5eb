#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/activation_layout.h"
#include "ir/graph.h"

namespace tandem {

// The number format a device computes matrix products (MatMul, Gemm, Conv) in, where the user
// asks for a lower one (`tandem run --precision`). Tensors between ops, and every other op, stay
// float32: a kernel converts its inputs and accumulates in float32 (bf16) or int32 (int8).
enum class MatrixPrecision { kFloat32, kBFloat16, kInt8 };

inline const char* matrix_precision_name(MatrixPrecision precision) {
  switch (precision) {
    case MatrixPrecision::kBFloat16: return "bf16";
    case MatrixPrecision::kInt8: return "int8";
    default: return "fp32";
  }
}

// What a kernel that computed in `precision` appends to its implementation() ("oneDNN
// brg:avx512_core_bf16 [bf16]"), by which a run counts the products that did; "" for fp32.
inline std::string precision_mark(MatrixPrecision precision) {
  return precision == MatrixPrecision::kFloat32
             ? ""
             : std::string(" [") + matrix_precision_name(precision) + "]";
}

inline std::optional<MatrixPrecision> parse_matrix_precision(const std::string& name) {
  for (MatrixPrecision p :
       {MatrixPrecision::kFloat32, MatrixPrecision::kBFloat16, MatrixPrecision::kInt8}) {
    if (name == matrix_precision_name(p)) return p;
  }
  return std::nullopt;
}

// What a kernel is built from, once, before any run. Shapes may hold dynamic dims; weights and
// other constant inputs are visible so a backend can pre-pack them.
struct KernelSpec {
  const Node& node;
  int opset;
  std::span<const TensorType> input_types;
  std::span<const TensorType> output_types;
  std::span<const Tensor* const> constant_inputs;         // nullptr where the input is not constant
  MatrixPrecision precision = MatrixPrecision::kFloat32;  // the device's, for matrix products
};

// A compiled op on one device. Outputs arrive allocated with their inferred shapes, except
// for ops with data-dependent shapes, whose kernels allocate them.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) = 0;
  // Which implementation runs it, as its library names it ("oneDNN brg:avx2"), once known (some
  // kernels choose at their first run); "" for the backend's own code.
  virtual std::string implementation() const { return ""; }
};

// A whole graph compiled into one program, as compiled devices (PJRT) run a plan segment.
class GraphProgram {
 public:
  virtual ~GraphProgram() = default;
  // `inputs` follow graph.inputs; returns the graph's outputs, which own their memory.
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs) = 0;
};

// A point in a device's stream of work: recorded by a producer after the work that writes
// tensors, awaited by a consumer before the work that reads them.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling thread until the work before the event has finished.
  virtual void synchronize() const = 0;
};

// One device of a backend: compiles kernels for it and holds its memory. What a device can
// run is its backend's to say (backends/registry.h); the runtime calls `compile` and runs the
// kernels, moving tensors between devices with `receive`.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // Throws InputError naming the node when the op cannot run here.
  virtual std::unique_ptr<Kernel> compile(const KernelSpec& spec) = 0;

  // The memory this device's kernels read and write; null for host memory (the CPU's).
  virtual const MemorySpace* memory() const { return nullptr; }
  // A tensor in this device's memory; contents uninitialised. InputError naming the device
  // and the bytes asked when it has no room.
  virtual Tensor allocate(DType dtype, Shape shape) {
    return Tensor::allocate(dtype, std::move(shape));
  }
  // A copy of `tensor`, from any memory, in this device's memory (the runtime's copy between
  // devices): device to device within a backend, else through host memory. A compiled device
  // may copy its device-side twin directly from the producing device instead.
  virtual Tensor receive(const Tensor& tensor) { return tensor.clone(); }
  // An event after the work this device was given so far; null when that work is finished
  // whenever a call that enqueued it returns (host devices).
  virtual std::shared_ptr<const Event> record() { return nullptr; }
  // Makes this device's next receive wait for `event` (another device's).
  virtual void wait(const Event& event) { event.synchronize(); }
  // Whether graphs run as one compiled program each (compile_graph) rather than op by op.
  virtual bool compiled() const { return false; }
  // Called first in every thread that will run this device's work (a CPU device pins it to
  // its cores).
  virtual void bind_current_thread() const {}
  // Called first in the thread that copies tensors to and from this device.
  virtual void bind_copy_thread() const { bind_current_thread(); }
  // Called in a thread that hands this device's work to its workers and waits for them.
  virtual void release_waiting_thread() const {}
  // How many of the host's cores this device's work keeps busy while it runs: a CPU device's
  // own; one for a device that computes elsewhere (its worker waits on it awake, as CUDA's
  // synchronize does). The runtime's waiting thread sleeps rather than watch awake where the
  // devices leave it no core.
  virtual int busy_host_cores() const { return 1; }
  // Whether the calling thread runs this device's work as a worker of its own would: nothing to
  // bind, the same threads. A plan on this device alone then runs on run()'s thread.
  virtual bool runs_on_any_thread() const { return false; }
  // Compiled devices turn a whole graph into one program (throwing InputError naming a node
  // they cannot take); eager devices return null and their graphs run node by node.
  virtual std::unique_ptr<GraphProgram> compile_graph(const Graph& /*graph*/) { return nullptr; }
  // The graph an eager device compiles in place of `graph`: the same nodes in the same order,
  // reading and writing the same values, with attributes its kernels read (the CPU's layouts
  // between convolutions); nullopt to compile `graph` as it is.
  virtual std::optional<Graph> specialise(const Graph& /*graph*/) const { return std::nullopt; }
};

}  // namespace tandem
