// CPU kernel of cumsum: kernels/cumsum_ops.hpp's scan over every lane. cumsum's grad is a
// cumsum too (graph/ops/cumsum_ops.cpp), so there is no cumsum_grad kernel.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/cumsum_ops.hpp"

namespace pe {

namespace {

template <class T>
void scan(kernel_context& ctx, const tensor& x, const cumsum_front& f) {
  tensor& out = ctx.output("Out");
  const T* in = x.data<T>();
  out.resize(x.type(), f.g.out_dims); // keeps X's buffer in place: same element count
  const cumsum_lanes<T> lanes{in, out.data<T>(), f.g.length, f.g.inner, f.exclusive, f.reverse};
  for (std::int64_t lane = 0; lane < f.g.outer * f.g.inner; ++lane) lanes(lane);
}

/// Out = the scan of X along the axis (or of X flattened), in X's dtype (FP32, INT64 or
/// INT32); in place over X is fine.
void cumsum(kernel_context& ctx) {
  const tensor& x = ctx.input("X");
  const cumsum_front f = cumsum_front_of(ctx, x);
  switch (x.type()) {
    case dtype::int64: return scan<std::int64_t>(ctx, x, f);
    case dtype::int32: return scan<std::int32_t>(ctx, x, f);
    default: return scan<float>(ctx, fp32_input(ctx, "X"), f);
  }
}

} // namespace

void register_cumsum_kernels(kernel_registry& r) { r.add("cumsum", place::kind::cpu, cumsum); }

} // namespace pe
