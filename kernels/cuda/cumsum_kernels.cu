// CUDA kernel of cumsum: kernels/cumsum_ops.hpp's scan, one thread per lane (shared with the
// CPU kernel, so both sum in the same order). cumsum's grad is a cumsum too.
#include <cstdint>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cumsum_ops.hpp"

namespace pe::cuda {

namespace {

template <class T>
void scan(kernel_context& ctx, const tensor& x, const cumsum_front& f) {
  tensor& out = ctx.output("Out");
  const T* in = x.data<T>();
  resize_output(ctx, out, x.type(), f.g.out_dims);
  for_each(ctx, f.g.outer * f.g.inner,
           cumsum_lanes<T>{in, out.data<T>(), f.g.length, f.g.inner, f.exclusive, f.reverse});
}

/// Out = the scan of X along the axis (or of X flattened), in X's dtype (FP32, INT64 or
/// INT32); in place over X is fine.
void cumsum(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  const cumsum_front f = cumsum_front_of(ctx, x);
  switch (x.type()) {
    case dtype::int64: return scan<std::int64_t>(ctx, x, f);
    case dtype::int32: return scan<std::int32_t>(ctx, x, f);
    default: return scan<float>(ctx, gpu_fp32_input(ctx, "X"), f);
  }
}

} // namespace

void register_cumsum_kernels(kernel_registry& r) { r.add("cumsum", place::kind::gpu, cumsum); }

} // namespace pe::cuda
