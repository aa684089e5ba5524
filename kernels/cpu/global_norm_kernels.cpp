// CPU kernels of sqrt and squared_l2_norm (ClipGradByGlobalNorm's ops) and their grads. The
// per-element math is kernels/global_norm_ops.hpp's, shared with the CUDA kernels.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/global_norm_ops.hpp"

namespace pe {

namespace {

/// Out [1] = the sum of X's squared elements, summed in double.
void squared_l2_norm(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const squared_term term{x.data<float>()};
  double total = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) total += term(i);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(dtype::fp32, {1});
    out.data<float>()[0] = static_cast<float>(total);
  });
}

/// X@GRAD = 2 * Out@GRAD * X, Out@GRAD checked to be Out's [1]. Not in place over Out@GRAD,
/// whose one element every X@GRAD element reads.
void squared_l2_norm_grad(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, {1});
  write_unaliased(ctx.output("X@GRAD"), {&dout}, [&](tensor& dx) {
    dx.resize(dtype::fp32, x.shape());
    const squared_l2_norm_grad_map map{x.data<float>(), dout.data<float>(), dx.data<float>()};
    for (std::int64_t i = 0; i < x.numel(); ++i) map(i);
  });
}

} // namespace

void register_global_norm_kernels(kernel_registry& r) {
  r.add("sqrt", place::kind::cpu, [](kernel_context& ctx) { map_unary(ctx, "X", "Out", sqrt_fn{}); });
  r.add("sqrt_grad", place::kind::cpu,
        [](kernel_context& ctx) { map_binary(ctx, "Out", "Out@GRAD", "X@GRAD", sqrt_grad_fn{}); });
  r.add("squared_l2_norm", place::kind::cpu, squared_l2_norm);
  r.add("squared_l2_norm_grad", place::kind::cpu, squared_l2_norm_grad);
}

} // namespace pe
