// Schemas of the optimizer ops: sgd, momentum, adam, adamw, with the slots and attributes
// Paddle 2.6 writes. Their outputs normally are their inputs (ParamOut is Param, ...): they
// update the state in place. No gradients.
//
// Weight decay as Paddle lowers it: an L2Decay (or a float weight_decay) on sgd and adam is
// a scale of Param plus a sum into Param@GRAD before the optimizer op (ops of their own);
// momentum takes it as regularization_method "l2_decay" and regularization_coeff; adamw
// decays Param by lr * lr_ratio * coeff when with_decay. FP16 parameters with FP32 master
// copies (multi_precision) are not supported.
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
/// ParamOut like Param, and no multi_precision.
void infer_param_update(shape_context& ctx) {
  ctx.expect(!ctx.attrs().get<bool>("multi_precision"),
             "multi_precision (FP32 master copies of FP16 parameters) is not supported");
  expect_like_param(ctx, "Param");
  expect_like_param(ctx, "Grad");
  expect_scalar(ctx, "LearningRate");
  set_state_out(ctx, "Param");
}

void infer_momentum(shape_context& ctx) {
  infer_param_update(ctx);
  const auto& method = ctx.attrs().get<std::string>("regularization_method");
  ctx.expect(method.empty() || method == "l2_decay",
             "regularization_method must be \"\" or \"l2_decay\", got \"" + method + "\"");
  expect_like_param(ctx, "Velocity");
  set_state_out(ctx, "Velocity");
}

/// adam and adamw: the moments like Param, the powers and the optional Beta1Tensor,
/// Beta2Tensor, EpsilonTensor scalars, SkipUpdate one BOOL.
void infer_adam(shape_context& ctx) {
  infer_param_update(ctx);
  for (const char* moment : {"Moment1", "Moment2"}) {
    expect_like_param(ctx, moment);
    set_state_out(ctx, moment);
  }
  for (const char* pow : {"Beta1Pow", "Beta2Pow"}) {
    expect_scalar(ctx, pow);
    set_state_out(ctx, pow);
  }
  for (const char* scalar : {"Beta1Tensor", "Beta2Tensor", "EpsilonTensor"})
    if (ctx.input_count(scalar) > 0) expect_scalar(ctx, scalar);
  if (ctx.input_count("SkipUpdate") > 0)
    ctx.expect(ctx.input_dtype("SkipUpdate") == dtype::boolean &&
                   numel_of(ctx.input_dims("SkipUpdate")) == 1,
               "SkipUpdate must be one BOOL element, got " +
                   to_string(ctx.input_dtype("SkipUpdate")) + " " +
                   to_string(ctx.input_dims("SkipUpdate")));
}

} // namespace

void register_optimizer_ops(op_registry& r) {
  const slot_spec master_param{.name = "MasterParam", .dispensable = true};
  const slot_spec master_param_out{.name = "MasterParamOut", .dispensable = true};
  // A sparse embedding's gradient (SELECTED_ROWS) is read here directly: the kernels update
  // the rows it holds (kernels/optimizer_ops.hpp).
  const slot_spec grad{.name = "Grad", .selected_rows = true};

  r.add({.type = "sgd",
         .inputs = {{"Param"}, grad, {"LearningRate"}, master_param},
         .outputs = {{"ParamOut"}, master_param_out},
         .attrs = {{"multi_precision", false}},
         .infer_shape = infer_param_update,
         .make_grad = {}});

  // Velocity = mu * Velocity + g and Param -= lr * (g + mu * Velocity) (Nesterov) or
  // lr * Velocity, with g = rescale_grad * Grad + regularization_coeff * Param under l2_decay.
  r.add({.type = "momentum",
         .inputs = {{"Param"}, grad, {"Velocity"}, {"LearningRate"}, master_param},
         .outputs = {{"ParamOut"}, {"VelocityOut"}, master_param_out},
         .attrs = {{"mu", 0.f, true},
                   {"use_nesterov", false},
                   {"regularization_method", std::string()},
                   {"regularization_coeff", 0.f},
                   {"multi_precision", false},
                   {"rescale_grad", 1.f}},
         .infer_shape = infer_momentum,
         .make_grad = {}});

  // lazy_mode only matters for sparse gradients (only the rows they hold are updated);
  // min_row_size_to_use_multithread is a tuning knob of Paddle's kernel. use_global_beta_pow
  // leaves Beta1PowOut and Beta2PowOut alone (another op advances them).
  std::vector<attr_spec> adam_attrs = {{"beta1", 0.9f},
                                       {"beta2", 0.999f},
                                       {"epsilon", 1e-8f},
                                       {"lazy_mode", false},
                                       {"min_row_size_to_use_multithread", std::int64_t{1000}},
                                       {"multi_precision", false},
                                       {"use_global_beta_pow", false}};
  const std::vector<slot_spec> adam_inputs = {{"Param"},
                                              grad,
                                              {"LearningRate"},
                                              {"Moment1"},
                                              {"Moment2"},
                                              {"Beta1Pow"},
                                              {"Beta2Pow"},
                                              master_param,
                                              {.name = "SkipUpdate", .dispensable = true},
                                              {.name = "Beta1Tensor", .dispensable = true},
                                              {.name = "Beta2Tensor", .dispensable = true},
                                              {.name = "EpsilonTensor", .dispensable = true}};
  const std::vector<slot_spec> adam_outputs = {{"ParamOut"},   {"Moment1Out"},  {"Moment2Out"},
                                               {"Beta1PowOut"}, {"Beta2PowOut"}, master_param_out};
  r.add({.type = "adam",
         .inputs = adam_inputs,
         .outputs = adam_outputs,
         .attrs = adam_attrs,
         .infer_shape = infer_adam,
         .make_grad = {}});

  adam_attrs.insert(adam_attrs.end(),
                    {{"lr_ratio", 1.f}, {"coeff", 0.01f}, {"with_decay", false}});
  r.add({.type = "adamw",
         .inputs = adam_inputs,
         .outputs = adam_outputs,
         .attrs = adam_attrs,
         .infer_shape = infer_adam,
         .make_grad = {}});
}

} // namespace pe
