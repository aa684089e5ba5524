// CUDA kernels of mean and reduce_mean and their grads: a block reduction per output element
// over reduce_geometry.hpp's index math, and a broadcast of Out@GRAD / count back over X.
#include <cstdint>
#include <vector>

#include "devices/cuda/kernels/broadcast_maps.hpp"
#include "devices/cuda/kernels/cuda_kernel_groups.hpp"
#include "devices/cuda/kernels/gpu_maps.cuh"
#include "devices/math_shapes.hpp"

namespace pe::cuda {

namespace {

/// X's geometry against Out, and Out's dims.
struct reduce_plan {
  reduce_geometry g;
  shape_t out_dims;
};

reduce_geometry geometry(const kernel_context& ctx, const shape_t& dims,
                         const std::vector<bool>& reduced) {
  try {
    return reduce_geometry::make(dims, reduced);
  } catch (const error& e) {
    ctx.fail(e.what());
  }
}

reduce_plan mean_plan(const kernel_context& ctx, const tensor& x) {
  return {geometry(ctx, x.shape(), std::vector<bool>(x.rank(), true)), {1}};
}

reduce_plan reduce_mean_plan(const kernel_context& ctx, const tensor& x) {
  const attribute_map& a = ctx.attrs();
  const std::vector<bool> reduced = reduced_axes(
      ctx, x.rank(), a.get<std::vector<std::int32_t>>("dim"), a.get<bool>("reduce_all"));
  return {geometry(ctx, x.shape(), reduced), reduced_dims(x.shape(), reduced, a.get<bool>("keep_dim"))};
}

/// 1 / the number of X elements averaged into each output element (0 when there are none).
float inverse_count(const reduce_geometry& g) {
  return g.small_numel() == 0 || g.full_numel() == 0
             ? 0.f
             : static_cast<float>(g.small_numel()) / static_cast<float>(g.full_numel());
}

template <reduce_plan (*Plan)(const kernel_context&, const tensor&)>
void average(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const reduce_plan p = Plan(ctx, x);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, p.out_dims);
    reduce_blocks(ctx, p.g.small_numel(),
                  average_plan{x.data<float>(), out.data<float>(), p.g, inverse_count(p.g)});
  });
}

template <reduce_plan (*Plan)(const kernel_context&, const tensor&)>
void average_grad(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const tensor& dout = gpu_fp32_input(ctx, "Out@GRAD");
  const reduce_plan p = Plan(ctx, x);
  expect_dims(ctx, "Out@GRAD", dout, p.out_dims);
  write_unaliased(ctx.output("X@GRAD"), {&x, &dout}, [&](tensor& dx) {
    resize_output(ctx, dx, dtype::fp32, x.shape());
    for_each(ctx, p.g.full_numel(),
             broadcast_scaled_map{dout.data<float>(), dx.data<float>(), p.g, inverse_count(p.g)});
  });
}

} // namespace

void register_reduce_kernels(kernel_registry& r) {
  r.add("mean", place::kind::gpu, average<mean_plan>);
  r.add("mean_grad", place::kind::gpu, average_grad<mean_plan>);
  r.add("reduce_mean", place::kind::gpu, average<reduce_mean_plan>);
  r.add("reduce_mean_grad", place::kind::gpu, average_grad<reduce_mean_plan>);
}

} // namespace pe::cuda
