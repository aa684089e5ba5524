// Schemas of slice (paddle's __getitem__ with integer bounds: x[:, 0], x[1:3]) and
// slice_grad, with Paddle 2.6's slots and attributes. The box and Out's dims are
// kernels/slice_ops.hpp's rule, which the kernels apply too. slice moves elements without
// computing on them, so it takes any dtype; its grad (as Paddle's SliceOpGradMaker emits it:
// Input, Out@GRAD -> Input@GRAD) writes Out@GRAD into a zeroed Input@GRAD of Input's dims.
// Bounds given as tensors (StartsTensor, EndsTensor, their lists) leave the sliced axes'
// extents unknown here; the kernels read them.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops/op_helpers.hpp"
#include "kernels/slice_ops.hpp"

namespace pe {

namespace {

/// StartsTensor, EndsTensor and their lists: dispensable, read by the kernels.
std::vector<slot_spec> bound_tensor_slots() {
  return {{.name = "StartsTensor", .dispensable = true},
          {.name = "EndsTensor", .dispensable = true},
          {.name = "StartsTensorList", .duplicable = true, .dispensable = true},
          {.name = "EndsTensorList", .duplicable = true, .dispensable = true}};
}

/// The box of the op's attributes over Input. Bounds from tensors are known only when the
/// kernel runs: the sliced axes' extents are then unknown (-1), a decreased one's 1.
slice_box infer_box(const shape_context& ctx) {
  const attribute_map& a = ctx.attrs();
  const auto& axes = a.get<std::vector<std::int32_t>>("axes");
  shape_t in = ctx.input_dims("Input");
  bool from_tensors = false;
  for (const char* slot : {"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"})
    from_tensors = from_tensors || ctx.input_count(slot) > 0;
  if (from_tensors)
    for (const std::int32_t axis : axes)
      if (axis >= -static_cast<std::int64_t>(in.size()) && axis < static_cast<std::int64_t>(in.size()))
        in[static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int32_t>(in.size()) : axis)] = -1;
  // Bounds from tensors: the attributes hold placeholders, so none gives an extent either.
  const std::vector<std::int64_t> unknown(axes.size(), -1);
  return slice_box_of(ctx, in, axes, from_tensors ? unknown : a.get<std::vector<std::int64_t>>("starts"),
                      from_tensors ? unknown : a.get<std::vector<std::int64_t>>("ends"),
                      a.get<std::vector<std::int32_t>>("decrease_axis"));
}

void infer_slice(shape_context& ctx) {
  ctx.set_outputs("Out", infer_box(ctx).out_dims, ctx.input_dtype("Input"));
}

/// Input@GRAD has Input's dims; Out@GRAD must have Out's.
void infer_slice_grad(shape_context& ctx) {
  const slice_box box = infer_box(ctx);
  const shape_t& dout = ctx.input_dims(grad_name("Out"));
  ctx.expect(dims_compatible(dout, box.out_dims),
             "Out@GRAD " + to_string(dout) + " does not match the slice's Out " + to_string(box.out_dims));
  ctx.set_outputs(grad_name("Input"), ctx.input_dims("Input"), ctx.input_dtype(grad_name("Out")));
}

std::vector<attr_spec> slice_attrs() {
  return {{"axes", std::vector<std::int32_t>{}},
          {"starts", std::vector<std::int64_t>{}},
          {"ends", std::vector<std::int64_t>{}},
          {"infer_flags", std::vector<std::int32_t>{}},
          {"decrease_axis", std::vector<std::int32_t>{}}};
}

} // namespace

void register_slice_ops(op_registry& r) {
  std::vector<slot_spec> inputs = {{"Input"}};
  std::vector<slot_spec> grad_inputs = {{"Input"}, {grad_name("Out")}};
  for (const slot_spec& s : bound_tensor_slots()) {
    inputs.push_back(s);
    grad_inputs.push_back(s);
  }
  r.add({.type = "slice",
         .inputs = std::move(inputs),
         .outputs = {{"Out"}},
         .attrs = slice_attrs(),
         .infer_shape = infer_slice,
         .make_grad = make_default_grad({.forward_inputs = {"Input"},
                                         .forward_outputs = {},
                                         .output_grads = {"Out"},
                                         .input_grads = {"Input"}})});
  r.add({.type = "slice_grad",
         .inputs = std::move(grad_inputs),
         .outputs = {{.name = grad_name("Input"), .dispensable = true}},
         .attrs = slice_attrs(),
         .infer_shape = infer_slice_grad,
         .make_grad = {}});
}

} // namespace pe
