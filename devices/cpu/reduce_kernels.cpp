// CPU kernels of the averaging reductions: mean (over every element) and reduce_mean (over
// chosen axes), and their grads, which spread Out@GRAD / count back over X.
#include <cstdint>
#include <vector>

#include "devices/cpu/math_kernels.hpp"
#include "devices/math_shapes.hpp"

namespace pe {

namespace {

/// 1 / the number of X elements averaged into each output element (0 when there are none).
float inverse_count(const broadcast_layout& layout) {
  return layout.small_numel() == 0 || layout.full_numel() == 0
             ? 0.f
             : static_cast<float>(layout.small_numel()) / static_cast<float>(layout.full_numel());
}

/// Out (dims `out_dims`) = X averaged over the layout's reduced axes.
void write_average(kernel_context& ctx, const tensor& x, const broadcast_layout& layout,
                   const shape_t& out_dims) {
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(dtype::fp32, out_dims);
    float* o = out.data<float>();
    reduce_sum(layout, x.data<float>(), o);
    const float inv = inverse_count(layout);
    for (std::int64_t i = 0; i < layout.small_numel(); ++i) o[i] *= inv;
  });
}

/// X@GRAD = Out@GRAD / count, repeated over the layout's reduced axes.
void write_average_grad(kernel_context& ctx, const tensor& x, const tensor& dout,
                        const broadcast_layout& layout) {
  write_unaliased(ctx.output("X@GRAD"), {&x, &dout}, [&](tensor& dx) {
    dx.resize(dtype::fp32, x.shape());
    broadcast_scaled(layout, dout.data<float>(), inverse_count(layout), dx.data<float>());
  });
}

/// mean reduces every axis of X.
broadcast_layout mean_layout(const tensor& x) {
  return {x.shape(), std::vector<bool>(x.rank(), true)};
}

void mean(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  write_average(ctx, x, mean_layout(x), {1});
}

void mean_grad(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, {1});
  write_average_grad(ctx, x, dout, mean_layout(x));
}

/// X's layout against Out under reduce_mean's attributes, and Out's dims.
struct reduce_plan {
  broadcast_layout layout;
  shape_t out_dims;
};

reduce_plan plan_reduce(const kernel_context& ctx, const tensor& x) {
  const attribute_map& a = ctx.attrs();
  const std::vector<bool> reduced = reduced_axes(
      ctx, x.rank(), a.get<std::vector<std::int32_t>>("dim"), a.get<bool>("reduce_all"));
  return {broadcast_layout(x.shape(), reduced),
          reduced_dims(x.shape(), reduced, a.get<bool>("keep_dim"))};
}

void reduce_mean(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const reduce_plan plan = plan_reduce(ctx, x);
  write_average(ctx, x, plan.layout, plan.out_dims);
}

void reduce_mean_grad(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  const reduce_plan plan = plan_reduce(ctx, x);
  expect_dims(ctx, "Out@GRAD", dout, plan.out_dims);
  write_average_grad(ctx, x, dout, plan.layout);
}

} // namespace

void register_reduce_kernels(kernel_registry& r) {
  r.add("mean", place::kind::cpu, mean);
  r.add("mean_grad", place::kind::cpu, mean_grad);
  r.add("reduce_mean", place::kind::cpu, reduce_mean);
  r.add("reduce_mean_grad", place::kind::cpu, reduce_mean_grad);
}

} // namespace pe
