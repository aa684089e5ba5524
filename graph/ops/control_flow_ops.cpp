// Schemas of the control-flow ops: conditional_block (runs the block its `sub_block`
// attribute names when Cond holds; graph/sub_blocks.hpp says what it reads and writes, and
// README "Control flow" how it runs as one op handle), select_input (Out = X[Mask]: the
// output of the branch that ran, after paddle.static.nn.cond) and increment (Out = X + step:
// the counter of Paddle's in-graph learning-rate schedules). No gradients: Paddle's
// conditional_block_grad and select_input's are not built here (append_backward stops at
// them), and increment's "grad" is the loop reversal of while ops.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>

#include "kernels/control_flow_ops.hpp"

namespace pe {

namespace {

/// Cond's dtype and dims with is_scalar_condition; without it, any Cond. The sub-block's
/// ops infer the outputs (graph/validate.cpp checks the sub-block before this).
void infer_conditional_block(shape_context& ctx) {
  if (!ctx.attrs().get<bool>("is_scalar_condition")) return;
  ctx.expect(ctx.input_count("Cond") == 1,
             "is_scalar_condition takes one Cond variable, got " + std::to_string(ctx.input_count("Cond")));
  const std::string problem = scalar_condition_problem(ctx.input_dtype("Cond"), ctx.input_dims("Cond"));
  ctx.expect(problem.empty(), "Cond '" + ctx.input_name("Cond") + "': " + problem);
}

/// Out has the dtype of the X (all alike) and their dims where they agree (-1 elsewhere).
void infer_select_input(shape_context& ctx) {
  const dtype mask = ctx.input_dtype("Mask");
  ctx.expect(mask == dtype::int32, "Mask must be INT32, got " + to_string(mask));
  const std::size_t count = ctx.input_count("X");
  ctx.expect(count > 0, "X binds no variables");
  shape_t dims = ctx.input_dims("X");
  for (std::size_t i = 1; i < count; ++i) {
    ctx.expect(ctx.input_dtype("X", i) == ctx.input_dtype("X"),
               "X[" + std::to_string(i) + "] is " + to_string(ctx.input_dtype("X", i)) + ", X[0] " +
                   to_string(ctx.input_dtype("X")));
    const shape_t& other = ctx.input_dims("X", i);
    ctx.expect(other.size() == dims.size(), "X[" + std::to_string(i) + "] dims " + to_string(other) +
                                                " differ in rank from X[0] dims " + to_string(dims));
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (dims[d] != other[d]) dims[d] = -1;
  }
  ctx.set_outputs("Out", dims, ctx.input_dtype("X"));
}

void infer_increment(shape_context& ctx) {
  const dtype type = ctx.input_dtype("X");
  ctx.expect(type == dtype::fp32 || type == dtype::int64 || type == dtype::int32,
             "X must be FP32, INT64 or INT32, got " + to_string(type));
  const shape_t& dims = ctx.input_dims("X");
  bool known = true;
  for (const auto d : dims) known = known && d >= 0;
  ctx.expect(!known || numel_of(dims) == 1, "X must hold one element, got dims " + to_string(dims));
  ctx.set_outputs("Out", dims, type);
}

} // namespace

void register_control_flow_ops(op_registry& r) {
  // Scope (STEP_SCOPES) is where Paddle keeps the sub-block's scope; it is accepted and
  // unused: the sub-block's variables live in the place's scope.
  r.add({.type = "conditional_block",
         .inputs = {{.name = "Cond", .duplicable = true},
                    {.name = "Input", .duplicable = true, .dispensable = true, .unwritten_ok = true}},
         .outputs = {{.name = "Out", .duplicable = true, .dispensable = true}, {.name = "Scope", .dispensable = true}},
         .attrs = {{"is_scalar_condition", false}},
         .infer_shape = infer_conditional_block,
         .make_grad = {},
         .runs_sub_block = true});
  r.add({.type = "select_input",
         .inputs = {{.name = "X", .duplicable = true, .unwritten_ok = true}, {"Mask"}},
         .outputs = {{"Out"}},
         .attrs = {},
         .infer_shape = infer_select_input,
         .make_grad = {}});
  r.add({.type = "increment",
         .inputs = {{"X"}},
         .outputs = {{"Out"}},
         .attrs = {{"step", 1.f}},
         .infer_shape = infer_increment,
         .make_grad = {}});
}

} // namespace pe
