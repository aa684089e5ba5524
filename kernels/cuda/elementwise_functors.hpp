#pragma once

// The per-element functions of the CUDA kernels: activations and their grads, the binary
// elementwise ops and their grads, scale, the optimizer update rules, dropout's mask
// application, the cross-entropy element terms and cast. Each is a small value type with a
// PE_HOST_DEVICE call operator computing exactly what the CPU kernel of the same op computes
// for one element (kernels/cpu/*.cpp), in the same float expression, so that the host tests
// can compare them with the CPU kernels and the kernels (grid_stride.cuh) can run them on the
// GPU. No CUDA header is needed: g++ compiles this file for the host tests.
//
// The math calls are the C functions (expf, tanhf, ...): on the host they are what
// std::exp(float) and friends call, and nvcc maps them to its device intrinsics.

#include <cmath>
#include <cstdint>

#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

// --- activations (kernels/cpu/activation_kernels.cpp) -----------------------------------

/// Out = max(X, 0).
struct relu_fn {
  PE_HOST_DEVICE float operator()(float x) const { return x > 0.f ? x : 0.f; }
};

/// X@GRAD from (Out, Out@GRAD): Out@GRAD where Out > 0, else 0.
struct relu_grad_fn {
  PE_HOST_DEVICE float operator()(float out, float dout) const { return out > 0.f ? dout : 0.f; }
};

struct tanh_fn {
  PE_HOST_DEVICE float operator()(float x) const { return tanhf(x); }
};

/// X@GRAD from (Out, Out@GRAD): Out@GRAD * (1 - Out^2).
struct tanh_grad_fn {
  PE_HOST_DEVICE float operator()(float out, float dout) const { return dout * (1.f - out * out); }
};

struct sigmoid_fn {
  PE_HOST_DEVICE float operator()(float x) const { return 1.f / (1.f + expf(-x)); }
};

/// X@GRAD from (Out, Out@GRAD): Out@GRAD * Out * (1 - Out).
struct sigmoid_grad_fn {
  PE_HOST_DEVICE float operator()(float out, float dout) const { return dout * out * (1.f - out); }
};

/// Out = X where X > 0, alpha * X elsewhere.
struct leaky_relu_fn {
  float alpha;
  PE_HOST_DEVICE float operator()(float x) const { return x > 0.f ? x : alpha * x; }
};

/// X@GRAD from (X, Out@GRAD).
struct leaky_relu_grad_fn {
  float alpha;
  PE_HOST_DEVICE float operator()(float x, float dout) const {
    return x > 0.f ? dout : alpha * dout;
  }
};

constexpr float gelu_sqrt_2_over_pi = 0.79788456080286535588f;
constexpr float gelu_inv_sqrt_2 = 0.70710678118654752440f;
constexpr float gelu_cubic = 0.044715f;

/// gelu(x) = x * Phi(x); `approximate` takes Phi from the tanh formula.
struct gelu_fn {
  bool approximate;
  PE_HOST_DEVICE float operator()(float x) const {
    if (approximate)
      return 0.5f * x * (1.f + tanhf(gelu_sqrt_2_over_pi * (x + gelu_cubic * x * x * x)));
    return 0.5f * x * (1.f + erff(x * gelu_inv_sqrt_2));
  }
};

/// X@GRAD from (X, Out@GRAD): the derivative of the form gelu_fn computes.
struct gelu_grad_fn {
  bool approximate;
  PE_HOST_DEVICE float operator()(float x, float dout) const {
    if (approximate) {
      const float t = tanhf(gelu_sqrt_2_over_pi * (x + gelu_cubic * x * x * x));
      const float dt = (1.f - t * t) * gelu_sqrt_2_over_pi * (1.f + 3.f * gelu_cubic * x * x);
      return dout * 0.5f * (1.f + t + x * dt);
    }
    const float density = 0.5f * gelu_sqrt_2_over_pi * expf(-0.5f * x * x);
    return dout * (0.5f * (1.f + erff(x * gelu_inv_sqrt_2)) + x * density);
  }
};

/// Out = scale * X + bias; the caller folds bias_after_scale = false into `bias`
/// (scale * bias), as the CPU kernel does.
struct scale_fn {
  float scale, bias;
  PE_HOST_DEVICE float operator()(float x) const { return scale * x + bias; }
};

// --- binary elementwise ops (kernels/cpu/elementwise_kernels.cpp) -----------------------

// add, sub and mul also run on INT64 and INT32 (elementwise_integer_op), in that type.
struct add_fn {
  template <class T>
  PE_HOST_DEVICE T operator()(T x, T y) const { return x + y; }
};
struct sub_fn {
  template <class T>
  PE_HOST_DEVICE T operator()(T x, T y) const { return x - y; }
};
struct mul_fn {
  template <class T>
  PE_HOST_DEVICE T operator()(T x, T y) const { return x * y; }
};
struct div_fn {
  PE_HOST_DEVICE float operator()(float x, float y) const { return x / y; }
};
struct max_fn {
  PE_HOST_DEVICE float operator()(float x, float y) const { return x > y ? x : y; }
};
struct min_fn {
  PE_HOST_DEVICE float operator()(float x, float y) const { return x < y ? x : y; }
};
/// X^Y (NaN for a negative X and a non-integral Y, as Paddle's std::pow).
struct pow_fn {
  PE_HOST_DEVICE float operator()(float x, float y) const { return powf(x, y); }
};

/// One element of an elementwise grad: the forward operands, the forward result (0 when
/// the grad op reads no Out) and its gradient.
struct grad_element {
  float x, y, out, dout;
};

