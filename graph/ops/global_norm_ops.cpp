// Schemas of sqrt and squared_l2_norm, the ops Paddle's ClipGradByGlobalNorm adds (the global
// norm is sqrt of the sum of every gradient's squared_l2_norm), and of their grad ops. Both
// compute in FP32. As in Paddle, sqrt_grad reads Out (X@GRAD = Out@GRAD * 0.5 / Out) and
// squared_l2_norm_grad reads X (X@GRAD = 2 * Out@GRAD * X).
#include "graph/op_registry.hpp"

#include "graph/ops/op_helpers.hpp"

namespace pe {

namespace {

/// squared_l2_norm: Out is [1] whatever X's dims, as Paddle 2.6's SquaredL2NormInferMeta.
void infer_squared_l2_norm(shape_context& ctx) {
  fp32_dims(ctx, "X");
  ctx.set_outputs("Out", {1}, dtype::fp32);
}

} // namespace

void register_global_norm_ops(op_registry& r) {
  add_with_out_grad(r, "sqrt", {}, dims_from({{"X", "Out"}}));
  add_with_grad(r,
                {.type = "squared_l2_norm",
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = {},
                 .infer_shape = infer_squared_l2_norm,
                 .make_grad = {}},
                {.forward_inputs = {"X"},
                 .forward_outputs = {},
                 .output_grads = {"Out"},
                 .input_grads = {"X"}},
                dims_from({{"X", "X@GRAD"}}));
}

} // namespace pe
