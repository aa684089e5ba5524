// CPU kernels of the averaging reductions: mean (over every element) and reduce_mean (over
// chosen axes), and their grads, which spread Out@GRAD / count back over X. The axes and
// Out's dims come from kernels/reduce_ops.hpp's front, shared with the CUDA kernels.
#include <cstdint>
#include <vector>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/reduce_ops.hpp"

namespace pe {

namespace {

/// Out = X averaged over the axes `rule` reduces.
void average(kernel_context& ctx, reduce_rule rule) {
  const tensor& x = fp32_input(ctx, "X");
  const reduce_front f = rule(ctx, x);
  const broadcast_layout layout(x.shape(), f.reduced);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(dtype::fp32, f.out_dims);
    float* o = out.data<float>();
    reduce_sum(layout, x.data<float>(), o);
    const float inv = inverse_count(layout.full_numel(), layout.small_numel());
    for (std::int64_t i = 0; i < layout.small_numel(); ++i) o[i] *= inv;
  });
}

/// X@GRAD = Out@GRAD / count, repeated over the axes `rule` reduces.
void average_grad(kernel_context& ctx, reduce_rule rule) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  const reduce_front f = rule(ctx, x);
  expect_dims(ctx, "Out@GRAD", dout, f.out_dims);
  const broadcast_layout layout(x.shape(), f.reduced);
  write_unaliased(ctx.output("X@GRAD"), {&x, &dout}, [&](tensor& dx) {
    dx.resize(dtype::fp32, x.shape());
    broadcast_scaled(layout, dout.data<float>(), inverse_count(layout.full_numel(), layout.small_numel()),
                     dx.data<float>());
  });
}

} // namespace

void register_reduce_kernels(kernel_registry& r) {
  register_reduce_ops(r, place::kind::cpu, average, average_grad);
}

} // namespace pe
