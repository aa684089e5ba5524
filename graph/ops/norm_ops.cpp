// Schemas of batch_norm and batch_norm_grad as Paddle 2.6 writes them. MeanOut and
// VarianceOut are normally the variables Mean and Variance (the running statistics, updated
// in place); SavedMean and SavedVariance (the batch mean and inverse std) carry the batch
// statistics to the grad op. ReserveSpace (cuDNN's) is written empty. The statistics
// conventions are the CPU kernel's (kernels/cpu/dnnl_norm_kernels.cpp).
//
// And of layer_norm and layer_norm_grad: X cut at begin_norm_axis into [left, N], Scale and
// Bias of N elements (each optional), Mean and Variance [left] (the rows' mean and biased
// variance, which the grad op reads); the shape rule is kernels/layer_norm_ops.hpp's, which
// the kernels apply too.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops/norm_shapes.hpp"
#include "graph/ops/op_helpers.hpp"
#include "kernels/layer_norm_ops.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

const shape_t& batch_norm_input(const shape_context& ctx) {
  expect_nchw(ctx, "data_layout", ctx.attrs().get<std::string>("data_layout"));
  ctx.expect(!ctx.attrs().get<bool>("fuse_with_relu"), "fuse_with_relu = true is not supported");
  const shape_t& x = fp32_dims(ctx, "X");
  ctx.expect(x.size() >= 2 && x.size() <= 5,
             "X must have rank 2 to 5 ([N, C, ...]), got " + to_string(x));
  return x;
}

void expect_channel_dims(const shape_context& ctx, const std::vector<const char*>& slots, std::int64_t c) {
  for (const char* slot : slots)
    ctx.expect(dims_compatible(fp32_dims(ctx, slot), {c}), std::string(slot) + " must be [C] = [" +
                                                               std::to_string(c) + "], got " +
                                                               to_string(ctx.input_dims(slot)));
}

std::vector<attr_spec> batch_norm_attrs() {
  return {{"momentum", 0.9f},        {"epsilon", 1e-5f},          {"data_layout", std::string("NCHW")},
          {"is_test", false},        {"use_global_stats", false}, {"trainable_statistics", false},
          {"fuse_with_relu", false}, {"use_mkldnn", false}};
}

std::vector<slot_spec> batch_norm_inputs() {
  return {{"X"}, {"Scale"}, {"Bias"}, {"Mean"}, {"Variance"}, {.name = "MomentumTensor", .dispensable = true}};
}

std::vector<slot_spec> batch_norm_outputs() {
  return {{"Y"},           {"MeanOut"},      {"VarianceOut"},
          {"SavedMean"},   {"SavedVariance"}, {.name = "ReserveSpace", .dispensable = true}};
}

namespace {

void infer_batch_norm(shape_context& ctx) {
  const shape_t& x = batch_norm_input(ctx);
  ctx.expect(ctx.input_count("MomentumTensor") == 0,
             "the MomentumTensor input is not supported; give the momentum attribute");
  expect_channel_dims(ctx, {"Scale", "Bias", "Mean", "Variance"}, x[1]);
  ctx.set_outputs("Y", x, dtype::fp32);
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})
    ctx.set_outputs(slot, {x[1]}, dtype::fp32);
  ctx.set_outputs("ReserveSpace", {0}, dtype::fp32);
}

void infer_batch_norm_grad(shape_context& ctx) {
  const shape_t& x = batch_norm_input(ctx);
  ctx.expect(dims_compatible(fp32_dims(ctx, "Y@GRAD"), x),
             "Y@GRAD " + to_string(ctx.input_dims("Y@GRAD")) + " does not match X " + to_string(x));
  expect_channel_dims(ctx, {"Scale", "SavedMean", "SavedVariance"}, x[1]);
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
  ctx.set_outputs(grad_name("Scale"), {x[1]}, dtype::fp32);
  ctx.set_outputs(grad_name("Bias"), {x[1]}, dtype::fp32);
}

/// X's [left, N] view, X checked to be FP32 and Scale and Bias (where bound) FP32 of N
/// elements.
ln_dims layer_norm_input(const shape_context& ctx) {
  const shape_t& x = fp32_dims(ctx, "X");
  const ln_dims d = layer_norm_dims(ctx, x, ctx.attrs().get<std::int32_t>("begin_norm_axis"));
  for (const char* slot : {"Scale", "Bias"})
    if (ctx.input_count(slot) > 0) expect_layer_norm_param(ctx, slot, fp32_dims(ctx, slot), d.n);
  return d;
}

