// Schemas of the broadcasting binary ops elementwise_add, elementwise_sub, elementwise_mul,
// elementwise_div, elementwise_max, elementwise_min, elementwise_pow and their grad ops. Y is broadcast against X by kernels/math_shapes.hpp's
// infer_broadcast, the rule the CPU kernels apply; Out has X's dims. All compute in FP32;
// add, sub and mul also on INT64/INT32 operands (in their type), as BERT's position ids do.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops/op_helpers.hpp"
#include "kernels/elementwise_ops.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

/// Out has X's dims and dtype: FP32, or INT64/INT32 (shared with Y) for the ops that compute
/// on integers (kernels/elementwise_ops.hpp's elementwise_integer_op: add, sub, mul).
void infer_elementwise(shape_context& ctx) {
  const dtype type = ctx.input_dtype("X");
  if ((type == dtype::int64 || type == dtype::int32) && elementwise_integer_op(ctx.op().type())) {
    ctx.expect(ctx.input_dtype("Y") == type, "X is " + to_string(type) + " but Y is " +
                                                 to_string(ctx.input_dtype("Y")) +
                                                 ": integer operands must share their dtype");
    const shape_t& x = ctx.input_dims("X");
    infer_broadcast(ctx, x, ctx.input_dims("Y"), ctx.attrs().get<std::int32_t>("axis"));
    ctx.set_outputs("Out", x, type);
    return;
  }
  const shape_t& x = fp32_dims(ctx, "X");
  infer_broadcast(ctx, x, fp32_dims(ctx, "Y"), ctx.attrs().get<std::int32_t>("axis"));
  ctx.set_outputs("Out", x, dtype::fp32);
}

/// One op of the family. As in Paddle, the grads read X, Y and Out@GRAD, and division's
/// also Out (Y@GRAD = -Out@GRAD * Out / Y).
void add_elementwise(op_registry& r, const std::string& type,
                     std::vector<std::string> forward_outputs) {
  add_with_grad(r,
                {.type = type,
                 .inputs = {{"X"}, {"Y"}},
                 .outputs = {{"Out"}},
                 .attrs = {{"axis", std::int32_t{-1}}},
                 .infer_shape = infer_elementwise,
                 .make_grad = {}},
                {.forward_inputs = {"X", "Y"},
                 .forward_outputs = std::move(forward_outputs),
                 .output_grads = {"Out"},
                 .input_grads = {"X", "Y"}},
                dims_from({{"X", "X@GRAD"}, {"Y", "Y@GRAD"}}));
}

} // namespace

void register_elementwise_ops(op_registry& r) {
  add_elementwise(r, "elementwise_add", {});
  add_elementwise(r, "elementwise_sub", {});
  add_elementwise(r, "elementwise_mul", {});
  add_elementwise(r, "elementwise_div", {"Out"});
  add_elementwise(r, "elementwise_max", {});
  add_elementwise(r, "elementwise_min", {});
  add_elementwise(r, "elementwise_pow", {});
}

} // namespace pe
