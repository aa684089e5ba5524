// Schemas of the optimizer ops: sgd, momentum, adam. Their outputs normally are their
// inputs (ParamOut is Param, ...): they update the state in place. No gradients.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pe {

namespace {

/// Checks that the scalar input `slot` (LearningRate, Beta1Pow, ...) is FP32 with one element.
void expect_scalar(shape_context& ctx, const std::string& slot) {
  const shape_t& dims = ctx.input_dims(slot);
  ctx.expect(ctx.input_dtype(slot) == dtype::fp32 && numel_of(dims) == 1,
             slot + " must be one FP32 element, got " + to_string(ctx.input_dtype(slot)) + " " +
                 to_string(dims));
}

/// Checks that the per-element input `slot` (Grad, Velocity, ...) is FP32 with Param's dims.
void expect_like_param(shape_context& ctx, const std::string& slot) {
  const shape_t& param = ctx.input_dims("Param");
  const shape_t& dims = ctx.input_dims(slot);
  ctx.expect(ctx.input_dtype(slot) == dtype::fp32,
             slot + " must be FP32, got " + to_string(ctx.input_dtype(slot)));
  ctx.expect(dims_compatible(dims, param),
             slot + " dims " + to_string(dims) + " differ from Param dims " + to_string(param));
}

/// Every optimizer's state input `slot` has an output "<slot>Out" of the same dims.
void set_state_out(shape_context& ctx, const std::string& slot) {
  ctx.set_outputs(slot + "Out", ctx.input_dims(slot), dtype::fp32);
}

/// What every optimizer shares: Param (FP32), Grad like Param, LearningRate a scalar,
/// ParamOut like Param.
void infer_param_update(shape_context& ctx) {
  expect_like_param(ctx, "Param");
  expect_like_param(ctx, "Grad");
  expect_scalar(ctx, "LearningRate");
  set_state_out(ctx, "Param");
}

} // namespace

void register_optimizer_ops(op_registry& r) {
  r.add({.type = "sgd",
         .inputs = {{"Param"}, {"Grad"}, {"LearningRate"}},
         .outputs = {{"ParamOut"}},
         .attrs = {},
         .infer_shape = infer_param_update,
         .make_grad = {}});

  r.add({.type = "momentum",
         .inputs = {{"Param"}, {"Grad"}, {"Velocity"}, {"LearningRate"}},
         .outputs = {{"ParamOut"}, {"VelocityOut"}},
         .attrs = {{"mu", 0.f, true}, {"use_nesterov", false}},
         .infer_shape = [](shape_context& ctx) {
           infer_param_update(ctx);
           expect_like_param(ctx, "Velocity");
           set_state_out(ctx, "Velocity");
         },
         .make_grad = {}});

  r.add({.type = "adam",
         .inputs = {{"Param"},
                    {"Grad"},
                    {"LearningRate"},
                    {"Moment1"},
                    {"Moment2"},
                    {"Beta1Pow"},
                    {"Beta2Pow"}},
         .outputs = {{"ParamOut"},
                     {"Moment1Out"},
                     {"Moment2Out"},
                     {"Beta1PowOut"},
                     {"Beta2PowOut"}},
         .attrs = {{"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f}},
         .infer_shape = [](shape_context& ctx) {
           infer_param_update(ctx);
           for (const char* moment : {"Moment1", "Moment2"}) {
             expect_like_param(ctx, moment);
             set_state_out(ctx, moment);
           }
           for (const char* pow : {"Beta1Pow", "Beta2Pow"}) {
             expect_scalar(ctx, pow);
             set_state_out(ctx, pow);
           }
         },
         .make_grad = {}});
}

} // namespace pe