/// The X@GRAD and Y@GRAD terms of each binary op; Y@GRAD sums dy over Y's broadcast.
struct add_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.dout; }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return e.dout; }
};
struct sub_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.dout; }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return -e.dout; }
};
struct mul_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.dout * e.y; }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return e.dout * e.x; }
};
/// As Paddle: Y@GRAD = -Out@GRAD * Out / Y, reusing the forward result.
struct div_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.dout / e.y; }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return -e.dout * e.out / e.y; }
};
/// As Paddle's MaxGradDx/Dy: the gradient goes to X where X > Y, to Y where X <= Y (ties: Y).
struct max_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.x > e.y ? e.dout : 0.f; }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return e.x <= e.y ? e.dout : 0.f; }
};
/// As Paddle's MinGradDx/Dy: to X where X < Y, to Y where X >= Y (ties: Y).
struct min_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.x < e.y ? e.dout : 0.f; }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return e.x >= e.y ? e.dout : 0.f; }
};
/// As Paddle's PowGradDX/DY: X@GRAD = Out@GRAD * Y * X^(Y - 1), Y@GRAD = Out@GRAD * ln(X) * X^Y.
struct pow_grad_fn {
  PE_HOST_DEVICE float dx(const grad_element& e) const { return e.dout * e.y * powf(e.x, e.y - 1.f); }
  PE_HOST_DEVICE float dy(const grad_element& e) const { return e.dout * logf(e.x) * powf(e.x, e.y); }
};

// --- optimizers (kernels/cpu/optimizer_kernels.cpp) -------------------------------------

/// ParamOut = Param - lr * Grad.
struct sgd_fn {
  PE_HOST_DEVICE float operator()(float p, float g, float lr) const { return p - lr * g; }
};

/// Momentum's new (param, velocity).
struct momentum_result {
  float param, velocity;
};

/// g = rescale * Grad + decay * p; v = mu * v + g; p -= lr * (nesterov ? g + mu * v : v).
struct momentum_fn {
  float mu, rescale, decay;
  bool nesterov;
  PE_HOST_DEVICE momentum_result operator()(float p, float grad, float velocity, float lr) const {
    const float g = rescale * grad + decay * p;
    const float v = mu * velocity + g;
    const float step = nesterov ? g + mu * v : v;
    return {p - lr * step, v};
  }
};

/// Adam's (and adamw's) per-step scalars, from the learning rate (already times lr_ratio),
/// the beta powers and the decoupled decay coefficient (0 for adam).
struct adam_scalars {
  float lr_t, eps_t, keep, beta1, beta2;
};

PE_HOST_DEVICE inline adam_scalars make_adam_scalars(float lr, float beta1_pow, float beta2_pow,
                                                     float beta1, float beta2, float epsilon,
                                                     float decay_coeff) {
  const float bias2 = sqrtf(1.f - beta2_pow);
  return {lr * bias2 / (1.f - beta1_pow), epsilon * bias2, 1.f - lr * decay_coeff, beta1, beta2};
}

/// Adam's new (param, moment1, moment2).
struct adam_result {
  float param, moment1, moment2;
};

struct adam_fn {
  PE_HOST_DEVICE adam_result operator()(const adam_scalars& s, float p, float g, float m1,
                                        float m2) const {
    const float n1 = s.beta1 * m1 + (1.f - s.beta1) * g;
    const float n2 = s.beta2 * m2 + (1.f - s.beta2) * g * g;
    return {p * s.keep - s.lr_t * n1 / (sqrtf(n2) + s.eps_t), n1, n2};
  }
};

// --- dropout (kernels/cpu/dropout_kernels.cpp) ------------------------------------------

/// Training: 0 where the mask drops, else the value, divided by keep_prob under
/// upscale_in_train. The same for Out from X and for X@GRAD from Out@GRAD.
struct dropout_fn {
  bool upscale_in_train;
  float keep_prob;
  PE_HOST_DEVICE float operator()(float v, std::uint8_t mask) const {
    return mask == 0 ? 0.f : upscale_in_train ? v / keep_prob : v;
  }
};

/// Inference: v * (1 - prob), or v under upscale_in_train (the caller passes scale 1).
struct multiply_fn {
  float factor;
  PE_HOST_DEVICE float operator()(float v) const { return v * factor; }
};

// --- cross-entropy (kernels/cpu/loss_kernels.cpp) ---------------------------------------

/// -log p as Paddle's TolerableValue clamps it: a zero probability gives 1e20, not inf.
PE_HOST_DEVICE inline float neg_log(float p) {
  constexpr float appro_inf = 1e20f;
  const float log_p = logf(p);
  using std::isinf;
  if (isinf(log_p)) return log_p > 0 ? -appro_inf : appro_inf;
  return -log_p;
}

/// Soft-label cross-entropy grad over probabilities: -Label / X * Loss@GRAD.
struct soft_probability_grad_fn {
  PE_HOST_DEVICE float operator()(float p, float label, float loss_grad) const {
    return -label / p * loss_grad;
  }
};

/// softmax_with_cross_entropy's grad: (Softmax - target) * Loss@GRAD.
struct softmax_xent_grad_fn {
  PE_HOST_DEVICE float operator()(float softmax, float target, float loss_grad) const {
    return (softmax - target) * loss_grad;
  }
};

// --- cast ------------------------------------------------------------------------------

/// static_cast, as the CPU cast kernel converts (to bool: nonzero is true).
template <class To>
struct cast_fn {
  template <class From>
  PE_HOST_DEVICE To operator()(From v) const {
    return static_cast<To>(v);
  }
};

} // namespace pe::cuda
