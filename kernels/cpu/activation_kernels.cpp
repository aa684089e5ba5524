// CPU kernels of the elementwise unary ops: relu, tanh, sigmoid (whose grads, as in
// Paddle, read Out rather than X), leaky_relu (whose grad reads X) and scale (whose grad is
// itself a scale op). gelu runs on oneDNN (dnnl_eltwise_kernels.cpp).
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/math_ops.hpp"

namespace pe {

namespace {

/// Registers `type` (Out = forward(X)) and `type`_grad (X@GRAD = backward(Out, Out@GRAD)).
template <class Forward, class Backward>
void add_activation(kernel_registry& r, const std::string& type, Forward forward,
                    Backward backward) {
  r.add(type, place::kind::cpu,
        [forward](kernel_context& ctx) { map_unary(ctx, "X", "Out", forward); });
  r.add(type + "_grad", place::kind::cpu, [backward](kernel_context& ctx) {
    map_binary(ctx, "Out", "Out@GRAD", "X@GRAD", backward);
  });
}

/// Out = max(X, 0). Written out rather than through map_unary: `omp simd` vectorizes it at
/// -O2 too (GCC's -O2 cost model neither versions a loop for the run-time alias check that
/// Out == X in place needs nor turns the select into a max, so map_unary's loop branches on
/// every element and mispredicts half of them on activations of random sign).
void relu(kernel_context& ctx) {
  const tensor& in = fp32_input(ctx, "X");
  tensor& out = ctx.output("Out");
  out.resize(dtype::fp32, in.shape());
  const float* x = in.data<float>();
  float* y = out.data<float>();
  const std::int64_t n = in.numel();
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

/// X@GRAD = Out@GRAD where Out > 0, else 0; vectorized as relu. Out@GRAD is loaded
/// unconditionally so that the select needs no masked load.
void relu_grad(kernel_context& ctx) {
  const tensor& out = fp32_input(ctx, "Out");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, out.shape());
  tensor& dx = ctx.output("X@GRAD");
  dx.resize(dtype::fp32, out.shape());
  const float* o = out.data<float>();
  const float* g = dout.data<float>();
  float* d = dx.data<float>();
  const std::int64_t n = out.numel();
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float grad = g[i];
    d[i] = o[i] > 0.f ? grad : 0.f;
  }
}

/// Out = scale * X + bias, or scale * (X + bias) when !bias_after_scale.
void scale(kernel_context& ctx) {
  const scale_params p = scale_params_of(ctx);
  map_unary(ctx, "X", "Out", [p](float x) { return p.s * x + p.b; });
}

/// Out = X where X > 0, alpha * X elsewhere.
void leaky_relu(kernel_context& ctx) {
  const float alpha = ctx.attrs().get<float>("alpha");
  map_unary(ctx, "X", "Out", [alpha](float x) { return x > 0.f ? x : alpha * x; });
}

void leaky_relu_grad(kernel_context& ctx) {
  const float alpha = ctx.attrs().get<float>("alpha");
  map_binary(ctx, "X", "Out@GRAD", "X@GRAD",
             [alpha](float x, float dout) { return x > 0.f ? dout : alpha * dout; });
}

constexpr float sqrt_2_over_pi = 0.79788456080286535588f;
constexpr float inv_sqrt_2 = 0.70710678118654752440f;
} // namespace

void register_activation_kernels(kernel_registry& r) {
  r.add("relu", place::kind::cpu, relu);
  r.add("relu_grad", place::kind::cpu, relu_grad);
  add_activation(
      r, "tanh", [](float x) { return std::tanh(x); },
      [](float out, float dout) { return dout * (1.f - out * out); });
  add_activation(
      r, "sigmoid", [](float x) { return 1.f / (1.f + std::exp(-x)); },
      [](float out, float dout) { return dout * out * (1.f - out); });
  r.add("leaky_relu", place::kind::cpu, leaky_relu);
  r.add("leaky_relu_grad", place::kind::cpu, leaky_relu_grad);
  r.add("scale", place::kind::cpu, scale);
}

} // namespace pe
