#include "graph/ops/op_helpers.hpp"

#include <algorithm>

namespace pe {

const shape_t& fp32_dims(const shape_context& ctx, const std::string& slot, std::size_t i) {
  const dtype type = ctx.input_dtype(slot, i);
  ctx.expect(type == dtype::fp32, slot + " must be FP32, got " + to_string(type));
  return ctx.input_dims(slot, i);
}

shape_fn dims_from(std::vector<std::pair<std::string, std::string>> input_to_output) {
  return [pairs = std::move(input_to_output)](shape_context& ctx) {
    for (const auto& [in, out] : pairs) ctx.set_outputs(out, fp32_dims(ctx, in), dtype::fp32);
  };
}

void add_with_grad(op_registry& r, op_schema forward, const default_grad& grad,
                   shape_fn infer_grad) {
  op_schema backward{.type = forward.type + "_grad",
                     .inputs = {},
                     .outputs = {},
                     .attrs = forward.attrs,
                     .infer_shape = std::move(infer_grad),
                     .make_grad = {}};
  for (const auto& slot : grad.forward_inputs) backward.inputs.push_back({slot});
  for (const auto& slot : grad.forward_outputs) backward.inputs.push_back({slot});
  for (const auto& slot : grad.output_grads) backward.inputs.push_back({grad_name(slot)});
  for (const auto& slot : grad.input_grads)
    backward.outputs.push_back(
        {.name = grad_name(slot),
         .dispensable = true,
         .selected_rows = std::find(grad.selected_rows_grads.begin(), grad.selected_rows_grads.end(), slot) !=
                          grad.selected_rows_grads.end()});
  forward.make_grad = make_default_grad(grad);
  r.add(std::move(forward));
  r.add(std::move(backward));
}

void add_with_out_grad(op_registry& r, const std::string& type, std::vector<attr_spec> attrs,
                       shape_fn infer_shape) {
  add_with_grad(r,
                {.type = type,
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = std::move(attrs),
                 .infer_shape = std::move(infer_shape),
                 .make_grad = {}},
                {.forward_inputs = {},
                 .forward_outputs = {"Out"},
                 .output_grads = {"Out"},
                 .input_grads = {"X"}},
                dims_from({{"Out", "X@GRAD"}}));
}

} // namespace pe
