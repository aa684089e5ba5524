#pragma once
// The optimizer ops (sgd, momentum, adam, adamw) on every kind of place: shared here is each
// op's front, the inputs read and checked against Param, the attributes read and checked,
// with the failure messages, and the registration under the op types. A place's kernels
// bring the update (kernels/cpu/optimizer_kernels.cpp: loops on the host;
// kernels/cuda/optimizer_kernels.cu: optimizer_maps.hpp's maps, which read the scalar
// inputs on the device).
#include <string_view>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// Every optimizer's first check: fails on multi_precision (FP32 master copies of FP16
/// parameters), which is not supported.
void expect_single_precision(const kernel_context& ctx);

/// Param, read with `input` and checked to be FP32.
const tensor& param_input(const kernel_context& ctx, input_fn input);

/// Input `slot` (Grad, Velocity, ...), read with `input` and checked to be FP32 with
/// `param`'s dims.
const tensor& like_param(const kernel_context& ctx, input_fn input, std::string_view slot, const tensor& param);

/// Grad, read with `input`: like Param (like_param), or a SELECTED_ROWS value (a sparse
/// embedding's gradient) of FP32 rows as wide as Param's rows ([height, width] Param: [rows,
/// width]) of a table of Param's height. Fails naming what disagrees.
const tensor& grad_input(const kernel_context& ctx, input_fn input, const tensor& param);

/// The one-element FP32 input `slot` (LearningRate, Beta1Pow, ...), read with `input`, checked.
const tensor& scalar_input(const kernel_context& ctx, input_fn input, std::string_view slot);

/// scalar_input of `slot` when bound (adam's Beta1Tensor, ...), else null: the attribute holds
/// the value.
const tensor* scalar_override(const kernel_context& ctx, input_fn input, std::string_view slot);

/// adam's SkipUpdate when bound, checked to be one BOOL element; else null.
const tensor* skip_update_input(const kernel_context& ctx, input_fn input);

/// sgd's checked inputs: ParamOut = Param - LearningRate * Grad.
struct sgd_front {
  const tensor &param, &grad, &lr;
};
sgd_front sgd_front_of(const kernel_context& ctx, input_fn input);

/// momentum's checked inputs and attributes: with g = rescale * Grad + decay * Param,
/// v = mu * Velocity + g and Param -= lr * (nesterov ? g + mu * v : v). decay is
/// regularization_coeff under regularization_method "l2_decay", 0 under "" (others refused).
struct momentum_front {
  const tensor &param, &grad, &velocity, &lr;
  float mu, rescale, decay;
  bool nesterov;
};
momentum_front momentum_front_of(const kernel_context& ctx, input_fn input);

/// adam's and adamw's first inputs, checked: Param, Grad, Moment1, Moment2 (each place then
/// reads the scalars and SkipUpdate in its own order).
struct adam_front {
  const tensor &param, &grad, &moment1, &moment2;
};
adam_front adam_front_of(const kernel_context& ctx, input_fn input);

/// adamw's decoupled weight decay: lr scaled by lr_ratio, and p first multiplied by
/// 1 - lr * coeff. Adam's is none: ratio 1, coeff 0.
struct decoupled_decay {
  float lr_ratio = 1.f;
  float coeff = 0.f;
};

/// A place's optimizer kernels; `adam` runs adam and adamw with the decay it is given.
struct optimizer_kernels {
  kernel_fn sgd, momentum;
  void (*adam)(kernel_context& ctx, decoupled_decay decay);
};

/// Registers `k` under sgd, momentum, adam and adamw (whose coeff applies only with_decay:
/// Paddle's apply_decay_param_fun clears it) for places of kind `kind`. Other places than CPU
/// ones refuse a SELECTED_ROWS Grad, naming it: only the CPU kernels update sparse rows.
void register_optimizer_ops(kernel_registry& r, place::kind kind, const optimizer_kernels& k);

} // namespace pe
