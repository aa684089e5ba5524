// CUDA kernels of sqrt and squared_l2_norm (ClipGradByGlobalNorm's ops) and their grads:
// element maps of kernels/global_norm_ops.hpp's functors (shared with the CPU kernels) and
// one block reduction for squared_l2_norm's sum.
#include <cstdint>

#include "kernels/cuda/block_reduce.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/global_norm_ops.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

/// One block sums X's squares (in double) into out[0].
struct squared_sum_plan {
  squared_term term;
  std::int64_t count;
  float* out;
  PE_HOST_DEVICE double partial(std::int64_t, unsigned t, unsigned threads) const {
    return strided_fold(count, t, threads, 0.0, term, plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t, double total) const { out[0] = static_cast<float>(total); }
};

void squared_l2_norm(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, {1});
    reduce_blocks(ctx, 1, squared_sum_plan{{x.data<float>()}, x.numel(), out.data<float>()});
  });
}

void squared_l2_norm_grad(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const tensor& dout = gpu_fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, {1});
  write_unaliased(ctx.output("X@GRAD"), {&dout}, [&](tensor& dx) {
    resize_output(ctx, dx, dtype::fp32, x.shape());
    for_each(ctx, x.numel(), squared_l2_norm_grad_map{x.data<float>(), dout.data<float>(), dx.data<float>()});
  });
}

} // namespace

void register_global_norm_kernels(kernel_registry& r) {
  r.add("sqrt", gpu, [](kernel_context& ctx) { gpu_map_unary(ctx, "X", "Out", sqrt_fn{}); });
  r.add("sqrt_grad", gpu,
        [](kernel_context& ctx) { gpu_map_binary(ctx, "Out", "Out@GRAD", "X@GRAD", sqrt_grad_fn{}); });
  r.add("squared_l2_norm", gpu, squared_l2_norm);
  r.add("squared_l2_norm_grad", gpu, squared_l2_norm_grad);
}

} // namespace pe::cuda
