// Schemas of the attributed activations leaky_relu and gelu, of softmax and log_softmax, and
// of their grad ops. Each computes in FP32 and gives Out the dims of X. As in Paddle,
// leaky_relu's and gelu's grads read X, softmax's and log_softmax's read Out.
#include "graph/op_registry.hpp"

#include <cstdint>

#include "graph/ops/op_helpers.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

/// softmax and log_softmax: X of rank >= 1 and `axis` one of its axes.
void infer_softmax(shape_context& ctx) {
  const shape_t& x = fp32_dims(ctx, "X");
  ctx.expect(!x.empty(), "X must have rank >= 1, got a scalar");
  normalize_axis(ctx, "axis", ctx.attrs().get<std::int32_t>("axis"), x.size());
  ctx.set_outputs("Out", x, dtype::fp32);
}

} // namespace

void register_activation_ops(op_registry& r) {
  const default_grad reads_x{.forward_inputs = {"X"},
                             .forward_outputs = {},
                             .output_grads = {"Out"},
                             .input_grads = {"X"}};
  add_with_grad(r,
                {.type = "leaky_relu",
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = {{"alpha", 0.02f}},
                 .infer_shape = dims_from({{"X", "Out"}}),
                 .make_grad = {}},
                reads_x, dims_from({{"X", "X@GRAD"}}));
  // approximate: the tanh form 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) instead of
  // the exact 0.5 x (1 + erf(x / sqrt(2))).
  add_with_grad(r,
                {.type = "gelu",
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = {{"approximate", false}},
                 .infer_shape = dims_from({{"X", "Out"}}),
                 .make_grad = {}},
                reads_x, dims_from({{"X", "X@GRAD"}}));

  for (const char* type : {"softmax", "log_softmax"})
    add_with_out_grad(r, type, {{"axis", std::int32_t{-1}}}, infer_softmax);
}

} // namespace pe
