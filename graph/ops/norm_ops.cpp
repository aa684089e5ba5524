// Schemas of batch_norm and batch_norm_grad as Paddle 2.6 writes them. MeanOut and
// VarianceOut are normally the variables Mean and Variance (the running statistics, updated
// in place); SavedMean and SavedVariance (the batch mean and inverse std) carry the batch
// statistics to the grad op. ReserveSpace (cuDNN's) is written empty. The statistics
// conventions are the CPU kernel's (kernels/cpu/dnnl_norm_kernels.cpp).
#include "graph/op_registry.hpp"

#include <string>
#include <vector>

#include "graph/ops/op_helpers.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

namespace {

/// X's dims, checked to be [N, C, ...] of rank 2 to 5 in NCHW.
const shape_t& norm_input(const shape_context& ctx) {
  expect_nchw(ctx, "data_layout", ctx.attrs().get<std::string>("data_layout"));
  ctx.expect(!ctx.attrs().get<bool>("fuse_with_relu"), "fuse_with_relu = true is not supported");
  const shape_t& x = fp32_dims(ctx, "X");
  ctx.expect(x.size() >= 2 && x.size() <= 5,
             "X must have rank 2 to 5 ([N, C, ...]), got " + to_string(x));
  return x;
}

/// Fails unless each slot's dims are [C].
void expect_channels(const shape_context& ctx, const std::vector<const char*>& slots,
                     std::int64_t c) {
  for (const char* slot : slots)
    ctx.expect(dims_compatible(fp32_dims(ctx, slot), {c}), std::string(slot) + " must be [C] = [" +
                                                               std::to_string(c) + "], got " +
                                                               to_string(ctx.input_dims(slot)));
}

void infer_batch_norm(shape_context& ctx) {
  const shape_t& x = norm_input(ctx);
  ctx.expect(ctx.input_count("MomentumTensor") == 0,
             "the MomentumTensor input is not supported; give the momentum attribute");
  expect_channels(ctx, {"Scale", "Bias", "Mean", "Variance"}, x[1]);
  ctx.set_outputs("Y", x, dtype::fp32);
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})
    ctx.set_outputs(slot, {x[1]}, dtype::fp32);
  ctx.set_outputs("ReserveSpace", {0}, dtype::fp32);
}

void infer_batch_norm_grad(shape_context& ctx) {
  const shape_t& x = norm_input(ctx);
  ctx.expect(dims_compatible(fp32_dims(ctx, "Y@GRAD"), x),
             "Y@GRAD " + to_string(ctx.input_dims("Y@GRAD")) + " does not match X " + to_string(x));
  expect_channels(ctx, {"Scale", "SavedMean", "SavedVariance"}, x[1]);
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
  ctx.set_outputs(grad_name("Scale"), {x[1]}, dtype::fp32);
  ctx.set_outputs(grad_name("Bias"), {x[1]}, dtype::fp32);
}

} // namespace

void register_norm_ops(op_registry& r) {
  const std::vector<attr_spec> attrs = {
      {"momentum", 0.9f},        {"epsilon", 1e-5f},          {"data_layout", std::string("NCHW")},
      {"is_test", false},        {"use_global_stats", false}, {"trainable_statistics", false},
      {"fuse_with_relu", false}, {"use_mkldnn", false}};
  r.add(
      {.type = "batch_norm",
       .inputs = {{"X"},
                  {"Scale"},
                  {"Bias"},
                  {"Mean"},
                  {"Variance"},
                  {.name = "MomentumTensor", .dispensable = true}},
       .outputs = {{"Y"},
                   {"MeanOut"},
                   {"VarianceOut"},
                   {"SavedMean"},
                   {"SavedVariance"},
                   {.name = "ReserveSpace", .dispensable = true}},
       .attrs = attrs,
       .infer_shape = infer_batch_norm,
       .make_grad = make_default_grad({.forward_inputs = {"X", "Scale", "Bias"},
                                       .forward_outputs = {"SavedMean", "SavedVariance", "MeanOut",
                                                           "VarianceOut", "ReserveSpace"},
                                       .output_grads = {"Y"},
                                       .input_grads = {"X", "Scale", "Bias"}})});
  r.add({.type = "batch_norm_grad",
         .inputs = {{"X"},
                    {"Scale"},
                    {"Bias"},
                    {"SavedMean"},
                    {"SavedVariance"},
                    {.name = "MeanOut", .dispensable = true},
                    {.name = "VarianceOut", .dispensable = true},
                    {.name = "ReserveSpace", .dispensable = true},
                    {grad_name("Y")}},
         .outputs = {{.name = grad_name("X"), .dispensable = true},
                     {.name = grad_name("Scale"), .dispensable = true},
                     {.name = grad_name("Bias"), .dispensable = true}},
         .attrs = attrs,
         .infer_shape = infer_batch_norm_grad,
         .make_grad = {}});
}

} // namespace pe
