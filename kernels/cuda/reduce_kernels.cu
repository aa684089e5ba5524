// CUDA kernels of mean, reduce_mean and reduce_sum and their grads: a block reduction per
// output element over reduce_geometry.hpp's index math, and a broadcast of Out@GRAD (times
// 1 / count for the averages) back over X. The axes, Out's dims and the scale come from
// kernels/reduce_ops.hpp's front, shared with the CPU kernels.
#include <cstdint>
#include <vector>

#include "kernels/cuda/broadcast_maps.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/reduce_ops.hpp"

namespace pe::cuda {

namespace {

/// X's geometry against Out under `f`.
reduce_geometry geometry(const kernel_context& ctx, const tensor& x, const reduce_front& f) {
  try {
    return reduce_geometry::make(x.shape(), f.reduced);
  } catch (const error& e) {
    ctx.fail(e.what());
  }
}

/// The front's scale of the sums over `g`: 1 / count for the averages, 1 for reduce_sum.
float scale_of(const reduce_front& f, const reduce_geometry& g) {
  return reduce_scale(f, g.full_numel(), g.small_numel());
}

void reduce(kernel_context& ctx, reduce_rule rule) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const reduce_front f = rule(ctx, x);
  const reduce_geometry g = geometry(ctx, x, f);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, f.out_dims);
    reduce_blocks(ctx, g.small_numel(), average_plan{x.data<float>(), out.data<float>(), g, scale_of(f, g)});
  });
}

void reduce_grad(kernel_context& ctx, reduce_rule rule) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const tensor& dout = gpu_fp32_input(ctx, "Out@GRAD");
  const reduce_front f = rule(ctx, x);
  const reduce_geometry g = geometry(ctx, x, f);
  expect_dims(ctx, "Out@GRAD", dout, f.out_dims);
  write_unaliased(ctx.output("X@GRAD"), {&x, &dout}, [&](tensor& dx) {
    resize_output(ctx, dx, dtype::fp32, x.shape());
    for_each(ctx, g.full_numel(), broadcast_scaled_map{dout.data<float>(), dx.data<float>(), g, scale_of(f, g)});
  });
}

} // namespace

void register_reduce_kernels(kernel_registry& r) {
  register_reduce_ops(r, place::kind::gpu, reduce, reduce_grad);
}

} // namespace pe::cuda
