#include "kernels/batch_norm_ops.hpp"

#include <string>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

bn_dims bn_dims_of(const kernel_context& ctx, const tensor& x) {
  expect_nchw(ctx, "data_layout", ctx.attrs().get<std::string>("data_layout"));
  if (x.rank() < 2 || x.rank() > 5) ctx.fail("X must have rank 2 to 5 ([N, C, ...]), got " + to_string(x.shape()));
  bn_dims d{x.dim(0), x.dim(1), 1};
  for (std::size_t i = 2; i < x.rank(); ++i) d.spatial *= x.dim(i);
  return d;
}

namespace {

/// Input `slot`, read with `fp32_input` and checked to be [C].
const tensor& channel_input(const kernel_context& ctx, input_fn fp32_input, const char* slot, const bn_dims& d) {
  const tensor& t = fp32_input(ctx, slot, 0);
  expect_dims(ctx, slot, t, {d.c});
  return t;
}

} // namespace

batch_norm_front batch_norm_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const attribute_map& a = ctx.attrs();
  if (ctx.has_input("MomentumTensor"))
    ctx.fail("the MomentumTensor input is not supported; give the momentum attribute");
  const bn_dims d = bn_dims_of(ctx, x);
  const tensor& scale = channel_input(ctx, fp32_input, "Scale", d);
  const tensor& bias = channel_input(ctx, fp32_input, "Bias", d);
  const tensor& mean = channel_input(ctx, fp32_input, "Mean", d);
  const tensor& variance = channel_input(ctx, fp32_input, "Variance", d);
  const auto momentum = a.get<float>("momentum");
  const auto epsilon = a.get<float>("epsilon");
  const bool global = (a.get<bool>("is_test") && !a.get<bool>("trainable_statistics")) || a.get<bool>("use_global_stats");
  return {x, d, scale, bias, mean, variance, momentum, epsilon, global};
}

batch_norm_grad_front batch_norm_grad_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const tensor& dy = fp32_input(ctx, "Y@GRAD", 0);
  expect_dims(ctx, "Y@GRAD", dy, x.shape());
  const attribute_map& a = ctx.attrs();
  const bn_dims d = bn_dims_of(ctx, x);
  const tensor& scale = channel_input(ctx, fp32_input, "Scale", d);
  const tensor& bias = channel_input(ctx, fp32_input, "Bias", d);
  const bool global = a.get<bool>("is_test") || a.get<bool>("use_global_stats");
  const tensor& mean = channel_input(ctx, fp32_input, global ? "MeanOut" : "SavedMean", d);
  const tensor& variance = channel_input(ctx, fp32_input, global ? "VarianceOut" : "SavedVariance", d);
  return {x, dy, d, scale, bias, global, mean, variance, a.get<float>("epsilon")};
}

sync_bn_stats_front sync_bn_stats_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const bn_dims d = bn_dims_of(ctx, x);
  return {x, d, channel_input(ctx, fp32_input, "Mean", d)};
}

sync_bn_apply_front sync_bn_apply_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const batch_norm_front bn = batch_norm_front_of(ctx, fp32_input);
  if (bn.global) ctx.fail("is_test or use_global_stats is set: a lowered sync_batch_norm normalises with the batch's statistics");
  return {bn, sync_bn_stats_input(ctx, fp32_input, bn.d)};
}

sync_bn_grad_front sync_bn_grad_front_of(const kernel_context& ctx, input_fn fp32_input) {
  const tensor& x = fp32_input(ctx, "X", 0);
  const tensor& dy = fp32_input(ctx, "Y@GRAD", 0);
  expect_dims(ctx, "Y@GRAD", dy, x.shape());
  const bn_dims d = bn_dims_of(ctx, x);
  return {x, dy, d, channel_input(ctx, fp32_input, "SavedMean", d),
          channel_input(ctx, fp32_input, "SavedVariance", d)};
}

const tensor& sync_bn_grad_scale(const kernel_context& ctx, input_fn fp32_input, const bn_dims& d) {
  return channel_input(ctx, fp32_input, "Scale", d);
}

const tensor& sync_bn_stats_input(const kernel_context& ctx, input_fn fp32_input, const bn_dims& d) {
  const tensor& t = fp32_input(ctx, "Stats", 0);
  expect_dims(ctx, "Stats", t, {2 * d.c + 1});
  return t;
}

} // namespace pe
