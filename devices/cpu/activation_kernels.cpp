// CPU kernels of the elementwise unary ops: relu, tanh, sigmoid (whose grads, as in
// Paddle, read Out rather than X) and scale (whose grad is itself a scale op).
#include <cmath>
#include <cstdint>
#include <string>

#include "devices/cpu/math_kernels.hpp"

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

/// Out = scale * X + bias, or scale * (X + bias) when !bias_after_scale.
void scale(kernel_context& ctx) {
  const float s = ctx.attrs().get<float>("scale");
  const float bias = ctx.attrs().get<float>("bias");
  const float b = ctx.attrs().get<bool>("bias_after_scale") ? bias : s * bias;
  map_unary(ctx, "X", "Out", [s, b](float x) { return s * x + b; });
}

} // namespace

void register_activation_kernels(kernel_registry& r) {
  add_activation(
      r, "relu", [](float x) { return x > 0.f ? x : 0.f; },
      [](float out, float dout) { return out > 0.f ? dout : 0.f; });
  add_activation(
      r, "tanh", [](float x) { return std::tanh(x); },
      [](float out, float dout) { return dout * (1.f - out * out); });
  add_activation(
      r, "sigmoid", [](float x) { return 1.f / (1.f + std::exp(-x)); },
      [](float out, float dout) { return dout * out * (1.f - out); });
  r.add("scale", place::kind::cpu, scale);
}

} // namespace pe
