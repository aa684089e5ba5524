// CUDA kernels of pool2d, conv2d and depthwise_conv2d and their grads (NCHW), on the geometry
// of devices/window_shapes.hpp (the CPU kernels' rule) and the index maps of window_maps.hpp:
// pooling as one thread per output (forward) or input (grad) element, convolution as im2col
// into a scratch column matrix and one cuBLAS batched GEMM per group, its Input@GRAD as GEMM
// then col2im, its Filter@GRAD as GEMMs summed over the images.
#include <cstdint>
#include <string>

#include "devices/cuda/kernels/cublas_handles.hpp"
#include "devices/cuda/kernels/cuda_kernel_groups.hpp"
#include "devices/cuda/kernels/gpu_maps.cuh"
#include "devices/cuda/kernels/window_maps.hpp"

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

/// A convolution's operands and geometry: per group, Output_g [mg, q] = Filter_g [mg, kg] *
/// col_g [kg, q] for each image.
struct conv_setup {
  const tensor& input;
  const tensor& filter;
  conv_plan p;
  std::int64_t groups, m, mg, kg, q;
  shape_t out_dims;
};

conv_setup conv_setup_of(const kernel_context& ctx) {
  const tensor& input = gpu_fp32_input(ctx, "Input");
  const tensor& filter = gpu_fp32_input(ctx, "Filter");
  const conv_geometry g = infer_conv(ctx, input.shape(), filter.shape(), ctx.attrs());
  const conv_plan p{input.dim(0), input.dim(1), window_1d::of(g.axes[0]), window_1d::of(g.axes[1])};
  const std::int64_t m = filter.dim(0);
  return {input, filter, p, g.groups, m, m / g.groups, p.rows() / g.groups, p.cols(), g.out};
}

/// The column matrices of every image: [n, rows, cols].
tensor columns(const kernel_context& ctx, const conv_setup& s) {
  tensor col = scratch(ctx, dtype::fp32, {s.p.n, s.p.rows(), s.p.cols()});
  for_each(ctx, col.numel(), im2col_map{s.input.data<float>(), col.data<float>(), s.p});
  return col;
}

void conv_forward(kernel_context& ctx) {
  const conv_setup s = conv_setup_of(ctx);
  write_unaliased(ctx.output("Output"), {&s.input, &s.filter}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, s.out_dims);
    if (out.numel() == 0) return;
    const tensor col = columns(ctx, s);
    const float* w = s.filter.data<float>();
    const float* c = col.data<float>();
    float* o = out.data<float>();
    for (std::int64_t g = 0; g < s.groups; ++g)
      batched_sgemm(ctx, s.p.n, false, false, s.mg, s.q, s.kg, 1.f, w + g * s.mg * s.kg, 0,
                    c + g * s.kg * s.q, s.p.rows() * s.q, o + g * s.mg * s.q, s.m * s.q);
  });
}

void conv_backward(kernel_context& ctx) {
  const conv_setup s = conv_setup_of(ctx);
  const tensor& dout = gpu_fp32_input(ctx, "Output@GRAD");
  expect_dims(ctx, "Output@GRAD", dout, s.out_dims);
  const float* w = s.filter.data<float>();
  const float* d = dout.data<float>();
  const std::int64_t col_stride = s.p.rows() * s.q, out_stride = s.m * s.q;
  if (ctx.has_output("Filter@GRAD"))
    write_unaliased(ctx.output("Filter@GRAD"), {&dout, &s.input, &s.filter}, [&](tensor& dw) {
      resize_output(ctx, dw, dtype::fp32, s.filter.shape());
      const tensor col = columns(ctx, s);
      for (std::int64_t g = 0; g < s.groups; ++g)
        batched_sgemm(ctx, s.p.n, false, true, s.mg, s.kg, s.q, 1.f, d + g * s.mg * s.q, out_stride,
                      col.data<float>() + g * s.kg * s.q, col_stride,
                      dw.data<float>() + g * s.mg * s.kg, 0);
    });
  if (ctx.has_output("Input@GRAD"))
    write_unaliased(ctx.output("Input@GRAD"), {&dout, &s.filter}, [&](tensor& dx) {
      resize_output(ctx, dx, dtype::fp32, s.input.shape());
      tensor dcol = scratch(ctx, dtype::fp32, {s.p.n, s.p.rows(), s.p.cols()});
      for (std::int64_t g = 0; g < s.groups; ++g)
        batched_sgemm(ctx, s.p.n, true, false, s.kg, s.q, s.mg, 1.f, w + g * s.mg * s.kg, 0,
                      d + g * s.mg * s.q, out_stride, dcol.data<float>() + g * s.kg * s.q,
                      col_stride);
      for_each(ctx, dx.numel(), col2im_map{dcol.data<float>(), dx.data<float>(), s.p});
    });
}

} // namespace

void register_window_kernels(kernel_registry& r) {
  r.add("pool2d", gpu, pool_forward);
  r.add("pool2d_grad", gpu, pool_backward);
  for (const std::string type : {"conv2d", "depthwise_conv2d"}) {
    r.add(type, gpu, conv_forward);
    r.add(type + "_grad", gpu, conv_backward);
  }
}

} // namespace pe::cuda
