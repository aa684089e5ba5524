// CPU kernels of the optimizer ops: sgd, momentum, adam, adamw, with Paddle's update
// formulas (including momentum's L2 decay and adamw's decoupled decay).
//
// Outputs normally are the inputs themselves (ParamOut is the tensor of Param, ...): every
// kernel reads element i of all its inputs before writing element i of any output, so it
// is correct in place as well as out of place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "devices/cpu/cpu_kernels.hpp"
#include "devices/kernel.hpp"

namespace pe {

namespace {

/// Param, which must be FP32.
const tensor& param_input(const kernel_context& ctx) {
  const tensor& param = ctx.input("Param");
  if (param.type() != dtype::fp32) ctx.fail("Param must be FP32, got " + to_string(param.type()));
  return param;
}

/// The data of input `slot` (Grad, Velocity, ...), which must be FP32 with Param's shape.
const float* like_param(const kernel_context& ctx, std::string_view slot, const tensor& param) {
  const tensor& t = ctx.input(slot);
  if (t.type() != dtype::fp32 || t.shape() != param.shape())
    ctx.fail(std::string(slot) + " is " + to_string(t.type()) + " " + to_string(t.shape()) +
             " but Param is " + to_string(param.type()) + " " + to_string(param.shape()));
  return t.data<float>();
}

/// The value of the one-element FP32 input `slot` (LearningRate, Beta1Pow, ...).
float scalar_input(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = ctx.input(slot);
  if (t.type() != dtype::fp32 || t.numel() != 1)
    ctx.fail(std::string(slot) + " must be one FP32 element, got " + to_string(t.type()) + " " +
             to_string(t.shape()));
  return t.data<float>()[0];
}

/// The data of output `slot`, shaped like input `like`. When the output is that input (the
/// in-place case) it is left untouched: its current values are still to be read.
float* state_output(kernel_context& ctx, std::string_view slot, const tensor& like) {
  tensor& out = ctx.output(slot);
  if (&out != &like) out.resize(dtype::fp32, like.shape());
  return out.data<float>();
}

/// The scalar input `slot` when bound (adam's Beta1Tensor, ...), else attribute `attr`.
float scalar_or_attr(const kernel_context& ctx, std::string_view slot, const std::string& attr) {
  return ctx.has_input(slot) ? scalar_input(ctx, slot) : ctx.attrs().get<float>(attr);
}

/// Every optimizer's first check: FP32 master copies of FP16 parameters are not supported.
void expect_single_precision(const kernel_context& ctx) {
  if (ctx.attrs().get<bool>("multi_precision"))
    ctx.fail("multi_precision (FP32 master copies of FP16 parameters) is not supported");
}

/// ParamOut = Param - lr * Grad.
void sgd(kernel_context& ctx) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx);
  const float* grad = like_param(ctx, "Grad", param);
  const float lr = scalar_input(ctx, "LearningRate");
  float* param_out = state_output(ctx, "ParamOut", param);
  const float* p = param.data<float>();
  const std::int64_t n = param.numel();
  for (std::int64_t i = 0; i < n; ++i) param_out[i] = p[i] - lr * grad[i];
}

/// v = mu * v + g; p -= lr * (g + mu * v) with Nesterov, p -= lr * v without, where
/// g = rescale_grad * Grad, plus regularization_coeff * p under "l2_decay".
void momentum(kernel_context& ctx) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx);
  const float* grad = like_param(ctx, "Grad", param);
  const float* velocity = like_param(ctx, "Velocity", param);
  const float lr = scalar_input(ctx, "LearningRate");
  const float mu = ctx.attrs().get<float>("mu");
  const bool nesterov = ctx.attrs().get<bool>("use_nesterov");
  const float rescale = ctx.attrs().get<float>("rescale_grad");
  const auto& method = ctx.attrs().get<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay")
    ctx.fail("regularization_method must be \"\" or \"l2_decay\", got \"" + method + "\"");
  const float decay = method.empty() ? 0.f : ctx.attrs().get<float>("regularization_coeff");
  float* param_out = state_output(ctx, "ParamOut", param);
  float* velocity_out = state_output(ctx, "VelocityOut", ctx.input("Velocity"));
  const float* p = param.data<float>();
  const std::int64_t n = param.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = rescale * grad[i] + decay * p[i];
    const float v = mu * velocity[i] + g;
    const float step = nesterov ? g + mu * v : v;
    param_out[i] = p[i] - lr * step;
    velocity_out[i] = v;
  }
}

