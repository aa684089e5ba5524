#include "kernels/softmax_ops.hpp"

#include <cstdint>
#include <string>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

std::size_t softmax_axis(const kernel_context& ctx, std::string_view slot, const tensor& t) {
  if (t.rank() == 0) ctx.fail(std::string(slot) + " must have rank >= 1, got a scalar");
  return normalize_axis(ctx, "axis", ctx.attrs().get<std::int32_t>("axis"), t.rank());
}

softmax_grad_front softmax_grad_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& out = fp32_input(ctx, "Out", 0);
  const tensor& dout = fp32_input(ctx, "Out@GRAD", 0);
  expect_dims(ctx, "Out@GRAD", dout, out.shape());
  return {out, dout};
}

void register_softmax_ops(kernel_registry& r, place::kind kind, softmax_kernel_fn forward,
                          softmax_kernel_fn backward) {
  for (const bool log : {false, true}) {
    const std::string type = log ? "log_softmax" : "softmax";
    r.add(type, kind, [forward, log](kernel_context& ctx) { forward(ctx, log); });
    r.add(type + "_grad", kind, [backward, log](kernel_context& ctx) { backward(ctx, log); });
  }
}

} // namespace pe
