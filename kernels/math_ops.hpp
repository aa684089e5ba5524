#pragma once
// sum and scale on every kind of place: shared here are their fronts (sum's inputs checked
// and where it may accumulate, scale's attributes). A place's kernels bring the arithmetic
// (kernels/cpu/math_kernels.cpp and activation_kernels.cpp: loops; kernels/cuda/
// activation_kernels.cu: element maps).
#include <cstddef>
#include <optional>
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// sum's X inputs, read with `fp32_input`, after checking X binds some and each has X[0]'s
/// dims.
std::vector<const tensor*> sum_inputs(const kernel_context& ctx, input_fn fp32_input);

/// Where sum may accumulate into `out` over `inputs`: the index of the input `out` is (so its
/// values are already in place; inputs.size() when it is none, X[0] to be copied in first),
/// or nullopt when `out` overlaps an input otherwise (bound twice, or sharing a buffer), so
/// that writing it would change inputs not yet added.
std::optional<std::size_t> sum_base(const tensor& out, const std::vector<const tensor*>& inputs);

/// Out = X[0] + X[1] + ..., in place when Out is one of the inputs (how Paddle accumulates
/// gradients). `accumulate(into, inputs, start)` sizes `into` as X[0] and adds the inputs to
/// it, input `start` being there already (inputs.size(): none, X[0] copied in first).
template <class Accumulate>
void sum_op(kernel_context& ctx, input_fn fp32_input, Accumulate accumulate) {
  const std::vector<const tensor*> inputs = sum_inputs(ctx, fp32_input);
  tensor& out = ctx.output("Out");
  if (const std::optional<std::size_t> base = sum_base(out, inputs)) return accumulate(out, inputs, *base);
  tensor fresh;
  accumulate(fresh, inputs, inputs.size());
  out = std::move(fresh);
}

/// scale's Out = s * X + b: s the scale attribute, b the bias, times s unless
/// bias_after_scale.
struct scale_params {
  float s, b;
};
scale_params scale_params_of(const kernel_context& ctx);

} // namespace pe