void infer_layer_norm(shape_context& ctx) {
  const ln_dims d = layer_norm_input(ctx);
  ctx.set_outputs("Y", ctx.input_dims("X"), dtype::fp32);
  ctx.set_outputs("Mean", d.stats, dtype::fp32);
  ctx.set_outputs("Variance", d.stats, dtype::fp32);
}

/// The grad of Scale or Bias gets that input's dims, or [N] where the op binds none.
void set_param_grad(shape_context& ctx, const char* slot, const ln_dims& d) {
  ctx.set_outputs(grad_name(slot), ctx.input_count(slot) > 0 ? ctx.input_dims(slot) : shape_t{d.n},
                  dtype::fp32);
}

void infer_layer_norm_grad(shape_context& ctx) {
  const ln_dims d = layer_norm_input(ctx);
  const shape_t& x = ctx.input_dims("X");
  ctx.expect(dims_compatible(fp32_dims(ctx, "Y@GRAD"), x),
             "Y@GRAD " + to_string(ctx.input_dims("Y@GRAD")) + " does not match X " + to_string(x));
  for (const char* slot : {"Mean", "Variance"})
    ctx.expect(dims_compatible(fp32_dims(ctx, slot), {d.left}) || dims_compatible(ctx.input_dims(slot), d.stats),
               std::string(slot) + " must be [left] = [" + std::to_string(d.left) +
                   "] or X's dims before begin_norm_axis " + to_string(d.stats) + ", got " +
                   to_string(ctx.input_dims(slot)));
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
  set_param_grad(ctx, "Scale", d);
  set_param_grad(ctx, "Bias", d);
}

} // namespace

void register_norm_ops(op_registry& r) {
  // sync_batch_norm (nn.SyncBatchNorm, or BuildStrategy.sync_batch_norm's rewrite) has
  // batch_norm's slots and attributes; graph/sync_batch_norm.hpp lowers it before a graph is
  // built, and on one place alone it is batch_norm (the same kernels).
  const std::vector<attr_spec> attrs = batch_norm_attrs();
  for (const std::string type : {"batch_norm", "sync_batch_norm"}) {
    r.add({.type = type,
           .inputs = batch_norm_inputs(),
           .outputs = batch_norm_outputs(),
           .attrs = attrs,
           .infer_shape = infer_batch_norm,
           .make_grad = make_default_grad({.forward_inputs = {"X", "Scale", "Bias"},
                                           .forward_outputs = {"SavedMean", "SavedVariance", "MeanOut",
                                                               "VarianceOut", "ReserveSpace"},
                                           .output_grads = {"Y"},
                                           .input_grads = {"X", "Scale", "Bias"}})});
    r.add({.type = type + "_grad",
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

  // The grad op as Paddle's LayerNormGradOpMaker emits it: X, Mean, Variance and Y@GRAD in;
  // Scale and Bias, and their grads, only where the forward binds them.
  const std::vector<attr_spec> ln_attrs = {{"epsilon", 1e-5f},
                                           {"begin_norm_axis", std::int32_t{1}}};
  r.add({.type = "layer_norm",
         .inputs = {{"X"},
                    {.name = "Scale", .dispensable = true},
                    {.name = "Bias", .dispensable = true}},
         .outputs = {{"Y"}, {"Mean"}, {"Variance"}},
         .attrs = ln_attrs,
         .infer_shape = infer_layer_norm,
         .make_grad = make_default_grad({.forward_inputs = {"X", "Scale", "Bias"},
                                         .forward_outputs = {"Mean", "Variance"},
                                         .output_grads = {"Y"},
                                         .input_grads = {"X", "Scale", "Bias"}})});
  r.add({.type = "layer_norm_grad",
         .inputs = {{"X"},
                    {.name = "Scale", .dispensable = true},
                    {.name = "Bias", .dispensable = true},
                    {"Mean"},
                    {"Variance"},
                    {grad_name("Y")}},
         .outputs = {{.name = grad_name("X"), .dispensable = true},
                     {.name = grad_name("Scale"), .dispensable = true},
                     {.name = grad_name("Bias"), .dispensable = true}},
         .attrs = ln_attrs,
         .infer_shape = infer_layer_norm_grad,
         .make_grad = {}});
}

} // namespace pe
