// CPU kernels of the broadcasting binary ops elementwise_add, elementwise_sub,
// elementwise_mul, elementwise_div, elementwise_max, elementwise_min, elementwise_pow and their
// grads. Y is broadcast against X by Paddle's rule
// (kernels/elementwise_ops.hpp's front, shared with the CUDA kernels); Out has X's dims.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/elementwise_ops.hpp"

namespace pe {

namespace {

/// X's dims with Y's broadcast axes marked: the layout of X (full) against Y (small).
broadcast_layout elementwise_layout(const kernel_context& ctx, const tensor& x, const tensor& y) {
  return {x.shape(), broadcast_axes(ctx, x, y)};
}

/// Out = f(X, Y) in T, Y broadcast. In place on X is fine (each element is read, then
/// written); Out aliasing Y is not, as Y is re-read across rows.
template <class T, class F>
void forward_in(kernel_context& ctx, const tensor& x, const tensor& y, F f) {
  const broadcast_layout layout = elementwise_layout(ctx, x, y);
  write_unaliased(ctx.output("Out"), {&y}, [&](tensor& out) {
    out.resize(x.type(), x.shape());
    const T* xs = x.data<T>();
    const T* ys = y.data<T>();
    T* os = out.data<T>();
    layout.for_each_element([&](std::int64_t i, std::int64_t j) { os[i] = static_cast<T>(f(xs[i], ys[j])); });
  });
}

/// Out = f(X, Y) in FP32, or in INT64/INT32 where the op takes integers
/// (elementwise_integer_op: add, sub, mul).
template <class F>
void elementwise_forward(kernel_context& ctx, F f) {
  const tensor& x = ctx.input("X");
  if (elementwise_integer_op(ctx.op_type())) {
    const tensor& y = ctx.input("Y");
    switch (elementwise_integer_dtype(ctx, x, y)) {
      case dtype::int64: return forward_in<std::int64_t>(ctx, x, y, f);
      case dtype::int32: return forward_in<std::int32_t>(ctx, x, y, f);
      default: break;
    }
  }
  forward_in<float>(ctx, fp32_input(ctx, "X"), fp32_input(ctx, "Y"), f);
}

/// What the backward pass of one element sees: the forward operands, the forward result
/// (0 for the ops whose grad op does not read Out) and its gradient.
struct grad_element {
  float x, y, out, dout;
};

/// X@GRAD[i] = dx(e_i), and Y@GRAD[j] = the sum of dy(e_i) over the elements i that Y[j] was
/// broadcast to; each is computed only when bound. Y@GRAD goes first, as X@GRAD may be
/// written in place over Out@GRAD or X, which Y@GRAD reads.
template <class DX, class DY>
void elementwise_backward(kernel_context& ctx, DX dx, DY dy) {
  const elementwise_grad_front f = elementwise_grad_front_of(ctx, fp32_input);
  const tensor &x = f.x, &y = f.y, &dout = f.dout;
  const tensor* out = f.out;
  const broadcast_layout layout = elementwise_layout(ctx, x, y);
  const float* xs = x.data<float>();
  const float* ys = y.data<float>();
  const float* os = out != nullptr ? out->data<float>() : nullptr;
  const float* ds = dout.data<float>();
  auto element = [&](std::int64_t i, std::int64_t j) {
    return grad_element{xs[i], ys[j], os != nullptr ? os[i] : 0.f, ds[i]};
  };
  if (ctx.has_output("Y@GRAD"))
    // X stands in for Out where the grad reads no Out.
    write_unaliased(ctx.output("Y@GRAD"), {&x, &y, &dout, out != nullptr ? out : &x},
                    [&](tensor& dy_out) {
                      dy_out.resize(dtype::fp32, y.shape());
                      reduce_sum_of(
                          layout, [&](std::int64_t i, std::int64_t j) { return dy(element(i, j)); },
                          dy_out.data<float>());
                    });
  if (ctx.has_output("X@GRAD"))
    write_unaliased(ctx.output("X@GRAD"), {&y}, [&](tensor& dx_out) {
      dx_out.resize(dtype::fp32, x.shape());
      float* g = dx_out.data<float>();
      layout.for_each_element([&](std::int64_t i, std::int64_t j) { g[i] = dx(element(i, j)); });
    });
}

/// Registers `type` (Out = forward(X, Y)) and `type`_grad (elementwise_backward's dx, dy).
template <class Forward, class DX, class DY>
void add_elementwise(kernel_registry& r, const std::string& type, Forward forward, DX dx,
                     DY dy) {
  r.add(type, place::kind::cpu,
        [forward](kernel_context& ctx) { elementwise_forward(ctx, forward); });
  r.add(type + "_grad", place::kind::cpu,
        [dx, dy](kernel_context& ctx) { elementwise_backward(ctx, dx, dy); });
}

} // namespace

void register_elementwise_kernels(kernel_registry& r) {
  add_elementwise(
      r, "elementwise_add", std::plus<>(), [](const grad_element& e) { return e.dout; },
      [](const grad_element& e) { return e.dout; });
  add_elementwise(
      r, "elementwise_sub", std::minus<>(), [](const grad_element& e) { return e.dout; },
      [](const grad_element& e) { return -e.dout; });
  add_elementwise(
      r, "elementwise_mul", std::multiplies<>(),
      [](const grad_element& e) { return e.dout * e.y; },
      [](const grad_element& e) { return e.dout * e.x; });
  // As Paddle: Y@GRAD = -Out@GRAD * Out / Y, reusing the forward result.
  add_elementwise(
      r, "elementwise_div", std::divides<float>(),
      [](const grad_element& e) { return e.dout / e.y; },
      [](const grad_element& e) { return -e.dout * e.out / e.y; });
  // As Paddle's MaxGradDx/Dy and MinGradDx/Dy: a tie's gradient goes to Y.
  add_elementwise(
      r, "elementwise_max", [](float x, float y) { return x > y ? x : y; },
      [](const grad_element& e) { return e.x > e.y ? e.dout : 0.f; },
      [](const grad_element& e) { return e.x <= e.y ? e.dout : 0.f; });
  add_elementwise(
      r, "elementwise_min", [](float x, float y) { return x < y ? x : y; },
      [](const grad_element& e) { return e.x < e.y ? e.dout : 0.f; },
      [](const grad_element& e) { return e.x >= e.y ? e.dout : 0.f; });
  // As Paddle's PowGradDX/DY: Y * X^(Y - 1) and ln(X) * X^Y, times Out@GRAD.
  add_elementwise(
      r, "elementwise_pow", [](float x, float y) { return std::pow(x, y); },
      [](const grad_element& e) { return e.dout * e.y * std::pow(e.x, e.y - 1.f); },
      [](const grad_element& e) { return e.dout * std::log(e.x) * std::pow(e.x, e.y); });
}

} // namespace pe
