// CUDA kernels of the initializer ops and of dropout.
//
// fill_constant and fill_any_like fill on the device. uniform_random and gaussian_random run
// the CPU kernel on the host and copy its tensor to the device: they run once, in the startup
// program, and so a seed gives bit-identical parameters on CPU and GPU places. dropout draws
// its mask on the host with the CPU kernel's generator (kernels/dropout_ops.hpp, which also
// reads and checks the attributes and the Seed and Mask inputs for both), so a step drops the
// same elements on gpu:i as on cpu:i, copies it to the device and applies it there.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/dropout_mask.hpp"
#include "kernels/cuda/elementwise_functors.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/fill_value.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

template <class T>
void fill_with(kernel_context& ctx, dtype type) {
  const auto v =
      fill_value<T>(ctx.attrs().get<float>("value"), ctx.attrs().get<std::string>("str_value"));
  if (!v.problem.empty()) ctx.fail(v.problem);
  tensor& out = ctx.output("Out");
  resize_output(ctx, out, type, ctx.attrs().get<std::vector<std::int64_t>>("shape"));
  for_each(ctx, out.numel(), fill_map<T>{out.data<T>(), v.value});
}

void fill_constant(kernel_context& ctx) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>("dtype"));
  switch (type) {
    case dtype::fp32: return fill_with<float>(ctx, type);
    case dtype::int64: return fill_with<std::int64_t>(ctx, type);
    case dtype::int32: return fill_with<std::int32_t>(ctx, type);
    case dtype::boolean: return fill_with<bool>(ctx, type);
    default: ctx.fail("dtype " + to_string(type) + " is not supported (FP32, INT64, INT32 or BOOL)");
  }
}

/// Out = X's dims, every element fill_any_like's value in its dtype, as the CPU kernel
/// (with_fill_like). X's elements are not read; Out may be X.
void fill_any_like(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  const shape_t dims = x.shape(); // a copy: resizing Out may resize X
  const std::string problem =
      with_fill_like(ctx.attrs().get<std::int32_t>("dtype"), x.type(),
                     ctx.attrs().get<float>("value"), [&](dtype type, auto value) {
                       using T = decltype(value);
                       tensor& out = ctx.output("Out");
                       resize_output(ctx, out, type, dims);
                       for_each(ctx, out.numel(), fill_map<T>{out.data<T>(), value});
                     });
  if (!problem.empty()) ctx.fail(problem);
}

/// Runs the op's CPU kernel into a host tensor (same attributes, a CPU place of the same
/// index) and copies the result into Out on the device.
void through_host(kernel_context& ctx) {
  tensor host;
  kernel_context shadow(ctx.op_type(), {}, {{"Out", {&host}}}, ctx.attrs(),
                        place::cpu(ctx.where().index));
  const kernel_fn* cpu = kernel_registry::global().find(ctx.op_type(), place::kind::cpu);
  if (cpu == nullptr) ctx.fail("no CPU kernel to draw the values with");
  (*cpu)(shadow);
  tensor& out = ctx.output("Out");
  resize_output(ctx, out, host.type(), host.shape());
  copy_from_host(ctx, out, host);
}

void dropout(kernel_context& ctx) {
  const dropout_attrs a = dropout_attrs_of(ctx);
  const tensor& x = gpu_fp32_input(ctx, "X");
  tensor mask;
  if (ctx.has_output("Mask")) {
    resize_output(ctx, ctx.output("Mask"), dtype::uint8, x.shape());
    mask = ctx.output("Mask"); // shares the output's buffer
  }
  tensor& out = ctx.output("Out");
  resize_output(ctx, out, dtype::fp32, x.shape());
  if (a.is_test) {
    gpu_map_unary(ctx, "X", "Out", multiply_fn{a.test_scale()});
    if (mask.initialized())
      for_each(ctx, mask.numel(), fill_map<std::uint8_t>{mask.data<std::uint8_t>(), 1});
    return;
  }
  std::optional<std::int32_t> seed;
  if (const tensor* t = dropout_seed_input(ctx))
    seed = t->where().type == place::kind::gpu ? read_scalar<std::int32_t>(ctx, *t) : t->data<std::int32_t>()[0];
  auto g = dropout_generator(ctx, seed);
  const std::vector<std::uint8_t> drawn = draw_dropout_mask(g, a.prob, x.numel());
  tensor host = tensor::from_vector(drawn, x.shape());
  if (!mask.initialized()) mask = scratch(ctx, dtype::uint8, x.shape());
  copy_from_host(ctx, mask, host);
  for_each(ctx, x.numel(),
           binary_map<dropout_fn, std::uint8_t>{x.data<float>(), mask.data<std::uint8_t>(),
                                                out.data<float>(),
                                                {a.upscale_in_train, 1.f - a.prob}});
}

void dropout_grad(kernel_context& ctx) {
  const dropout_attrs a = dropout_attrs_of(ctx);
  const tensor& out_grad = gpu_fp32_input(ctx, "Out@GRAD");
  if (a.is_test) return gpu_map_unary(ctx, "Out@GRAD", "X@GRAD", multiply_fn{a.test_scale()});
  const tensor& mask = gpu_input(ctx, "Mask");
  expect_dropout_mask(ctx, mask, out_grad);
  tensor& dx = ctx.output("X@GRAD");
  resize_output(ctx, dx, dtype::fp32, out_grad.shape());
  for_each(ctx, out_grad.numel(),
           binary_map<dropout_fn, std::uint8_t>{out_grad.data<float>(), mask.data<std::uint8_t>(),
                                                dx.data<float>(),
                                                {a.upscale_in_train, 1.f - a.prob}});
}

} // namespace

void register_init_dropout_kernels(kernel_registry& r) {
  r.add("fill_constant", gpu, fill_constant);
  r.add("fill_any_like", gpu, fill_any_like);
  r.add("uniform_random", gpu, through_host);
  r.add("gaussian_random", gpu, through_host);
  r.add("dropout", gpu, dropout);
  r.add("dropout_grad", gpu, dropout_grad);
}

} // namespace pe::cuda
