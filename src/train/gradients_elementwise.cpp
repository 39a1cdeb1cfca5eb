// Gradients of elementwise ops. Binary ops broadcast, so each input's gradient is summed back
// to that input's shape (GraphBuilder::sum_to).
#include <cmath>

#include "train/gradient_registry.h"

namespace tandem::train {
namespace {

using Grads = std::vector<int>;

// The gradient of input i of a broadcasting op, when wanted: `make()` summed to its shape.
template <typename Make>
int broadcast_grad(GradientContext& ctx, size_t i, Make make) {
  if (!ctx.wants(i)) return -1;
  return ctx.builder.sum_to(make(), ctx.input_shape(i));
}

// A unary op whose gradient is dy * f'(x, y).
void add_unary(GradientRegistry& registry, const std::string& op,
               std::function<int(GradientContext&, int dy)> rule) {
  registry.add(op, {0}, [rule](GradientContext& ctx) -> Grads {
    if (!ctx.wants(0)) return {-1};
    return {rule(ctx, ctx.output_grad(0))};
  });
}

int zero_like(GraphBuilder& b, int value) { return b.scalar(0.0f, b.dtype(value)); }

void register_binary(GradientRegistry& registry) {
  registry.add("Add", {0, 1}, [](GradientContext& ctx) -> Grads {
    const int dy = ctx.output_grad(0);
    return {broadcast_grad(ctx, 0, [&] { return dy; }), broadcast_grad(ctx, 1, [&] { return dy; })};
  });
  registry.add("Sub", {0, 1}, [](GradientContext& ctx) -> Grads {
    GraphBuilder& b = ctx.builder;
    const int dy = ctx.output_grad(0);
    return {broadcast_grad(ctx, 0, [&] { return dy; }),
            broadcast_grad(ctx, 1, [&] { return b.add("Neg", {dy}); })};
  });
  registry.add("Mul", {0, 1}, [](GradientContext& ctx) -> Grads {
    GraphBuilder& b = ctx.builder;
    const int dy = ctx.output_grad(0);
    return {broadcast_grad(ctx, 0, [&] { return b.mul(dy, ctx.input(1)); }),
            broadcast_grad(ctx, 1, [&] { return b.mul(dy, ctx.input(0)); })};
  });
  registry.add("Div", {0, 1}, [](GradientContext& ctx) -> Grads {
    GraphBuilder& b = ctx.builder;
    const int dy = ctx.output_grad(0);
    // d(a/b)/db = -(a/b)/b
    return {broadcast_grad(ctx, 0, [&] { return b.div(dy, ctx.input(1)); }),
            broadcast_grad(ctx, 1, [&] {
              return b.add("Neg", {b.div(b.mul(dy, ctx.output(0)), ctx.input(1))});
            })};
  });
  registry.add("Pow", {0, 1}, [](GradientContext& ctx) -> Grads {
    GraphBuilder& b = ctx.builder;
    const int dy = ctx.output_grad(0);
    const int x = ctx.input(0), p = ctx.input(1);
    return {
        broadcast_grad(ctx, 0,
                       [&] {
                         const int p_minus_one = b.sub(p, b.scalar(1.0f, b.dtype(p)));
                         return b.mul(dy, b.mul(p, b.add("Pow", {x, p_minus_one})));
                       }),
        broadcast_grad(ctx, 1, [&] { return b.mul(dy, b.mul(ctx.output(0), b.add("Log", {x}))); })};
  });
  // The larger (smaller) input takes the gradient; on ties the first, as one choice of
  // subgradient.
  for (const char* op : {"Max", "Min"}) {
    registry.add(op, {0, 1}, [](GradientContext& ctx) -> Grads {
      GraphBuilder& b = ctx.builder;
      if (ctx.node.inputs.size() != 2) ctx.refuse("only the two-input form is differentiated");
      const int dy = ctx.output_grad(0);
      const int first = b.add("Equal", {ctx.input(0), ctx.output(0)});
      const int zero = zero_like(b, dy);
      return {broadcast_grad(ctx, 0,
                             [&] {
                               return b.add("Where", {first, dy, zero});
                             }),
              broadcast_grad(ctx, 1, [&] {
                return b.add("Where", {first, zero, dy});
              })};
    });
  }
  registry.add_variadic("Sum", [](GradientContext& ctx) -> Grads {
    const int dy = ctx.output_grad(0);
    Grads grads;
    for (size_t i = 0; i < ctx.node.inputs.size(); ++i)
      grads.push_back(broadcast_grad(ctx, i, [&] { return dy; }));
    return grads;
  });
  registry.add("Where", {1, 2}, [](GradientContext& ctx) -> Grads {
    GraphBuilder& b = ctx.builder;
    const int dy = ctx.output_grad(0);
    const int zero = zero_like(b, dy), condition = ctx.input(0);
    return {-1,
            broadcast_grad(ctx, 1,
                           [&] {
                             return b.add("Where", {condition, dy, zero});
                           }),
            broadcast_grad(ctx, 2, [&] {
              return b.add("Where", {condition, zero, dy});
            })};
  });
}

void register_unary(GradientRegistry& registry) {
  for (const char* op : {"Identity", "Dropout"})
    add_unary(registry, op, [](GradientContext&, int dy) { return dy; });
  add_unary(registry, "Neg",
            [](GradientContext& ctx, int dy) { return ctx.builder.add("Neg", {dy}); });
  add_unary(registry, "Relu", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const int zero = zero_like(b, dy);
    return b.add("Where", {b.add("Greater", {ctx.input(0), zero}), dy, zero});
  });
  add_unary(registry, "LeakyRelu", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const float alpha = ctx.node.attr_float("alpha", 0.01f);
    const int positive = b.add("Greater", {ctx.input(0), zero_like(b, dy)});
    return b.add("Where", {positive, dy, b.scale(dy, alpha)});
  });
  add_unary(registry, "Sigmoid", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const int y = ctx.output(0);
    return b.mul(dy, b.mul(y, b.sub(b.scalar(1.0f, b.dtype(y)), y)));
  });
  add_unary(registry, "Tanh", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const int y = ctx.output(0);
    return b.mul(dy, b.sub(b.scalar(1.0f, b.dtype(y)), b.mul(y, y)));
  });
  add_unary(registry, "Exp",
            [](GradientContext& ctx, int dy) { return ctx.builder.mul(dy, ctx.output(0)); });
  add_unary(registry, "Log",
            [](GradientContext& ctx, int dy) { return ctx.builder.div(dy, ctx.input(0)); });
  add_unary(registry, "Sqrt", [](GradientContext& ctx, int dy) {
    return ctx.builder.div(ctx.builder.scale(dy, 0.5f), ctx.output(0));
  });
  add_unary(registry, "Reciprocal", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const int y = ctx.output(0);
    return b.add("Neg", {b.mul(dy, b.mul(y, y))});
  });
  add_unary(registry, "Abs", [](GradientContext& ctx, int dy) {
    return ctx.builder.mul(dy, ctx.builder.add("Sign", {ctx.input(0)}));
  });
  add_unary(registry, "Softplus", [](GradientContext& ctx, int dy) {
    return ctx.builder.mul(dy, ctx.builder.add("Sigmoid", {ctx.input(0)}));
  });
  add_unary(registry, "Erf", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const int x = ctx.input(0);
    const int gauss = b.add("Exp", {b.add("Neg", {b.mul(x, x)})});
    return b.mul(dy, b.scale(gauss, static_cast<float>(2.0 / std::sqrt(M_PI))));
  });
  add_unary(registry, "Gelu", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const int x = ctx.input(0);
    const DType t = b.dtype(x);
    const int one = b.scalar(1.0f, t);
    if (ctx.node.attr_string("approximate", "none") == "tanh") {
      // y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
      const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
      const int x2 = b.mul(x, x);
      const int u = b.scale(b.sum(x, b.scale(b.mul(x2, x), 0.044715f)), k);
      const int th = b.add("Tanh", {u});
      const int du = b.scale(b.sum(one, b.scale(x2, 3 * 0.044715f)), k);
      const int left = b.scale(b.sum(one, th), 0.5f);
      const int right = b.mul(b.scale(x, 0.5f), b.mul(b.sub(one, b.mul(th, th)), du));
      return b.mul(dy, b.sum(left, right));
    }
    // y = x Phi(x): dy/dx = Phi(x) + x phi(x)
    const int cdf =
        b.scale(b.sum(one, b.add("Erf", {b.scale(x, static_cast<float>(M_SQRT1_2))})), 0.5f);
    const int pdf = b.scale(b.add("Exp", {b.scale(b.mul(x, x), -0.5f)}),
                            static_cast<float>(1.0 / std::sqrt(2.0 * M_PI)));
    return b.mul(dy, b.sum(cdf, b.mul(x, pdf)));
  });
  add_unary(registry, "HardSigmoid", [](GradientContext& ctx, int dy) {
    GraphBuilder& b = ctx.builder;
    const float alpha = ctx.node.attr_float("alpha", 0.2f);
    const float beta = ctx.node.attr_float("beta", 0.5f);
    const int x = ctx.input(0);
    const DType t = b.dtype(x);
    const int z = b.sum(b.scale(x, alpha), b.scalar(beta, t));
    const int inside = b.add(
        "And", {b.add("Greater", {z, b.scalar(0.0f, t)}), b.add("Less", {z, b.scalar(1.0f, t)})});
    return b.add("Where", {inside, b.scale(dy, alpha), zero_like(b, dy)});
  });
  add_unary(registry, "HardSwish", [](GradientContext& ctx, int dy) {
    // y = x * clip(x/6 + 1/2, 0, 1): 0 below -3, 1 above 3, x/3 + 1/2 between.
    GraphBuilder& b = ctx.builder;
    const int x = ctx.input(0);
    const DType t = b.dtype(x);
    const int middle = b.mul(dy, b.sum(b.scale(x, 1.0f / 3.0f), b.scalar(0.5f, t)));
    const int above = b.add("Where", {b.add("Greater", {x, b.scalar(3.0f, t)}), dy, middle});
    return b.add("Where", {b.add("Less", {x, b.scalar(-3.0f, t)}), zero_like(b, dy), above});
  });
  registry.add("Clip", {0}, [](GradientContext& ctx) -> Grads {
    if (!ctx.wants(0)) return {-1};
    GraphBuilder& b = ctx.builder;
    const int dy = ctx.output_grad(0);
    const int x = ctx.input(0);
    // Passes where min <= x <= max, as torch.clamp's gradient.
    int inside = -1;
    if (ctx.input(1) >= 0) inside = b.add("GreaterOrEqual", {x, ctx.input(1)});
    if (ctx.input(2) >= 0) {
      const int below = b.add("LessOrEqual", {x, ctx.input(2)});
      inside = inside < 0 ? below : b.add("And", {inside, below});
    }
    if (inside < 0) return {dy};
    return {b.add("Where", {inside, dy, zero_like(b, dy)})};
  });
  registry.add("Cast", {0}, [](GradientContext& ctx) -> Grads {
    if (!ctx.wants(0)) return {-1};
    GraphBuilder& b = ctx.builder;
    const DType from = b.dtype(ctx.input(0));
    if (from != DType::kFloat32 && from != DType::kFloat64) return {-1};
    const int64_t onnx_code = from == DType::kFloat32 ? 1 : 11;  // TensorProto.FLOAT / DOUBLE
    return {b.add("Cast", {ctx.output_grad(0)}, {{"to", onnx_code}})};
  });
}

}  // namespace

void register_elementwise_gradients(GradientRegistry& registry) {
  register_binary(registry);
  register_unary(registry);
}

}  // namespace tandem::train