/// Writes `from` to output `slot` unchanged (nothing to do when it is that input).
void keep_state(kernel_context& ctx, std::string_view slot, const tensor& from) {
  tensor& out = ctx.output(slot);
  if (&out != &from) out.copy_from(from);
}

/// adamw's decoupled weight decay: lr scaled by lr_ratio, and p first multiplied by
/// 1 - lr * coeff (as only p reads p, the same as decaying after the Adam step). Adam's is
/// none: ratio 1, coeff 0.
struct decoupled_decay {
  float lr_ratio = 1.f;
  float coeff = 0.f;
};

/// Paddle's Adam: with b1p, b2p the running powers of beta1, beta2,
///   lr_t = lr * sqrt(1 - b2p) / (1 - b1p)
///   m1 = beta1 * m1 + (1 - beta1) * g;  m2 = beta2 * m2 + (1 - beta2) * g^2
///   p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - b2p))
/// and the powers advance by one factor of beta1, beta2 unless use_global_beta_pow.
/// Beta1Tensor, Beta2Tensor, EpsilonTensor override the attributes when bound; a true
/// SkipUpdate leaves every state as it was.
void adam_update(kernel_context& ctx, decoupled_decay decay) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx);
  const float* grad = like_param(ctx, "Grad", param);
  const float* moment1 = like_param(ctx, "Moment1", param);
  const float* moment2 = like_param(ctx, "Moment2", param);
  const float lr = scalar_input(ctx, "LearningRate") * decay.lr_ratio;
  const float beta1_pow = scalar_input(ctx, "Beta1Pow");
  const float beta2_pow = scalar_input(ctx, "Beta2Pow");
  const float beta1 = scalar_or_attr(ctx, "Beta1Tensor", "beta1");
  const float beta2 = scalar_or_attr(ctx, "Beta2Tensor", "beta2");
  const float epsilon = scalar_or_attr(ctx, "EpsilonTensor", "epsilon");

  if (ctx.has_input("SkipUpdate")) {
    const tensor& skip = ctx.input("SkipUpdate");
    if (skip.type() != dtype::boolean || skip.numel() != 1)
      ctx.fail("SkipUpdate must be one BOOL element, got " + to_string(skip.type()) + " " +
               to_string(skip.shape()));
    if (skip.data<bool>()[0]) {
      for (const char* slot : {"Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"})
        keep_state(ctx, std::string(slot) + "Out", ctx.input(slot));
      return;
    }
  }

  float* param_out = state_output(ctx, "ParamOut", param);
  float* moment1_out = state_output(ctx, "Moment1Out", ctx.input("Moment1"));
  float* moment2_out = state_output(ctx, "Moment2Out", ctx.input("Moment2"));
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
  const float* p = param.data<float>();
  const std::int64_t n = param.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m1 = beta1 * moment1[i] + (1.f - beta1) * g;
    const float m2 = beta2 * moment2[i] + (1.f - beta2) * g * g;
    param_out[i] = p[i] * keep - lr_t * m1 / (std::sqrt(m2) + eps_t);
    moment1_out[i] = m1;
    moment2_out[i] = m2;
  }
}

void adam(kernel_context& ctx) { adam_update(ctx, {}); }

/// adamw: coeff applies only with_decay (Paddle's apply_decay_param_fun clears it).
void adamw(kernel_context& ctx) {
  const attribute_map& a = ctx.attrs();
  adam_update(ctx, {.lr_ratio = a.get<float>("lr_ratio"),
                    .coeff = a.get<bool>("with_decay") ? a.get<float>("coeff") : 0.f});
}

} // namespace

void register_optimizer_kernels(kernel_registry& r) {
  r.add("sgd", place::kind::cpu, sgd);
  r.add("momentum", place::kind::cpu, momentum);
  r.add("adam", place::kind::cpu, adam);
  r.add("adamw", place::kind::cpu, adamw);
}

} // namespace pe
