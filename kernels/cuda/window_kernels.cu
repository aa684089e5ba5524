// CUDA kernels of pool2d and its grad (NCHW), on the geometry of kernels/window_shapes.hpp
// (the CPU kernels' rule) and the index maps of window_maps.hpp: one thread per output
// (forward) or input (grad) element. Our own kernels rather than cuDNN's pooling: Paddle's
// windows (ceil_mode, asymmetric paddings, the non-exclusive divisor clipped to the padded
// input) are not what cuDNN computes. conv2d is in conv_kernels.cu (cuDNN).
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/window_maps.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

pool_plan pool_plan_of(const kernel_context& ctx, const tensor& x, shape_t& out_dims) {
  const pool_geometry g = infer_pool(ctx, x.shape(), ctx.attrs());
  out_dims = g.out;
  return {window_1d::of(g.axes[0]), window_1d::of(g.axes[1]), g.max, g.exclusive};
}

void pool_forward(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  shape_t dims;
  const pool_plan p = pool_plan_of(ctx, x, dims);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, dims);
    for_each(ctx, out.numel(), pool_forward_map{x.data<float>(), out.data<float>(), p});
  });
}

void pool_backward(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const tensor& dout = gpu_fp32_input(ctx, "Out@GRAD");
  shape_t dims;
  const pool_plan p = pool_plan_of(ctx, x, dims);
  expect_dims(ctx, "Out@GRAD", dout, dims);
  const tensor* out = nullptr;
  if (p.max) {
    out = &gpu_fp32_input(ctx, "Out");
    expect_dims(ctx, "Out", *out, dims);
  }
  write_unaliased(ctx.output("X@GRAD"), {&x, &dout, out != nullptr ? out : &x}, [&](tensor& dx) {
    resize_output(ctx, dx, dtype::fp32, x.shape());
    for_each(ctx, x.numel(),
             pool_backward_map{x.data<float>(), out != nullptr ? out->data<float>() : nullptr,
                               dout.data<float>(), dx.data<float>(), p});
  });
}

} // namespace

void register_window_kernels(kernel_registry& r) {
  r.add("pool2d", gpu, pool_forward);
  r.add("pool2d_grad", gpu, pool_backward);
}

} // namespace pe::cuda
