#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/device.h"
#include "ir/graph.h"
#include "runtime/memory_plan.h"
#include "runtime/recycled_memory.h"

namespace tandem {

// Runs a graph on one device. On an eager device, one node after another: built once per graph,
// kernels are compiled, constants are brought into the device's memory, and every intermediate
// tensor of static size gets a slot in one arena (in the device's memory) planned from tensor
// lifetimes; tensors whose size is known only at run time are allocated as they come; If and
// Loop run their subgraphs with nested executors, driven from the host. A compiled device runs
// the whole graph as the one program it compiled (no per-node observer calls then). One run at
// a time per executor.
class GraphExecutor {
 public:
  // Called after every node with its wall time, when set (profiling, calibration).
  using NodeObserver = std::function<void(const Node& node, std::chrono::nanoseconds elapsed)>;

  // `graph` and `device` must outlive the executor.
  GraphExecutor(const Graph& graph, Device& device);
  ~GraphExecutor();

  // `inputs` follow graph.inputs; `captured` follows graph.outer_scope_values() (subgraphs);
  // either may be in any memory (what is not in the device's is received into it). Returns the
  // graph's outputs, which own their memory, in the device's memory (Tensor::to_host for the
  // host's).
  std::vector<Tensor> run(std::span<const Tensor> inputs, std::span<const Tensor> captured = {});

  // With an observer, each node's time is its execution: a device with asynchronous work is
  // waited for before and after every node.
  void set_observer(NodeObserver observer) { observer_ = std::move(observer); }
  // The index of the step (node) the current or last run is at or ended in: names the op a
  // failure came from without waiting for the device after every node.
  size_t current_step() const { return current_step_; }
  // Waits until the device has finished the work of the runs so far (for timing).
  void finish();
  const MemoryPlan& memory_plan() const { return plan_; }
  // Per node run by a kernel (not subgraphs'), the implementation its kernel reports
  // (Kernel::implementation); empty for a compiled graph.
  std::vector<std::pair<const Node*, std::string>> kernel_implementations() const;
  // Whether the graph runs as one program its device compiled.
  bool compiled() const { return program_ != nullptr; }

 private:
  struct Step;
  void run_step(Step& step, std::vector<Tensor>& env);
  void run_if(Step& step, std::vector<Tensor>& env, std::span<Tensor> outputs);
  void run_loop(Step& step, std::vector<Tensor>& env, std::span<Tensor> outputs);
  void plan_buffers();
  // `tensor` in the device's memory: itself when it is there already.
  Tensor resident(const Tensor& tensor);
  // Memory for a value without an arena slot (a graph output, which the caller keeps, or a
  // value whose shape only the run knows): on a host device, memory let go of since an earlier
  // run (output_memory_), else fresh.
  Tensor output_tensor(DType dtype, Shape shape);
  // Integer inputs up to this size are read back to the host for shape inference.
  static constexpr int64_t kMaxShapeLikeElements = 4096;

  const Graph& graph_;
  Device& device_;
  // The nodes the kernels were compiled from, where the device specialised them.
  std::optional<Graph> specialised_;
  std::vector<std::unique_ptr<Step>> steps_;
  std::vector<int> last_use_;
  std::vector<int> planned_slot_;  // value id -> request index in plan_, or -1
  MemoryPlan plan_;
  Tensor arena_;                   // bytes, in the device's memory
  std::vector<Tensor> constants_;  // value id -> the constant in the device's memory
  NodeObserver observer_;
  size_t current_step_ = 0;
  std::unique_ptr<GraphProgram> program_;  // compiled devices only
  // Two runs' outputs: the caller holds one run's while the next run writes its own.
  RecycledHostMemory output_memory_{2 * graph_.outputs.size()};
};

}  // namespace tandem
