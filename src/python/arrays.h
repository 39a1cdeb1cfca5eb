#pragma once
// numpy arrays in and out of Tandem's tensors, without copies where the memory allows.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::python {

// An input as the module takes it: host memory, C order, read only.
using InputArray = nanobind::ndarray<nanobind::ro, nanobind::c_contig, nanobind::device::cpu>;

// The arrays of `inputs` (a dict of name -> array-like) in the order of the graph's inputs,
// converted to C-contiguous arrays where they were not. Throws InputError naming the input
// when one is missing, is not numeric, or a name matches no input.
std::vector<InputArray> input_arrays(const Graph& graph, const nanobind::dict& inputs);

// The arrays' shapes, in order: what binds a model's symbolic dims for a run.
std::vector<Shape> shapes_of(const std::vector<InputArray>& arrays);

// Views of the arrays as host tensors (no copy). The caller keeps the arrays alive for as long
// as the tensors are read. Refuses an array whose dtype or shape differs from the
// graph's input (naming both).
std::vector<Tensor> input_tensors(const Graph& graph, const std::vector<InputArray>& arrays);

// The graph's outputs (taken) as a dict of name -> numpy array. An array shares its tensor's
// storage where no one else holds it (kept alive by the array); any other (a view of an input
// or a constant, storage an executor keeps) is copied, as the caller may keep and write it.
nanobind::dict output_arrays(const Graph& graph, std::vector<Tensor>&& outputs);

// The numpy dtype of a Tandem element type; InputError for one numpy has no dtype for.
nanobind::object numpy_dtype(DType dtype);

}  // namespace tandem::python
