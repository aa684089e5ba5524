// CPU kernels of the reductions over axes: mean (over every element), reduce_mean and
// reduce_sum (over chosen axes), and their grads, which spread Out@GRAD (times 1 / count for
// the averages) back over X. The axes, Out's dims and the scale come from
// kernels/reduce_ops.hpp's front, shared with the CUDA kernels.
#include <cstdint>
#include <vector>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/reduce_ops.hpp"

namespace pe {

namespace {

/// Out = X summed over the axes `rule` reduces, times its reduce_scale.
void reduce(kernel_context& ctx, reduce_rule rule) {
  const tensor& x = fp32_input(ctx, "X");
  const reduce_front f = rule(ctx, x);
  const broadcast_layout layout(x.shape(), f.reduced);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(dtype::fp32, f.out_dims);
    float* o = out.data<float>();
    reduce_sum(layout, x.data<float>(), o);
    const float scale = reduce_scale(f, layout.full_numel(), layout.small_numel());
    if (scale != 1.f)
      for (std::int64_t i = 0; i < layout.small_numel(); ++i) o[i] *= scale;
  });
}

/// X@GRAD = Out@GRAD times the reduce_scale, repeated over the axes `rule` reduces.
void reduce_grad(kernel_context& ctx, reduce_rule rule) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  const reduce_front f = rule(ctx, x);
  expect_dims(ctx, "Out@GRAD", dout, f.out_dims);
  const broadcast_layout layout(x.shape(), f.reduced);
  write_unaliased(ctx.output("X@GRAD"), {&x, &dout}, [&](tensor& dx) {
    dx.resize(dtype::fp32, x.shape());
    broadcast_scaled(layout, dout.data<float>(), reduce_scale(f, layout.full_numel(), layout.small_numel()),
                     dx.data<float>());
  });
}

} // namespace

void register_reduce_kernels(kernel_registry& r) {
  register_reduce_ops(r, place::kind::cpu, reduce, reduce_grad);
}

} // namespace pe
