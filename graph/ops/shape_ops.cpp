// Schemas of the shape ops: assign, and reshape2, flatten_contiguous_range, transpose2,
// squeeze2, unsqueeze2, concat, split, cast with their grad ops. The rules are
// kernels/math_shapes.hpp's, the same the CPU kernels apply. They move data without computing
// on it, so they take any dtype and give Out (and X@GRAD) the dtype of their input; cast
// converts between the dtypes with a C++ element type (core/dtype.hpp).
//
// The XShape output, [0, X's dims], is how Paddle hands X's dims to the grad op, which
// reads XShape and Out@GRAD but not X.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/attributes.hpp"
#include "graph/ops/op_helpers.hpp"
#include "kernels/math_shapes.hpp"

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

/// The dims of every variable bound to input `slot`, checked to share X[0]'s dtype.
std::vector<shape_t> dims_of_all(const shape_context& ctx, const std::string& slot, dtype type) {
  std::vector<shape_t> dims;
  for (std::size_t i = 0; i < ctx.input_count(slot); ++i) {
    ctx.expect(ctx.input_dtype(slot, i) == type,
               slot + "[" + std::to_string(i) + "] is " + to_string(ctx.input_dtype(slot, i)) +
                   ", but " + slot + "[0] is " + to_string(type));
    dims.push_back(ctx.input_dims(slot, i));
  }
  return dims;
}

void infer_concat(shape_context& ctx) {
  ctx.expect(ctx.input_count("AxisTensor") == 0,
             "the AxisTensor input is not supported; give the axis attribute");
  ctx.expect(ctx.input_count("X") > 0, "X binds no variables");
  const dtype type = ctx.input_dtype("X");
  const std::int32_t axis = ctx.attrs().get<std::int32_t>("axis");
  ctx.set_outputs("Out", concat_dims(ctx, dims_of_all(ctx, "X", type), axis), type);
}

/// X@GRAD[i] has X[i]'s dims. The grads pair with X by position, so all must be bound.
void infer_concat_grad(shape_context& ctx) {
  const std::size_t count = ctx.input_count("X");
  ctx.expect(ctx.output_count(grad_name("X")) == count,
             "X@GRAD binds " + std::to_string(ctx.output_count(grad_name("X"))) +
                 " variables but X binds " + std::to_string(count) + "; they pair by position");
  const dtype type = ctx.input_dtype(grad_name("Out"));
  for (std::size_t i = 0; i < count; ++i)
    ctx.set_output(grad_name("X"), i, ctx.input_dims("X", i), type);
}

void infer_split(shape_context& ctx) {
  ctx.expect(ctx.input_count("AxisTensor") == 0 && ctx.input_count("SectionsTensorList") == 0,
             "the AxisTensor and SectionsTensorList inputs are not supported; give the axis "
             "and num or sections attributes");
  const attribute_map& a = ctx.attrs();
  const std::vector<shape_t> outs =
      split_dims(ctx, ctx.input_dims("X"), a.get<std::int32_t>("axis"), a.get<std::int32_t>("num"),
                 ints(ctx, "sections"), ctx.output_count("Out"));
  for (std::size_t i = 0; i < outs.size(); ++i)
    ctx.set_output("Out", i, outs[i], ctx.input_dtype("X"));
}

/// cast's in_dtype or out_dtype attribute, checked to name a dtype cast converts.
dtype cast_dtype(const shape_context& ctx, const char* name) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>(name));
  ctx.expect(visit_element_type(type, [](auto) {}),
             std::string(name) + " " + to_string(type) +
                 " is not castable; cast converts BOOL, UINT8, INT32, INT64, FP32 and FP64");
  return type;
}

/// Out has X's dims and out_dtype; X must have in_dtype, which the grad casts back to.
void infer_cast(shape_context& ctx) {
  const dtype in = cast_dtype(ctx, "in_dtype");
  const dtype out = cast_dtype(ctx, "out_dtype");
  ctx.expect(ctx.input_dtype("X") == in, "X is " + to_string(ctx.input_dtype("X")) +
                                             ", but in_dtype is " + to_string(in));
  ctx.set_outputs("Out", ctx.input_dims("X"), out);
}

/// split's grad is a concat of the Out@GRADs along the same axis into X@GRAD, as Paddle emits.
std::vector<proto::OpDesc> split_grad(const proto::OpDesc& fwd) {
  proto::OpDesc op;
  op.set_type("concat");
  std::vector<std::string> douts;
  for (const auto& out : output_args(fwd, "Out")) douts.push_back(grad_name(out));
  set_input(op, "X", douts);
  set_output(op, "Out", {grad_name(input_args(fwd, "X").at(0))});
  *op.mutable_attrs() = fwd.attrs();
  return {op};
}

/// The schema of cast. Its grad is a cast of Out@GRAD back to in_dtype, as Paddle emits; the
/// schema copy resolves the dtype attributes.
op_schema cast_schema() {
  op_schema cast{.type = "cast",
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = {{.name = "in_dtype", .value = std::int32_t{}, .required = true},
                           {.name = "out_dtype", .value = std::int32_t{}, .required = true}},
                 .infer_shape = infer_cast,
                 .make_grad = {}};
  cast.make_grad = [schema = cast](const proto::OpDesc& fwd) {
    const attribute_map attrs = resolve_attributes(fwd, schema);
    proto::OpDesc op;
    op.set_type("cast");
    set_input(op, "X", {grad_name(output_args(fwd, "Out").at(0))});
    set_output(op, "Out", {grad_name(input_args(fwd, "X").at(0))});
    *op.mutable_attrs() = fwd.attrs();
    set_attr(op, "in_dtype", attrs.get<std::int32_t>("out_dtype"));
    set_attr(op, "out_dtype", attrs.get<std::int32_t>("in_dtype"));
    return std::vector<proto::OpDesc>{op};
  };
  return cast;
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

  // The AxisTensor input (an axis computed at run time) is not supported, as for reshape2.
  r.add({.type = "concat",
         .inputs = {{.name = "X", .duplicable = true},
                    {.name = "AxisTensor", .dispensable = true}},
         .outputs = {{"Out"}},
         .attrs = {{"axis", std::int32_t{0}}},
         .infer_shape = infer_concat,
         .make_grad = make_default_grad({.forward_inputs = {"X"},
                                         .forward_outputs = {},
                                         .output_grads = {"Out"},
                                         .input_grads = {"X"}})});
  r.add({.type = "concat_grad",
         .inputs = {{.name = "X", .duplicable = true}, {grad_name("Out")}},
         .outputs = {{.name = grad_name("X"), .duplicable = true, .dispensable = true}},
         .attrs = {{"axis", std::int32_t{0}}},
         .infer_shape = infer_concat_grad,
         .make_grad = {}});
  r.add({.type = "split",
         .inputs = {{"X"},
                    {.name = "AxisTensor", .dispensable = true},
                    {.name = "SectionsTensorList", .duplicable = true, .dispensable = true}},
         .outputs = {{.name = "Out", .duplicable = true}},
         .attrs = {{"axis", std::int32_t{0}},
                   {"num", std::int32_t{0}},
                   {"sections", std::vector<std::int32_t>{}}},
         .infer_shape = infer_split,
         .make_grad = split_grad});
  r.add(cast_schema());
}

} // namespace pe
