#pragma once
// dropout and dropout_grad on every kind of place: shared here is the front (the attributes
// and the Seed and Mask inputs read and checked, with the failure messages) and the mask a
// training step draws, on the host, so that a step drops the same elements on gpu:i as on
// cpu:i. A place's kernels apply the mask (kernels/cpu/dropout_kernels.cpp;
// kernels/cuda/init_dropout_kernels.cu, which copies it to the device first).
//
// The mask comes from a std::mt19937_64 seeded through std::seed_seq (both fully specified by
// the C++ standard, so a seed gives the same mask on every run and machine) with:
//   - the base seed: the Seed input when bound, else the `seed` attribute;
//   - the place's index, so data-parallel replicas drop different elements;
//   - the step: kernel_context::next_call(), so every step draws a new mask, except with
//     fix_seed or a Seed input, where Paddle reuses its seed every step (a Seed input comes
//     from a seed op, which varies it itself).
// Paddle ignores `seed` unless fix_seed; here a nonzero seed without fix_seed still makes the
// run reproducible, while a zero seed without fix_seed or Seed draws from std::random_device
// every step, as Paddle's unseeded generator would.
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "kernels/kernel.hpp"

namespace pe {

/// What every dropout kernel reads from the attributes: dropout_prob (checked to lie in
/// [0, 1]), dropout_implementation (downgrade_in_infer or upscale_in_train) and is_test.
struct dropout_attrs {
  float prob;
  bool upscale_in_train;
  bool is_test;

  /// The factor of inference: 1 under upscale_in_train, else 1 - prob.
  float test_scale() const { return upscale_in_train ? 1.f : 1.f - prob; }
};
dropout_attrs dropout_attrs_of(const kernel_context& ctx);

/// The Seed input when bound, checked to be one INT32 element; else null.
const tensor* dropout_seed_input(const kernel_context& ctx);

/// Fails unless `mask` (dropout_grad's Mask) is UINT8 with Out@GRAD's (`out_grad`) dims.
void expect_dropout_mask(const kernel_context& ctx, const tensor& mask, const tensor& out_grad);

/// The generator of one dropout call (see the file comment): `step` is the kernel context's
/// next_call(), `seed_input` the Seed input's value when bound.
std::mt19937_64 dropout_generator(std::uint64_t step, int place_index, std::int32_t seed_attr, bool fix_seed,
                                  std::optional<std::int32_t> seed_input);

/// The generator of the kernel's call with Seed's value `seed_input`: dropout_generator with
/// ctx.next_call(), the place's index and the seed and fix_seed attributes.
std::mt19937_64 dropout_generator(kernel_context& ctx, std::optional<std::int32_t> seed_input);

/// n mask bytes, 1 = keep: an element is kept when the generator's top 53 bits, read as a
/// fraction of 2^53, are >= prob (so prob 1 drops all, prob 0 none).
std::vector<std::uint8_t> draw_dropout_mask(std::mt19937_64& g, float prob, std::int64_t n);

} // namespace pe
