#include "kernels/layer_norm_ops.hpp"

#include <string>
#include <utility>

#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

/// X's [left, N] view by the begin_norm_axis attribute.
ln_dims ln_dims_of(const kernel_context& ctx, const tensor& x) {
  return layer_norm_dims(ctx, x.shape(), ctx.attrs().get<std::int32_t>("begin_norm_axis"));
}

/// Input `slot` (Scale or Bias) read with `fp32_input` and checked to hold N elements; null
/// when the op binds none.
const tensor* param_input(const kernel_context& ctx, input_fn fp32_input, const char* slot,
                          const ln_dims& d) {
  if (!ctx.has_input(slot)) return nullptr;
  const tensor& t = fp32_input(ctx, slot, 0);
  expect_layer_norm_param(ctx, slot, t.shape(), d.n);
  return &t;
}

} // namespace

layer_norm_front layer_norm_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const ln_dims d = ln_dims_of(ctx, x);
  const tensor* scale = param_input(ctx, fp32_input, "Scale", d);
  const tensor* bias = param_input(ctx, fp32_input, "Bias", d);
  return {x, d, scale, bias, ctx.attrs().get<float>("epsilon")};
}

layer_norm_grad_front layer_norm_grad_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const tensor& dy = fp32_input(ctx, "Y@GRAD", 0);
  expect_dims(ctx, "Y@GRAD", dy, x.shape());
  const ln_dims d = ln_dims_of(ctx, x);
  const tensor* scale = param_input(ctx, fp32_input, "Scale", d);
  const tensor* bias = param_input(ctx, fp32_input, "Bias", d);
  const tensor& mean = fp32_input(ctx, "Mean", 0);
  const tensor& variance = fp32_input(ctx, "Variance", 0);
  for (const auto& [slot, t] : {std::pair{"Mean", &mean}, std::pair{"Variance", &variance}})
    if (t->numel() != d.left)
      ctx.fail(std::string(slot) + " must hold left = " + std::to_string(d.left) +
               " elements (the product of X's dims before begin_norm_axis), got " + to_string(t->shape()));
  return {x,
          dy,
          d,
          scale,
          mean,
          variance,
          scale != nullptr ? scale->shape() : shape_t{d.n},
          bias != nullptr ? bias->shape() : shape_t{d.n},
          ctx.attrs().get<float>("epsilon")};
}

} // namespace pe
