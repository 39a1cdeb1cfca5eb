#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"

namespace tandem::testing {

struct OpResult {
  std::vector<InferredOutput> inferred;  // what shape inference said, from the inputs' contents
  std::vector<Tensor> outputs;           // what the CPU kernel produced
};

// Builds a one-node graph, infers its output types with every input's contents known (as at
// run time), compiles the CPU kernel and runs it. An undefined Tensor is an omitted input.
OpResult run_op(const std::string& op_type, const std::vector<Tensor>& inputs,
                std::map<std::string, Attribute, std::less<>> attributes = {}, int num_outputs = 1,
                int opset = 21);

// Shape inference alone, with the given inputs (values optional).
std::vector<InferredOutput> infer_op(const std::string& op_type,
                                     const std::vector<ValueInfo>& inputs,
                                     std::map<std::string, Attribute, std::less<>> attributes = {},
                                     int num_outputs = 1, int opset = 21);

Tensor f32(Shape shape, std::vector<float> values);
Tensor i64(Shape shape, std::vector<int64_t> values);
Tensor boolean(Shape shape, std::vector<uint8_t> values);

// Element-wise comparison with |a-b| <= atol + rtol*|b|; names the first mismatch.
void expect_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-5,
                  double atol = 1e-6);
// Exact comparison of dtype, shape and contents.
void expect_equal(const Tensor& actual, const Tensor& expected);

}  // namespace tandem::testing
