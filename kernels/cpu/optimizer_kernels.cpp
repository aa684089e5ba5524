// CPU kernels of the optimizer ops: sgd, momentum, adam, adamw, with Paddle's update
// formulas (including momentum's L2 decay and adamw's decoupled decay). Inputs and attributes
// are read and checked by kernels/optimizer_ops.hpp's fronts, shared with the CUDA kernels.
//
// Outputs normally are the inputs themselves (ParamOut is the tensor of Param, ...): every
// kernel reads element i of all its inputs before writing element i of any output, so it
// is correct in place as well as out of place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/optimizer_ops.hpp"

namespace pe {

namespace {

/// The data of output `slot`, shaped like input `like`. When the output is that input (the
/// in-place case) it is left untouched: its current values are still to be read.
float* state_output(kernel_context& ctx, std::string_view slot, const tensor& like) {
  tensor& out = ctx.output(slot);
  if (&out != &like) out.resize(dtype::fp32, like.shape());
  return out.data<float>();
}

/// The value of the scalar input `slot` (checked by optimizer_ops.hpp's scalar_input).
float scalar(const kernel_context& ctx, std::string_view slot) {
  return scalar_input(ctx, bound_input, slot).data<float>()[0];
}

/// The scalar input `slot` when bound (adam's Beta1Tensor, ...), else attribute `attr`.
float scalar_or_attr(const kernel_context& ctx, std::string_view slot, const std::string& attr) {
  const tensor* t = scalar_override(ctx, bound_input, slot);
  return t != nullptr ? t->data<float>()[0] : ctx.attrs().get<float>(attr);
}

/// ParamOut = Param - lr * Grad.
void sgd(kernel_context& ctx) {
  const sgd_front f = sgd_front_of(ctx, bound_input);
  const float lr = f.lr.data<float>()[0];
  const float* grad = f.grad.data<float>();
  float* param_out = state_output(ctx, "ParamOut", f.param);
  const float* p = f.param.data<float>();
  const std::int64_t n = f.param.numel();
  for (std::int64_t i = 0; i < n; ++i) param_out[i] = p[i] - lr * grad[i];
}

/// v = mu * v + g; p -= lr * (g + mu * v) with Nesterov, p -= lr * v without, where
/// g = rescale_grad * Grad, plus regularization_coeff * p under "l2_decay".
void momentum(kernel_context& ctx) {
  const momentum_front f = momentum_front_of(ctx, bound_input);
  const float lr = f.lr.data<float>()[0];
  const float* grad = f.grad.data<float>();
  const float* velocity = f.velocity.data<float>();
  float* param_out = state_output(ctx, "ParamOut", f.param);
  float* velocity_out = state_output(ctx, "VelocityOut", f.velocity);
  const float* p = f.param.data<float>();
  const std::int64_t n = f.param.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = f.rescale * grad[i] + f.decay * p[i];
    const float v = f.mu * velocity[i] + g;
    const float step = f.nesterov ? g + f.mu * v : v;
    param_out[i] = p[i] - lr * step;
    velocity_out[i] = v;
  }
}

/// Writes `from` to output `slot` unchanged (nothing to do when it is that input).
void keep_state(kernel_context& ctx, std::string_view slot, const tensor& from) {
  tensor& out = ctx.output(slot);
  if (&out != &from) out.copy_from(from);
}

/// Paddle's Adam: with b1p, b2p the running powers of beta1, beta2,
///   lr_t = lr * sqrt(1 - b2p) / (1 - b1p)
///   m1 = beta1 * m1 + (1 - beta1) * g;  m2 = beta2 * m2 + (1 - beta2) * g^2
///   p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - b2p))
/// and the powers advance by one factor of beta1, beta2 unless use_global_beta_pow.
/// Beta1Tensor, Beta2Tensor, EpsilonTensor override the attributes when bound; a true
/// SkipUpdate leaves every state as it was. adamw's decay as decoupled_decay says (as only p
/// reads p, decaying first is the same as decaying after the Adam step).
void adam_update(kernel_context& ctx, decoupled_decay decay) {
  const adam_front f = adam_front_of(ctx, bound_input);
  const float* grad = f.grad.data<float>();
  const float* moment1 = f.moment1.data<float>();
  const float* moment2 = f.moment2.data<float>();
  const float lr = scalar(ctx, "LearningRate") * decay.lr_ratio;
  const float beta1_pow = scalar(ctx, "Beta1Pow");
  const float beta2_pow = scalar(ctx, "Beta2Pow");
  const float beta1 = scalar_or_attr(ctx, "Beta1Tensor", "beta1");
  const float beta2 = scalar_or_attr(ctx, "Beta2Tensor", "beta2");
  const float epsilon = scalar_or_attr(ctx, "EpsilonTensor", "epsilon");

  if (const tensor* skip = skip_update_input(ctx, bound_input); skip != nullptr && skip->data<bool>()[0]) {
    for (const char* slot : {"Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"})
      keep_state(ctx, std::string(slot) + "Out", ctx.input(slot));
    return;
  }

  float* param_out = state_output(ctx, "ParamOut", f.param);
  float* moment1_out = state_output(ctx, "Moment1Out", f.moment1);
  float* moment2_out = state_output(ctx, "Moment2Out", f.moment2);
  if (ctx.attrs().get<bool>("use_global_beta_pow")) {
    keep_state(ctx, "Beta1PowOut", ctx.input("Beta1Pow"));
    keep_state(ctx, "Beta2PowOut", ctx.input("Beta2Pow"));
  } else {
    state_output(ctx, "Beta1PowOut", ctx.input("Beta1Pow"))[0] = beta1_pow * beta1;
    state_output(ctx, "Beta2PowOut", ctx.input("Beta2Pow"))[0] = beta2_pow * beta2;
  }

  const float bias2 = std::sqrt(1.f - beta2_pow);
  const float lr_t = lr * bias2 / (1.f - beta1_pow);
  const float eps_t = epsilon * bias2;
  const float keep = 1.f - lr * decay.coeff;
  const float* p = f.param.data<float>();
  const std::int64_t n = f.param.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m1 = beta1 * moment1[i] + (1.f - beta1) * g;
    const float m2 = beta2 * moment2[i] + (1.f - beta2) * g * g;
    param_out[i] = p[i] * keep - lr_t * m1 / (std::sqrt(m2) + eps_t);
    moment1_out[i] = m1;
    moment2_out[i] = m2;
  }
}

} // namespace

void register_optimizer_kernels(kernel_registry& r) {
  register_optimizer_ops(r, place::kind::cpu, {sgd, momentum, adam_update});
}

} // namespace pe
