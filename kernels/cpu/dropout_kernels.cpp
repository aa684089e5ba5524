// CPU kernels of dropout and dropout_grad.
//
// The attributes, the Seed and Mask inputs and the mask a training step draws come from
// kernels/dropout_ops.hpp (shared with the CUDA kernel, so a step drops the same elements on
// cpu:i as on gpu:i), which documents the seeding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/dropout_ops.hpp"
#include "kernels/kernel.hpp"

namespace pe {

namespace {

const tensor& fp32_input(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = ctx.input(slot);
  if (t.type() != dtype::fp32)
    ctx.fail(std::string(slot) + " must be FP32, got " + to_string(t.type()));
  return t;
}

/// Training: the elements draw_dropout_mask keeps; kept elements are divided by 1 - prob
/// under upscale_in_train. Inference: Out = X * test_scale(); Mask, when bound, is all ones
/// there, since Paddle leaves it unwritten but a grad op or fetch may still read it.
void dropout(kernel_context& ctx) {
  const dropout_attrs a = dropout_attrs_of(ctx);
  const tensor& x = fp32_input(ctx, "X");
  const std::span<const float> in = x.values<float>();
  tensor& out = ctx.output("Out");
  out.resize(dtype::fp32, x.shape());
  const std::span<float> o = out.values<float>();
  std::uint8_t* mask = nullptr;
  if (ctx.has_output("Mask")) {
    tensor& m = ctx.output("Mask");
    m.resize(dtype::uint8, x.shape());
    mask = m.data<std::uint8_t>();
  }

  if (a.is_test) {
    const float scale = a.test_scale();
    std::transform(in.begin(), in.end(), o.begin(), [&](float v) { return v * scale; });
    if (mask != nullptr) std::fill_n(mask, in.size(), std::uint8_t{1});
    return;
  }
  const tensor* seed = dropout_seed_input(ctx);
  auto g = dropout_generator(ctx, seed != nullptr ? std::optional(seed->data<std::int32_t>()[0]) : std::nullopt);
  const std::vector<std::uint8_t> keep = draw_dropout_mask(g, a.prob, x.numel());
  const float keep_prob = 1.f - a.prob;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (mask != nullptr) mask[i] = keep[i];
    o[i] = keep[i] == 0 ? 0.f : a.upscale_in_train ? in[i] / keep_prob : in[i];
  }
}

/// X@GRAD = Out@GRAD * Mask (divided by 1 - prob under upscale_in_train) in training; at
/// inference Out@GRAD * test_scale(), as Paddle's grad kernel.
void dropout_grad(kernel_context& ctx) {
  const dropout_attrs a = dropout_attrs_of(ctx);
  const tensor& out_grad = fp32_input(ctx, "Out@GRAD");
  const std::span<const float> dout = out_grad.values<float>();
  tensor& x_grad = ctx.output("X@GRAD");
  x_grad.resize(dtype::fp32, out_grad.shape());
  const std::span<float> dx = x_grad.values<float>();
  if (a.is_test) {
    const float scale = a.test_scale();
    std::transform(dout.begin(), dout.end(), dx.begin(), [&](float v) { return v * scale; });
    return;
  }
  const tensor& mask = ctx.input("Mask");
  expect_dropout_mask(ctx, mask, out_grad);
  const std::uint8_t* m = mask.data<std::uint8_t>();
  const float keep_prob = 1.f - a.prob;
  for (std::size_t i = 0; i < dout.size(); ++i)
    dx[i] = m[i] == 0 ? 0.f : a.upscale_in_train ? dout[i] / keep_prob : dout[i];
}

} // namespace

void register_dropout_kernels(kernel_registry& r) {
  r.add("dropout", place::kind::cpu, dropout);
  r.add("dropout_grad", place::kind::cpu, dropout_grad);
}

} // namespace pe
