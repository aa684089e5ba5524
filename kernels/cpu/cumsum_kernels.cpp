// CPU kernel of cumsum: kernels/cumsum_ops.hpp's scan over every lane. cumsum's grad is a
// cumsum too (graph/ops/cumsum_ops.cpp), so there is no cumsum_grad kernel.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/cumsum_ops.hpp"

namespace pe {

namespace {

/// Out = the scan of X along the axis (or of X flattened); in place over X is fine.
void cumsum(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const cumsum_front f = cumsum_front_of(ctx, x);
  tensor& out = ctx.output("Out");
  out.resize(dtype::fp32, f.g.out_dims); // keeps X's buffer in place: same element count
  const cumsum_lanes scan{x.data<float>(), out.data<float>(), f.g.length, f.g.inner, f.exclusive, f.reverse};
  for (std::int64_t lane = 0; lane < f.g.outer * f.g.inner; ++lane) scan(lane);
}

} // namespace

void register_cumsum_kernels(kernel_registry& r) { r.add("cumsum", place::kind::cpu, cumsum); }

} // namespace pe
