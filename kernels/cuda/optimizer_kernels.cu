// CUDA kernels of the optimizer ops sgd, momentum, adam and adamw: the update rules of
// elementwise_functors.hpp as element maps (optimizer_maps.hpp) that read the scalar inputs
// (LearningRate, the beta powers, ...) on the device, so no step waits for a copy to the host.
// Outputs normally are the inputs themselves; the maps are correct in place. Inputs and
// attributes are read and checked by kernels/optimizer_ops.hpp's fronts, shared with the CPU.
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/optimizer_maps.hpp"
#include "kernels/optimizer_ops.hpp"

namespace pe::cuda {

namespace {

/// Output `slot` shaped like input `like`, left alone when it is that input.
float* state_output(kernel_context& ctx, std::string_view slot, const tensor& like) {
  tensor& out = ctx.output(slot);
  if (&out != &like) resize_output(ctx, out, dtype::fp32, like.shape());
  return out.data<float>();
}

/// The device pointer of the one-element FP32 input `slot`.
const float* scalar_ptr(const kernel_context& ctx, std::string_view slot) {
  return scalar_input(ctx, gpu_input, slot).data<float>();
}

device_scalar scalar_or_attr(const kernel_context& ctx, std::string_view slot, const std::string& attr) {
  if (const tensor* t = scalar_override(ctx, gpu_input, slot)) return {t->data<float>(), 0.f};
  return {nullptr, ctx.attrs().get<float>(attr)};
}

void sgd(kernel_context& ctx) {
  const sgd_front f = sgd_front_of(ctx, gpu_input);
  float* param_out = state_output(ctx, "ParamOut", f.param);
  for_each(ctx, f.param.numel(), sgd_map{f.param.data<float>(), f.grad.data<float>(), f.lr.data<float>(), param_out});
}

void momentum(kernel_context& ctx) {
  const momentum_front f = momentum_front_of(ctx, gpu_input);
  float* param_out = state_output(ctx, "ParamOut", f.param);
  float* velocity_out = state_output(ctx, "VelocityOut", ctx.input("Velocity"));
  for_each(ctx, f.param.numel(),
           momentum_map{f.param.data<float>(), f.grad.data<float>(), f.velocity.data<float>(), f.lr.data<float>(),
                        param_out, velocity_out, momentum_fn{f.mu, f.rescale, f.decay, f.nesterov}});
}

/// adam and adamw (lr_ratio, decay_coeff as adam_inputs documents).
void adam_update(kernel_context& ctx, decoupled_decay decay) {
  const adam_front f = adam_front_of(ctx, gpu_input);
  const tensor* skip = skip_update_input(ctx, gpu_input);
  const adam_inputs in{scalar_ptr(ctx, "LearningRate"),
                       scalar_ptr(ctx, "Beta1Pow"),
                       scalar_ptr(ctx, "Beta2Pow"),
                       scalar_or_attr(ctx, "Beta1Tensor", "beta1"),
                       scalar_or_attr(ctx, "Beta2Tensor", "beta2"),
                       scalar_or_attr(ctx, "EpsilonTensor", "epsilon"),
                       decay.lr_ratio,
                       decay.coeff,
                       skip != nullptr ? skip->data<bool>() : nullptr};
  float* param_out = state_output(ctx, "ParamOut", f.param);
  float* moment1_out = state_output(ctx, "Moment1Out", ctx.input("Moment1"));
  float* moment2_out = state_output(ctx, "Moment2Out", ctx.input("Moment2"));
  float* beta1_pow_out = state_output(ctx, "Beta1PowOut", ctx.input("Beta1Pow"));
  float* beta2_pow_out = state_output(ctx, "Beta2PowOut", ctx.input("Beta2Pow"));
  for_each(ctx, f.param.numel(),
           adam_map{in, f.param.data<float>(), f.grad.data<float>(), f.moment1.data<float>(),
                    f.moment2.data<float>(), param_out, moment1_out, moment2_out});
  // After the update, which reads the old powers (in place, the outputs are the inputs).
  for_each(ctx, 1,
           adam_pow_map{in, ctx.attrs().get<bool>("use_global_beta_pow"), beta1_pow_out,
                        beta2_pow_out});
}

} // namespace

void register_optimizer_kernels(kernel_registry& r) {
  register_optimizer_ops(r, place::kind::gpu, {sgd, momentum, adam_update});
}

} // namespace pe::cuda
