// CUDA kernel of cumsum: kernels/cumsum_ops.hpp's scan, one thread per lane (shared with the
// CPU kernel, so both sum in the same order). cumsum's grad is a cumsum too.
#include <cstdint>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cumsum_ops.hpp"

namespace pe::cuda {

namespace {

/// Out = the scan of X along the axis (or of X flattened); in place over X is fine.
void cumsum(kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const cumsum_front f = cumsum_front_of(ctx, x);
  tensor& out = ctx.output("Out");
  resize_output(ctx, out, dtype::fp32, f.g.out_dims);
  for_each(ctx, f.g.outer * f.g.inner,
           cumsum_lanes{x.data<float>(), out.data<float>(), f.g.length, f.g.inner, f.exclusive, f.reverse});
}

} // namespace

void register_cumsum_kernels(kernel_registry& r) { r.add("cumsum", place::kind::gpu, cumsum); }

} // namespace pe::cuda
