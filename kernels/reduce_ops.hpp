#pragma once
// The averaging reductions, mean (over every element) and reduce_mean (over chosen axes), and
// their grads on every kind of place: shared here is the front, the axes averaged over and
// Out's dims from the attributes, and the registration under the op types. A place's kernels
// bring the sums (kernels/cpu/reduce_kernels.cpp: broadcast_layout;
// kernels/cuda/reduce_kernels.cu: block reductions over reduce_geometry).
#include <cstdint>
#include <vector>

#include "kernels/kernel.hpp"

namespace pe {

/// The axes of X an op averages over (true: reduced) and Out's dims.
struct reduce_front {
  std::vector<bool> reduced;
  shape_t out_dims;
};

/// How an op reduces X: mean over every axis into [1]; reduce_mean over its dim attribute's
/// axes (every axis under reduce_all, checked), kept as 1 under keep_dim.
using reduce_rule = reduce_front (*)(const kernel_context& ctx, const tensor& x);

/// 1 / the number of X elements (`full`) averaged into each of the `small` output elements
/// (0 when there are none).
float inverse_count(std::int64_t full, std::int64_t small);

/// Registers mean and reduce_mean (`average`: Out = X averaged by the rule) and their grads
/// (`average_grad`: X@GRAD = Out@GRAD / count spread back over X, after checking Out@GRAD has
/// Out's dims) for places of kind `kind`.
void register_reduce_ops(kernel_registry& r, place::kind kind, void (*average)(kernel_context&, reduce_rule),
                         void (*average_grad)(kernel_context&, reduce_rule));

} // namespace pe
