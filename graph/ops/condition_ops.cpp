// Schemas of the condition ops, which write BOOL: the comparisons less_than, less_equal,
// greater_than, greater_equal, equal and not_equal (X and Y of one dtype, broadcast by
// Paddle's elementwise rule from the operand of higher rank: kernels/condition_ops.hpp) and
// the logical ops logical_not, logical_and, logical_or and logical_xor (any dtype, nonzero
// being true). None has a gradient, as in Paddle.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>

#include "kernels/condition_ops.hpp"

namespace pe {

namespace {

void infer_binary_condition(shape_context& ctx) {
  const std::string problem = condition_dtype_problem(ctx.input_dtype("X"), ctx.input_dtype("Y"));
  ctx.expect(problem.empty(), problem);
  const condition_broadcast b = condition_broadcast_of(ctx, ctx.input_dims("X"), ctx.input_dims("Y"),
                                                       ctx.attrs().get<std::int32_t>("axis"));
  ctx.set_outputs("Out", b.out, dtype::boolean);
}

void add_binary_condition(op_registry& r, const std::string& type) {
  // force_cpu (Paddle's: compute on the host) changes nothing here; it is accepted.
  r.add({.type = type,
         .inputs = {{"X"}, {"Y"}},
         .outputs = {{"Out"}},
         .attrs = {{"axis", std::int32_t{-1}}, {"force_cpu", false}},
         .infer_shape = infer_binary_condition,
         .make_grad = {}});
}

} // namespace

void register_condition_ops(op_registry& r) {
  for (const char* type : {"less_than", "less_equal", "greater_than", "greater_equal", "equal",
                           "not_equal", "logical_and", "logical_or", "logical_xor"})
    add_binary_condition(r, type);
  r.add({.type = "logical_not",
         .inputs = {{"X"}},
         .outputs = {{"Out"}},
         .attrs = {},
         .infer_shape = [](shape_context& ctx) { ctx.set_outputs("Out", ctx.input_dims("X"), dtype::boolean); },
         .make_grad = {}});
}

} // namespace pe
