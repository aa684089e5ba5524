#include "kernels/condition_ops.hpp"

namespace pe {

condition_front condition_front_of(const kernel_context& ctx, input_fn input) {
  const tensor& x = input(ctx, "X", 0);
  const tensor& y = input(ctx, "Y", 0);
  if (const std::string problem = condition_dtype_problem(x.type(), y.type()); !problem.empty()) ctx.fail(problem);
  return {x, y, condition_broadcast_of(ctx, x.shape(), y.shape(), ctx.attrs().get<std::int32_t>("axis"))};
}

} // namespace pe
