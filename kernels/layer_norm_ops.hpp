#pragma once
// layer_norm and layer_norm_grad (Paddle 2.6) on every kind of place. X is cut at
// begin_norm_axis into a [left, N] matrix (left the product of the dims before the axis, N of
// those from it on), and each of its rows is normalised with the row's mean and biased
// variance (divided by N), then scaled by Scale and shifted by Bias (each of N elements, each
// optional):
//   Y = (X - Mean) / sqrt(Variance + epsilon) * Scale + Bias,   Mean and Variance [left].
// Shared here: the shape rule, applied by shape inference (graph/ops/norm_ops.cpp, where dims
// may be -1 = unknown) and by the kernels, so a program is checked at build time by the rule
// its kernels apply; and each op's front, the inputs read and checked and the attributes read,
// with the failure messages. A place's kernels bring the arithmetic
// (kernels/cpu/layer_norm_kernels.cpp: loops per row; kernels/cuda/layer_norm_kernels.cu: a
// block per row).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/tensor.hpp"
#include "kernels/kernel.hpp"
#include "kernels/math_shapes.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// X seen as [left, n]: `left` rows of `n` normalised elements; -1 where unknown. `stats`:
/// the dims of Mean and Variance, X's dims before begin_norm_axis as Paddle 2.6's
/// LayerNormInferMeta declares them ([left] itself for a 2-D X; [batch, words] for the
/// [batch, words, hidden] of a transformer).
struct ln_dims {
  std::int64_t left, n;
  shape_t stats;
};

/// X's dims cut at begin_norm_axis, which must lie in [1, rank) as in Paddle (its attribute
/// checker wants it > 0, its shape inference < rank).
template <failure_sink C>
ln_dims layer_norm_dims(const C& ctx, const shape_t& x, std::int32_t begin_norm_axis) {
  const auto rank = static_cast<std::int64_t>(x.size());
  if (begin_norm_axis < 1 || begin_norm_axis >= rank)
    ctx.fail("begin_norm_axis " + std::to_string(begin_norm_axis) + " is out of range for X " +
             to_string(x) + " of rank " + std::to_string(rank) + " (valid: [1, " +
             std::to_string(rank) + "))");
  const auto axis = static_cast<std::size_t>(begin_norm_axis);
  return {known_product(x, 0, axis), known_product(x, axis, x.size()),
          shape_t(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis))};
}

/// Fails unless `dims` (those of input `slot`, Scale or Bias) hold N = `n` elements; passes
/// where either count is unknown.
template <failure_sink C>
void expect_layer_norm_param(const C& ctx, const std::string& slot, const shape_t& dims,
                             std::int64_t n) {
  if (!dim_matches(known_product(dims, 0, dims.size()), n))
    ctx.fail(slot + " must have N = " + std::to_string(n) +
             " elements (the product of X's dims from begin_norm_axis on), got " +
             to_string(dims));
}

/// layer_norm's inputs, read with `fp32_input` (which checks FP32): X, and Scale and Bias
/// when bound (null otherwise), checked to hold N elements; the attributes epsilon and
/// begin_norm_axis.
struct layer_norm_front {
  const tensor& x;
  ln_dims d;
  const tensor* scale;
  const tensor* bias;
  float epsilon;
};
layer_norm_front layer_norm_front_of(const kernel_context& ctx, input_fn fp32_input);

/// layer_norm_grad's inputs, read with `fp32_input`: X, Y@GRAD (checked to have X's dims),
/// Mean and Variance (the forward's, checked to hold `left` elements: [left] or d.stats), and Scale and Bias when bound
/// (null otherwise; Bias is read for its dims only). The dims of Scale@GRAD and Bias@GRAD are
/// those of Scale and Bias, or [N] where the input is not bound.
struct layer_norm_grad_front {
  const tensor& x;
  const tensor& dy;
  ln_dims d;
  const tensor* scale;
  const tensor& mean;
  const tensor& variance;
  shape_t scale_grad_dims, bias_grad_dims;
  float epsilon;
};
layer_norm_grad_front layer_norm_grad_front_of(const kernel_context& ctx, input_fn fp32_input);

} // namespace pe
