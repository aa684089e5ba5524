#pragma once
// The reductions over axes, mean (averaging every element), reduce_mean (averaging over
// chosen axes) and reduce_sum (summing over them), and their grads on every kind of place:
// shared here is the front, the axes reduced, Out's dims and the scale of the sum from the
// attributes, and the registration under the op types. A place's kernels bring the sums
// (kernels/cpu/reduce_kernels.cpp: broadcast_layout; kernels/cuda/reduce_kernels.cu: block
// reductions over reduce_geometry).
#include <cstdint>
#include <vector>

#include "kernels/kernel.hpp"

namespace pe {

/// The axes of X an op reduces (true: reduced), Out's dims, and whether Out is the average
/// of the reduced elements (mean, reduce_mean) rather than their sum (reduce_sum).
struct reduce_front {
  std::vector<bool> reduced;
  shape_t out_dims;
  bool averages = true;
};

/// How an op reduces X: mean over every axis into [1]; reduce_mean and reduce_sum over their
/// dim attribute's axes (every axis under reduce_all, checked), kept as 1 under keep_dim;
/// reduce_sum also checks its in_dtype and out_dtype are FP32 (or -1).
using reduce_rule = reduce_front (*)(const kernel_context& ctx, const tensor& x);

/// 1 / the number of X elements (`full`) averaged into each of the `small` output elements
/// (0 when there are none).
float inverse_count(std::int64_t full, std::int64_t small);

/// The factor the sum of each output element's `full` / `small` X elements is scaled by:
/// inverse_count for the averages, 1 for the sums.
float reduce_scale(const reduce_front& f, std::int64_t full, std::int64_t small);

/// Registers mean, reduce_mean and reduce_sum (`reduce`: Out = the sum of X over the rule's
/// axes, times reduce_scale) and their grads (`reduce_grad`: X@GRAD = Out@GRAD * reduce_scale
/// spread back over X, after checking Out@GRAD has Out's dims) for places of kind `kind`.
void register_reduce_ops(kernel_registry& r, place::kind kind, void (*reduce)(kernel_context&, reduce_rule),
                         void (*reduce_grad)(kernel_context&, reduce_rule));

} // namespace pe
