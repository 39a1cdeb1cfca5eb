#pragma once
#include <memory>
#include <string>
#include <vector>

#include "plan/strategy.h"

namespace tandem {

// The strategies, one file each; make_strategy (strategy.cpp) picks them by name.
// `device_id` names it ("single:gpu0"); without one the name carries its index.
std::unique_ptr<Strategy> make_single_strategy(int device, std::string device_id = "");
// Each node to the first device of `priority` that can run it (ONNX Runtime's execution
// providers); the default priority puts accelerators first: GPUs, TPUs, then CPUs.
std::unique_ptr<Strategy> make_greedy_strategy(std::vector<int> priority);
std::unique_ptr<Strategy> make_heft_strategy();
std::unique_ptr<Strategy> make_pipeline_strategy();
// A pipeline where node n runs on the device of node follows[n] (-1: n leads; a training step's
// backward nodes follow the forward node they differentiate). Leaders split into stages, each
// costed with its followers.
std::unique_ptr<Strategy> make_colocated_pipeline_strategy(std::vector<int> follows);
std::unique_ptr<Strategy> make_data_parallel_strategy();
// Why the data-parallel strategy cannot apply at all (a batch that cannot be split, fewer than
// two devices that each run the whole model), or "" when it may find a plan.
std::string data_parallel_refusal(const PlanningProblem& problem);
std::unique_ptr<Strategy> make_auto_strategy();

}  // namespace tandem
