#include "kernels/math_ops.hpp"

#include <string>

#include "kernels/cpu/math_kernels.hpp"

namespace pe {

std::vector<const tensor*> sum_inputs(const kernel_context& ctx, input_fn fp32_input) {
  const std::size_t count = ctx.input_count("X");
  if (count == 0) ctx.fail("X binds no variables");
  std::vector<const tensor*> inputs;
  for (std::size_t i = 0; i < count; ++i) {
    inputs.push_back(&fp32_input(ctx, "X", i));
    expect_dims(ctx, "X[" + std::to_string(i) + "]", *inputs.back(), inputs[0]->shape());
  }
  return inputs;
}

std::optional<std::size_t> sum_base(const tensor& out, const std::vector<const tensor*>& inputs) {
  std::size_t base = inputs.size();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (&out == inputs[k] && base == inputs.size())
      base = k;
    else if (aliases(out, *inputs[k]))
      return std::nullopt;
  }
  return base;
}

scale_params scale_params_of(const kernel_context& ctx) {
  const float s = ctx.attrs().get<float>("scale");
  const float bias = ctx.attrs().get<float>("bias");
  return {s, ctx.attrs().get<bool>("bias_after_scale") ? bias : s * bias};
}

} // namespace pe
