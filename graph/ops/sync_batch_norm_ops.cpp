// Schemas of the ops graph/sync_batch_norm.hpp lowers a training-mode sync_batch_norm into
// (the statistics as [2C + 1] FP32: two per-channel sums and the element count per channel,
// kernels/sync_batch_norm_ops.hpp), and of c_allreduce_sum, the program-level all-reduce
// between them: Paddle's collective op, X and Out the same variable, summed over every
// place and process of the job (the SSA graph makes it an all_reduce op handle).
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/attributes.hpp"
#include "graph/ops/norm_shapes.hpp"
#include "graph/ops/op_helpers.hpp"

namespace pe {

namespace {

/// Fails unless input `slot` is FP32 [2C + 1].
void expect_stats(const shape_context& ctx, const char* slot, std::int64_t c) {
  ctx.expect(dims_compatible(fp32_dims(ctx, slot), {2 * c + 1}),
             std::string(slot) + " must be [2C + 1] = [" + std::to_string(2 * c + 1) + "], got " +
                 to_string(ctx.input_dims(slot)));
}

void infer_stats(shape_context& ctx) {
  const shape_t& x = batch_norm_input(ctx);
  expect_channel_dims(ctx, {"Mean"}, x[1]);
  ctx.set_outputs("Stats", {2 * x[1] + 1}, dtype::fp32);
}

void infer_apply(shape_context& ctx) {
  const shape_t& x = batch_norm_input(ctx);
  ctx.expect(ctx.input_count("MomentumTensor") == 0,
             "the MomentumTensor input is not supported; give the momentum attribute");
  expect_channel_dims(ctx, {"Scale", "Bias", "Mean", "Variance"}, x[1]);
  expect_stats(ctx, "Stats", x[1]);
  ctx.set_outputs("Y", x, dtype::fp32);
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})
    ctx.set_outputs(slot, {x[1]}, dtype::fp32);
  ctx.set_outputs("ReserveSpace", {0}, dtype::fp32);
}

/// X and Y@GRAD of one shape, SavedMean and SavedVariance [C]; returns X's dims.
const shape_t& grad_input(const shape_context& ctx) {
  const shape_t& x = batch_norm_input(ctx);
  ctx.expect(dims_compatible(fp32_dims(ctx, "Y@GRAD"), x),
             "Y@GRAD " + to_string(ctx.input_dims("Y@GRAD")) + " does not match X " + to_string(x));
  expect_channel_dims(ctx, {"SavedMean", "SavedVariance"}, x[1]);
  return x;
}

void infer_grad_stats(shape_context& ctx) {
  const shape_t& x = grad_input(ctx);
  ctx.set_outputs(grad_name("Scale"), {x[1]}, dtype::fp32);
  ctx.set_outputs(grad_name("Bias"), {x[1]}, dtype::fp32);
  ctx.set_outputs("Stats", {2 * x[1] + 1}, dtype::fp32);
}

void infer_grad_apply(shape_context& ctx) {
  const shape_t& x = grad_input(ctx);
  expect_channel_dims(ctx, {"Scale"}, x[1]);
  expect_stats(ctx, "Stats", x[1]);
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
}

void infer_all_reduce(shape_context& ctx) {
  // Out is X, summed in place: the SSA graph gives the collective a new version of X.
  const auto out = output_args(ctx.op(), "Out");
  ctx.expect(ctx.input_count("X") == 1 && out.size() == 1 && out[0] == ctx.input_name("X"),
             "X and Out must be one and the same variable (the sum is taken in place)");
  const shape_t& x = fp32_dims(ctx, "X");
  ctx.set_outputs("Out", x, dtype::fp32);
}

} // namespace

void register_sync_batch_norm_ops(op_registry& r) {
  const std::vector<attr_spec> attrs = batch_norm_attrs();
  std::vector<slot_spec> apply_inputs = batch_norm_inputs();
  apply_inputs.push_back({"Stats"});
  r.add({.type = "sync_batch_norm_stats",
         .inputs = {{"X"}, {"Mean"}},
         .outputs = {{"Stats"}},
         .attrs = attrs,
         .infer_shape = infer_stats});
  r.add({.type = "sync_batch_norm_apply",
         .inputs = apply_inputs,
         .outputs = batch_norm_outputs(),
         .attrs = attrs,
         .infer_shape = infer_apply});
  r.add({.type = "sync_batch_norm_grad_stats",
         .inputs = {{"X"}, {grad_name("Y")}, {"SavedMean"}, {"SavedVariance"}},
         .outputs = {{.name = grad_name("Scale"), .dispensable = true},
                     {.name = grad_name("Bias"), .dispensable = true},
                     {"Stats"}},
         .attrs = attrs,
         .infer_shape = infer_grad_stats});
  r.add({.type = "sync_batch_norm_grad_apply",
         .inputs = {{"X"}, {"Scale"}, {"SavedMean"}, {"SavedVariance"}, {grad_name("Y")}, {"Stats"}},
         .outputs = {{grad_name("X")}},
         .attrs = attrs,
         .infer_shape = infer_grad_apply});
  r.add({.type = "c_allreduce_sum",
         .inputs = {{"X"}},
         .outputs = {{"Out"}},
         .attrs = {{"ring_id", std::int32_t{0}},
                   {"use_calc_stream", false},
                   {"use_model_parallel", false}},
         .infer_shape = infer_all_reduce});
}

} // namespace pe
