#pragma once
// Writes a StableHLO module as MLIR text, in MLIR's generic op form ("stablehlo.add"(...)),
// which every StableHLO parser since 1.0 reads. One builder makes one function, @main.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace tandem::pjrt {

// An SSA value of the function being built.
struct HloValue {
  std::string name;  // "%7"
  DType dtype = DType::kUndefined;
  Shape shape;
};

// "f32", "bf16", "i64", "ui8", "i1" (bool), ...
std::string_view element_type(DType dtype);
// "tensor<2x3xf32>", "tensor<f32>" for a scalar.
std::string tensor_type(DType dtype, const Shape& shape);
// "array<i64: 1, 2>"
std::string i64_array(std::span<const int64_t> values);

class HloBuilder {
 public:
  // Adds an argument of @main.
  HloValue parameter(DType dtype, Shape shape);

  // One op with one result: %n = "stablehlo.<name>"(operands) (region)? {attributes}? : type.
  // A name with a dialect ("chlo.erf") is written as given.
  // `region` is the text of the op's region(s) including parentheses, or empty.
  HloValue op(std::string_view name, std::span<const HloValue> operands, DType dtype, Shape shape,
              std::string_view attributes = {}, std::string_view region = {});
  HloValue op(std::string_view name, std::initializer_list<HloValue> operands, DType dtype,
              Shape shape, std::string_view attributes = {}) {
    return op(name, std::span<const HloValue>(operands.begin(), operands.size()), dtype,
              std::move(shape), attributes);
  }
  // One op with several results (stablehlo.reduce over two operands).
  std::vector<HloValue> op_results(std::string_view name, std::span<const HloValue> operands,
                                   std::span<const TensorType> results, std::string_view attributes,
                                   std::string_view region);

  // A constant holding `tensor` exactly (raw bytes in hex; bools as a list).
  HloValue constant(const Tensor& tensor);
  // A constant of `shape` with every element `value` (converted to `dtype`).
  HloValue splat(DType dtype, const Shape& shape, double value);
  HloValue scalar(DType dtype, double value) { return splat(dtype, {}, value); }

  // Numpy-style broadcasting of `value` to `shape` (trailing dims aligned).
  HloValue broadcast_to(const HloValue& value, const Shape& shape);
  // stablehlo.broadcast_in_dim with explicit result dims for each operand dim.
  HloValue broadcast_in_dim(const HloValue& value, const Shape& shape,
                            std::span<const int64_t> dims);
  HloValue convert(const HloValue& value, DType dtype);
  HloValue reshape(const HloValue& value, Shape shape);
  HloValue transpose(const HloValue& value, std::span<const int64_t> permutation);
  // Elementwise binary op on operands of one shape and type (result dtype = operand's, or
  // `result` for comparisons).
  HloValue binary(std::string_view name, const HloValue& a, const HloValue& b);
  HloValue unary(std::string_view name, const HloValue& a);
  // stablehlo.compare with direction EQ, NE, LT, LE, GT, GE; operands of one shape.
  HloValue compare(std::string_view direction, const HloValue& a, const HloValue& b);
  HloValue select(const HloValue& predicate, const HloValue& on_true, const HloValue& on_false);
  // Reduces `axes` of `value` with a binary stablehlo op (add, maximum, ...) from `init`.
  // The reduced axes are dropped from the result.
  HloValue reduce(const HloValue& value, std::span<const int64_t> axes, std::string_view body_op,
                  double init);

  // A region of one block whose scalar arguments of `dtype` feed `body_op`, returning its
  // result: the body of reduce, reduce_window and friends.
  std::string binary_region(std::string_view body_op, DType dtype);

  // The module, returning `results` from @main.
  std::string module(std::span<const HloValue> results) const;

 private:
  std::string fresh();
  std::vector<HloValue> parameters_;
  std::string body_;
  int next_ = 0;
};

}  // namespace tandem::pjrt
