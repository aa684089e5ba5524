#pragma once

// The element maps of the optimizer kernels. The scalars (LearningRate, the beta powers,
// Beta1Tensor, ...) stay on the device and are read by every element, so no step waits for a
// device-to-host copy. Each map reads element i of every input before writing element i of
// any output: correct in place (ParamOut the tensor of Param, ...), as on the CPU.

#include <cstdint>

#include "kernels/cuda/elementwise_functors.hpp"

namespace pe::cuda {

/// ParamOut = Param - lr * Grad.
struct sgd_map {
  const float* param;
  const float* grad;
  const float* lr;
  float* param_out;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    param_out[i] = sgd_fn{}(param[i], grad[i], lr[0]);
  }
};

struct momentum_map {
  const float* param;
  const float* grad;
  const float* velocity;
  const float* lr;
  float* param_out;
  float* velocity_out;
  momentum_fn f;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const momentum_result r = f(param[i], grad[i], velocity[i], lr[0]);
    param_out[i] = r.param;
    velocity_out[i] = r.velocity;
  }
};

/// A scalar read on the device when its tensor is bound (Beta1Tensor, ...), else the
/// attribute's value.
struct device_scalar {
  const float* tensor; ///< null: use `value`
  float value;
  PE_HOST_DEVICE float get() const { return tensor != nullptr ? tensor[0] : value; }
};

/// The inputs every adam and adamw element reads.
struct adam_inputs {
  const float* lr;
  const float* beta1_pow;
  const float* beta2_pow;
  device_scalar beta1, beta2, epsilon;
  float lr_ratio;    ///< adamw's; 1 for adam
  float decay_coeff; ///< adamw's coeff when with_decay; 0 for adam
  const bool* skip;  ///< SkipUpdate; null when unbound

  PE_HOST_DEVICE adam_scalars scalars() const {
    return make_adam_scalars(lr[0] * lr_ratio, beta1_pow[0], beta2_pow[0], beta1.get(),
                             beta2.get(), epsilon.get(), decay_coeff);
  }
  PE_HOST_DEVICE bool skipped() const { return skip != nullptr && skip[0]; }
};

/// Param, Moment1, Moment2 updated; copied unchanged under a true SkipUpdate.
struct adam_map {
  adam_inputs in;
  const float* param;
  const float* grad;
  const float* moment1;
  const float* moment2;
  float* param_out;
  float* moment1_out;
  float* moment2_out;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    if (in.skipped()) {
      const float p = param[i], m1 = moment1[i], m2 = moment2[i];
      param_out[i] = p;
      moment1_out[i] = m1;
      moment2_out[i] = m2;
      return;
    }
    const adam_result r = adam_fn{}(in.scalars(), param[i], grad[i], moment1[i], moment2[i]);
    param_out[i] = r.param;
    moment1_out[i] = r.moment1;
    moment2_out[i] = r.moment2;
  }
};

/// The beta powers' update, one element, run after adam_map (which reads the old powers):
/// times beta1, beta2, or unchanged under use_global_beta_pow or a true SkipUpdate.
struct adam_pow_map {
  adam_inputs in;
  bool use_global_beta_pow;
  float* beta1_pow_out;
  float* beta2_pow_out;
  PE_HOST_DEVICE void operator()(std::int64_t) const {
    const float b1 = in.beta1_pow[0], b2 = in.beta2_pow[0];
    const bool keep = use_global_beta_pow || in.skipped();
    beta1_pow_out[0] = keep ? b1 : b1 * in.beta1.get();
    beta2_pow_out[0] = keep ? b2 : b2 * in.beta2.get();
  }
};

} // namespace pe::cuda
