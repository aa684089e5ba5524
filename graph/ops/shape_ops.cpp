// Schemas of the shape ops: assign, and reshape2, flatten_contiguous_range, transpose2,
// squeeze2, unsqueeze2 with their grad ops. The rules are devices/math_shapes.hpp's, the same
// the CPU kernels apply. They move data without computing on it, so they take any dtype and
// give Out (and X@GRAD) the dtype of their input.
//
// The XShape output, [0, X's dims], is how Paddle hands X's dims to the grad op, which
// reads XShape and Out@GRAD but not X.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devices/math_shapes.hpp"
#include "graph/attributes.hpp"
#include "graph/ops/op_helpers.hpp"

namespace pe {

namespace {

/// assign's grad is an assign of Out@GRAD to X@GRAD, as Paddle emits.
std::vector<proto::OpDesc> assign_grad(const proto::OpDesc& fwd) {
  proto::OpDesc op;
  op.set_type("assign");
  set_input(op, "X", {grad_name(output_args(fwd, "Out").at(0))});
  set_output(op, "Out", {grad_name(input_args(fwd, "X").at(0))});
  *op.mutable_attrs() = fwd.attrs();
  return {op};
}

/// Shape inference of an XShape op whose Out dims `out_dims` computes from X's dims and
/// the attributes.
shape_fn infer_with_xshape(std::function<shape_t(const shape_context&, const shape_t&)> out_dims) {
  return [out_dims = std::move(out_dims)](shape_context& ctx) {
    const shape_t& x = ctx.input_dims("X");
    const dtype type = ctx.input_dtype("X");
    ctx.set_outputs("Out", out_dims(ctx, x), type);
    ctx.set_outputs("XShape", xshape_dims(x), type);
  };
}

/// X@GRAD has the dims XShape records and the dtype of Out@GRAD.
void infer_xshape_grad(shape_context& ctx) {
  ctx.set_outputs(grad_name("X"), dims_of_xshape(ctx, ctx.input_dims("XShape")),
                  ctx.input_dtype(grad_name("Out")));
}

/// Registers an XShape op: inputs X and `extra_inputs`, outputs Out and XShape, and its
/// grad op "<type>_grad" (XShape, Out@GRAD -> X@GRAD), as Paddle's grad makers emit.
void add_xshape_op(op_registry& r, const std::string& type, std::vector<slot_spec> extra_inputs,
                   std::vector<attr_spec> attrs,
                   std::function<shape_t(const shape_context&, const shape_t&)> out_dims) {
  std::vector<slot_spec> inputs = {{"X"}};
  inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
  add_with_grad(r,
                {.type = type,
                 .inputs = std::move(inputs),
                 .outputs = {{"Out"}, {.name = "XShape", .dispensable = true}},
                 .attrs = std::move(attrs),
                 .infer_shape = infer_with_xshape(std::move(out_dims)),
                 .make_grad = {}},
                {.forward_inputs = {},
                 .forward_outputs = {"XShape"},
                 .output_grads = {"Out"},
                 .input_grads = {"X"}},
                infer_xshape_grad);
}

const std::vector<std::int32_t>& ints(const shape_context& ctx, const char* name) {
  return ctx.attrs().get<std::vector<std::int32_t>>(name);
}

} // namespace

void register_shape_ops(op_registry& r) {
  r.add({.type = "assign",
         .inputs = {{"X"}},
         .outputs = {{"Out"}},
         .attrs = {},
         .infer_shape =
             [](shape_context& ctx) {
               ctx.set_outputs("Out", ctx.input_dims("X"), ctx.input_dtype("X"));
             },
         .make_grad = assign_grad});

  // The Shape and ShapeTensor inputs (a shape computed at run time) are not supported:
  // binding either fails in shape inference and in the kernel.
  add_xshape_op(
      r, "reshape2",
      {{.name = "Shape", .dispensable = true},
       {.name = "ShapeTensor", .duplicable = true, .dispensable = true}},
      {{"shape", std::vector<std::int32_t>{}}}, [](const shape_context& ctx, const shape_t& x) {
        ctx.expect(ctx.input_count("Shape") == 0 && ctx.input_count("ShapeTensor") == 0,
                   "the Shape and ShapeTensor inputs are not supported; give the shape "
                   "attribute");
        return reshape_dims(ctx, x, ints(ctx, "shape"));
      });
  add_xshape_op(r, "flatten_contiguous_range", {},
                {{"start_axis", std::int32_t{1}}, {"stop_axis", std::int32_t{1}}},
                [](const shape_context& ctx, const shape_t& x) {
                  return flatten_dims(ctx, x, ctx.attrs().get<std::int32_t>("start_axis"),
                                      ctx.attrs().get<std::int32_t>("stop_axis"));
                });
  add_xshape_op(r, "transpose2", {},
                {{.name = "axis", .value = std::vector<std::int32_t>{}, .required = true}},
                [](const shape_context& ctx, const shape_t& x) {
                  return permuted(x, transpose_perm(ctx, x.size(), ints(ctx, "axis")));
                });
  add_xshape_op(r, "squeeze2", {}, {{"axes", std::vector<std::int32_t>{}}},
                [](const shape_context& ctx, const shape_t& x) {
                  return squeeze_dims(ctx, x, ints(ctx, "axes"));
                });
  add_xshape_op(r, "unsqueeze2", {}, {{"axes", std::vector<std::int32_t>{}}},
                [](const shape_context& ctx, const shape_t& x) {
                  return unsqueeze_dims(ctx, x, ints(ctx, "axes"));
                });
}

} // namespace pe
