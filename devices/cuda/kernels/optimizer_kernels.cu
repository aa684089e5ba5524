// CUDA kernels of the optimizer ops sgd, momentum, adam and adamw: the update rules of
// elementwise_functors.hpp as element maps (optimizer_maps.hpp) that read the scalar inputs
// (LearningRate, the beta powers, ...) on the device, so no step waits for a copy to the host.
// Outputs normally are the inputs themselves; the maps are correct in place.
#include <cstdint>
#include <string>
#include <string_view>

#include "devices/cuda/kernels/cuda_kernel_groups.hpp"
#include "devices/cuda/kernels/gpu_maps.cuh"
#include "devices/cuda/kernels/optimizer_maps.hpp"

namespace pe::cuda {

namespace {

const tensor& param_input(const kernel_context& ctx) {
  const tensor& param = gpu_input(ctx, "Param");
  if (param.type() != dtype::fp32) ctx.fail("Param must be FP32, got " + to_string(param.type()));
  return param;
}

const float* like_param(const kernel_context& ctx, std::string_view slot, const tensor& param) {
  const tensor& t = gpu_input(ctx, slot);
  if (t.type() != dtype::fp32 || t.shape() != param.shape())
    ctx.fail(std::string(slot) + " is " + to_string(t.type()) + " " + to_string(t.shape()) +
             " but Param is " + to_string(param.type()) + " " + to_string(param.shape()));
  return t.data<float>();
}

/// The device pointer of the one-element FP32 input `slot`.
const float* scalar_input(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = gpu_input(ctx, slot);
  if (t.type() != dtype::fp32 || t.numel() != 1)
    ctx.fail(std::string(slot) + " must be one FP32 element, got " + to_string(t.type()) + " " +
             to_string(t.shape()));
  return t.data<float>();
}

/// Output `slot` shaped like input `like`, left alone when it is that input.
float* state_output(kernel_context& ctx, std::string_view slot, const tensor& like) {
  tensor& out = ctx.output(slot);
  if (&out != &like) resize_output(ctx, out, dtype::fp32, like.shape());
  return out.data<float>();
}

device_scalar scalar_or_attr(const kernel_context& ctx, std::string_view slot, const std::string& attr) {
  if (ctx.has_input(slot)) return {scalar_input(ctx, slot), 0.f};
  return {nullptr, ctx.attrs().get<float>(attr)};
}

void expect_single_precision(const kernel_context& ctx) {
  if (ctx.attrs().get<bool>("multi_precision"))
    ctx.fail("multi_precision (FP32 master copies of FP16 parameters) is not supported");
}

void sgd(kernel_context& ctx) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx);
  const float* grad = like_param(ctx, "Grad", param);
  const float* lr = scalar_input(ctx, "LearningRate");
  float* param_out = state_output(ctx, "ParamOut", param);
  for_each(ctx, param.numel(), sgd_map{param.data<float>(), grad, lr, param_out});
}

void momentum(kernel_context& ctx) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx);
  const float* grad = like_param(ctx, "Grad", param);
  const float* velocity = like_param(ctx, "Velocity", param);
  const float* lr = scalar_input(ctx, "LearningRate");
  const auto& method = ctx.attrs().get<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay")
    ctx.fail("regularization_method must be \"\" or \"l2_decay\", got \"" + method + "\"");
  const momentum_fn f{ctx.attrs().get<float>("mu"), ctx.attrs().get<float>("rescale_grad"),
                      method.empty() ? 0.f : ctx.attrs().get<float>("regularization_coeff"),
                      ctx.attrs().get<bool>("use_nesterov")};
  float* param_out = state_output(ctx, "ParamOut", param);
  float* velocity_out = state_output(ctx, "VelocityOut", ctx.input("Velocity"));
  for_each(ctx, param.numel(),
           momentum_map{param.data<float>(), grad, velocity, lr, param_out, velocity_out, f});
}

/// adam and adamw (lr_ratio, decay_coeff as adam_inputs documents).
void adam_update(kernel_context& ctx, float lr_ratio, float decay_coeff) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx);
  const float* grad = like_param(ctx, "Grad", param);
  const float* moment1 = like_param(ctx, "Moment1", param);
  const float* moment2 = like_param(ctx, "Moment2", param);
  const bool* skip = nullptr;
  if (ctx.has_input("SkipUpdate")) {
    const tensor& t = gpu_input(ctx, "SkipUpdate");
    if (t.type() != dtype::boolean || t.numel() != 1)
      ctx.fail("SkipUpdate must be one BOOL element, got " + to_string(t.type()) + " " +
               to_string(t.shape()));
    skip = t.data<bool>();
  }
  const adam_inputs in{scalar_input(ctx, "LearningRate"),
                       scalar_input(ctx, "Beta1Pow"),
                       scalar_input(ctx, "Beta2Pow"),
                       scalar_or_attr(ctx, "Beta1Tensor", "beta1"),
                       scalar_or_attr(ctx, "Beta2Tensor", "beta2"),
                       scalar_or_attr(ctx, "EpsilonTensor", "epsilon"),
                       lr_ratio,
                       decay_coeff,
                       skip};
  float* param_out = state_output(ctx, "ParamOut", param);
  float* moment1_out = state_output(ctx, "Moment1Out", ctx.input("Moment1"));
  float* moment2_out = state_output(ctx, "Moment2Out", ctx.input("Moment2"));
  float* beta1_pow_out = state_output(ctx, "Beta1PowOut", ctx.input("Beta1Pow"));
  float* beta2_pow_out = state_output(ctx, "Beta2PowOut", ctx.input("Beta2Pow"));
  for_each(ctx, param.numel(),
           adam_map{in, param.data<float>(), grad, moment1, moment2, param_out, moment1_out,
                    moment2_out});
  // After the update, which reads the old powers (in place, the outputs are the inputs).
  for_each(ctx, 1,
           adam_pow_map{in, ctx.attrs().get<bool>("use_global_beta_pow"), beta1_pow_out,
                        beta2_pow_out});
}

} // namespace

void register_optimizer_kernels(kernel_registry& r) {
  r.add("sgd", place::kind::gpu, sgd);
  r.add("momentum", place::kind::gpu, momentum);
  r.add("adam", place::kind::gpu, [](kernel_context& ctx) { adam_update(ctx, 1.f, 0.f); });
  r.add("adamw", place::kind::gpu, [](kernel_context& ctx) {
    const attribute_map& a = ctx.attrs();
    adam_update(ctx, a.get<float>("lr_ratio"), a.get<bool>("with_decay") ? a.get<float>("coeff") : 0.f);
  });
}

} // namespace pe::cuda
