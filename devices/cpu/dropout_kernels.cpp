// CPU kernels of dropout and dropout_grad.
//
// Which elements a training step drops comes from a std::mt19937_64 seeded through
// std::seed_seq (both fully specified by the C++ standard, so a seed gives the same mask on
// every run and machine) with:
//   - the base seed: the Seed input when bound, else the `seed` attribute;
//   - the place's index, so data-parallel replicas drop different elements;
//   - the step: kernel_context::next_call(), so every step draws a new mask, except with
//     fix_seed or a Seed input, where Paddle reuses its seed every step (a Seed input comes
//     from a seed op, which varies it itself).
// Paddle ignores `seed` unless fix_seed; here a nonzero seed without fix_seed still makes the
// run reproducible, while a zero seed without fix_seed or Seed draws from std::random_device
// every step, as Paddle's unseeded generator would.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "devices/cpu/cpu_kernels.hpp"
#include "devices/kernel.hpp"

namespace pe {

namespace {

/// What every dropout kernel reads from the attributes.
struct dropout_attrs {
  float prob;
  bool upscale_in_train;
  bool is_test;
};

dropout_attrs attrs_of(const kernel_context& ctx) {
  const float p = ctx.attrs().get<float>("dropout_prob");
  if (!(p >= 0.f && p <= 1.f))
    ctx.fail("dropout_prob must be in [0, 1], got " + std::to_string(p));
  const auto& mode = ctx.attrs().get<std::string>("dropout_implementation");
  if (mode != "downgrade_in_infer" && mode != "upscale_in_train")
    ctx.fail("dropout_implementation must be downgrade_in_infer or upscale_in_train, got '" +
             mode + "'");
  return {p, mode == "upscale_in_train", ctx.attrs().get<bool>("is_test")};
}

const tensor& fp32_input(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = ctx.input(slot);
  if (t.type() != dtype::fp32)
    ctx.fail(std::string(slot) + " must be FP32, got " + to_string(t.type()));
  return t;
}

/// The generator of this call (see the file comment).
std::mt19937_64 mask_generator(kernel_context& ctx) {
  const std::uint64_t step = ctx.next_call();
  std::uint64_t seed = static_cast<std::uint32_t>(ctx.attrs().get<std::int32_t>("seed"));
  bool fixed = ctx.attrs().get<bool>("fix_seed");
  if (ctx.has_input("Seed")) {
    const tensor& t = ctx.input("Seed");
    if (t.type() != dtype::int32 || t.numel() != 1)
      ctx.fail("Seed must be one INT32 element, got " + to_string(t.type()) + " " +
               to_string(t.shape()));
    seed = static_cast<std::uint32_t>(t.data<std::int32_t>()[0]);
    fixed = true;
  }
  if (seed == 0 && !fixed) {
    std::random_device entropy;
    return std::mt19937_64((std::uint64_t{entropy()} << 32) | entropy());
  }
  const std::uint64_t draw = fixed ? 0 : step;
  std::seed_seq seq{static_cast<std::uint32_t>(seed),
                    static_cast<std::uint32_t>(ctx.where().index),
                    static_cast<std::uint32_t>(draw), static_cast<std::uint32_t>(draw >> 32)};
  return std::mt19937_64(seq);
}

/// Training: an element is kept when the generator's top 53 bits, read as a fraction of
/// 2^53, are >= dropout_prob (so prob 1 drops all, prob 0 none). Kept elements are divided by
/// 1 - prob under upscale_in_train. Inference: Out = X (upscale_in_train) or X * (1 - prob);
/// Mask, when bound, is all ones there, since Paddle leaves it unwritten but a grad op or
/// fetch may still read it.
void dropout(kernel_context& ctx) {
  const dropout_attrs a = attrs_of(ctx);
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
    const float scale = a.upscale_in_train ? 1.f : 1.f - a.prob;
    std::transform(in.begin(), in.end(), o.begin(), [&](float v) { return v * scale; });
    if (mask != nullptr) std::fill_n(mask, in.size(), std::uint8_t{1});
    return;
  }
  auto g = mask_generator(ctx);
  const auto threshold = static_cast<std::uint64_t>(std::ldexp(static_cast<double>(a.prob), 53));
  const float keep_prob = 1.f - a.prob;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool keep = (g() >> 11) >= threshold;
    if (mask != nullptr) mask[i] = keep ? 1 : 0;
    o[i] = !keep ? 0.f : a.upscale_in_train ? in[i] / keep_prob : in[i];
  }
}

/// X@GRAD = Out@GRAD * Mask (divided by 1 - prob under upscale_in_train) in training; at
/// inference Out@GRAD (upscale_in_train) or Out@GRAD * (1 - prob), as Paddle's grad kernel.
void dropout_grad(kernel_context& ctx) {
  const dropout_attrs a = attrs_of(ctx);
  const tensor& out_grad = fp32_input(ctx, "Out@GRAD");
  const std::span<const float> dout = out_grad.values<float>();
  tensor& x_grad = ctx.output("X@GRAD");
  x_grad.resize(dtype::fp32, out_grad.shape());
  const std::span<float> dx = x_grad.values<float>();
  if (a.is_test) {
    const float scale = a.upscale_in_train ? 1.f : 1.f - a.prob;
    std::transform(dout.begin(), dout.end(), dx.begin(), [&](float v) { return v * scale; });
    return;
  }
  const tensor& mask = ctx.input("Mask");
  if (mask.type() != dtype::uint8 || mask.shape() != out_grad.shape())
    ctx.fail("Mask is " + to_string(mask.type()) + " " + to_string(mask.shape()) +
             " but must be UINT8 " + to_string(out_grad.shape()) + " like Out@GRAD");
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
