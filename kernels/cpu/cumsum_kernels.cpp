// CPU kernel of cumsum: kernels/cumsum_ops.hpp's scan over every lane. cumsum's grad is a
// cumsum too (graph/ops/cumsum_ops.cpp), so there is no cumsum_grad kernel.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cumsum_ops.hpp"

namespace pe {

namespace {

/// Out = the scan of X along the axis (or of X flattened), in X's dtype; in place over X is
/// fine.
void cumsum(kernel_context& ctx) {
  const tensor& x = ctx.input("X");
  const cumsum_front f = cumsum_front_of(ctx, x);
  tensor& out = ctx.output("Out");
  with_cumsum_dtype(x.type(), [&]<class T>(T) {
    const T* in = x.data<T>();
    out.resize(x.type(), f.g.out_dims); // keeps X's buffer in place: same element count
    const cumsum_lanes<T> scan{in, out.data<T>(), f.g.length, f.g.inner, f.exclusive, f.reverse};
    for (std::int64_t lane = 0; lane < f.g.outer * f.g.inner; ++lane) scan(lane);
  });
}

} // namespace

void register_cumsum_kernels(kernel_registry& r) { r.add("cumsum", place::kind::cpu, cumsum); }

} // namespace pe
