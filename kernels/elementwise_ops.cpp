#include "kernels/elementwise_ops.hpp"

#include <cstdint>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

std::vector<bool> broadcast_axes(const kernel_context& ctx, const tensor& x, const tensor& y) {
  const broadcast_span span = infer_broadcast(ctx, x.shape(), y.shape(), ctx.attrs().get<std::int32_t>("axis"));
  std::vector<bool> repeated(x.rank(), true);
  for (std::size_t i = span.begin; i < span.end; ++i) repeated[i] = false;
  return repeated;
}

dtype elementwise_integer_dtype(const kernel_context& ctx, const tensor& x, const tensor& y) {
  if (x.type() != dtype::int64 && x.type() != dtype::int32) return dtype::fp32;
  if (y.type() != x.type())
    ctx.fail("X is " + to_string(x.type()) + " but Y is " + to_string(y.type()) +
             ": integer operands must share their dtype");
  return x.type();
}

elementwise_grad_front elementwise_grad_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const tensor& y = fp32_input(ctx, "Y", 0);
  const tensor& dout = fp32_input(ctx, "Out@GRAD", 0);
  expect_dims(ctx, "Out@GRAD", dout, x.shape());
  const tensor* out = ctx.has_input("Out") ? &fp32_input(ctx, "Out", 0) : nullptr;
  if (out != nullptr) expect_dims(ctx, "Out", *out, x.shape());
  return {x, y, dout, out};
}

} // namespace pe
