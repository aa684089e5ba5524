#pragma once
// batch_norm and batch_norm_grad on every kind of place: shared here is each op's front, the
// inputs read and checked against X (NCHW, rank 2 to 5, every per-channel input FP32 [C]) and
// the attributes read, with the failure messages. A place's kernels bring the statistics and
// the normalisation (kernels/cpu/dnnl_norm_kernels.cpp: channel by channel, norm_planes.hpp, or oneDNN;
// kernels/cuda/batch_norm_kernels.cu: batch_norm_plans.hpp's reductions and maps).
#include <cstdint>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// X seen as [N, C, spatial] (NCHW; rank 2 being [N, C]).
struct bn_dims {
  std::int64_t n, c, spatial;
};

/// X's view, after checking data_layout is NCHW and X has rank 2 to 5.
bn_dims bn_dims_of(const kernel_context& ctx, const tensor& x);

/// batch_norm's inputs, read with `fp32_input` (which checks FP32) in the order X, Scale,
/// Bias, Mean, Variance (the per-channel ones checked to be [C]), and attributes; the
/// MomentumTensor input is refused. `global`: normalise with Mean and Variance (is_test
/// without trainable_statistics, or use_global_stats) and leave them unchanged.
struct batch_norm_front {
  const tensor& x;
  bn_dims d;
  const tensor& scale;
  const tensor& bias;
  const tensor& mean;
  const tensor& variance;
  float momentum, epsilon;
  bool global;
};
batch_norm_front batch_norm_front_of(const kernel_context& ctx, input_fn fp32_input);

/// batch_norm_grad's inputs, read with `fp32_input`: X, Y@GRAD (checked to have X's dims),
/// Scale and Bias, and the statistics the forward normalised with: under `global` (is_test or
/// use_global_stats) MeanOut and VarianceOut, the running ones; in training SavedMean and
/// SavedVariance, the inverse std (`inv_std` says which `variance` holds).
struct batch_norm_grad_front {
  const tensor& x;
  const tensor& dy;
  bn_dims d;
  const tensor& scale;
  const tensor& bias;
  bool global;
  const tensor& mean;
  const tensor& variance; ///< VarianceOut under global, else SavedVariance (the inverse std)
  float epsilon;
};
batch_norm_grad_front batch_norm_grad_front_of(const kernel_context& ctx, input_fn fp32_input);

// The ops a synchronised batch_norm is lowered into (graph/sync_batch_norm.hpp). Their
// statistics are FP32 [2C + 1]: two per-channel sums, then the element count per channel.

/// sync_batch_norm_stats: X, and Mean (the running mean, [C]), the sums' shift.
struct sync_bn_stats_front {
  const tensor& x;
  bn_dims d;
  const tensor& shift;
};
sync_bn_stats_front sync_bn_stats_front_of(const kernel_context& ctx, input_fn fp32_input);

/// sync_batch_norm_apply: batch_norm's front, and the summed Stats.
struct sync_bn_apply_front {
  batch_norm_front bn;
  const tensor& stats;
};
sync_bn_apply_front sync_bn_apply_front_of(const kernel_context& ctx, input_fn fp32_input);

/// sync_batch_norm_grad_stats and _grad_apply: X, Y@GRAD (X's dims), SavedMean and
/// SavedVariance (the inverse std) [C].
struct sync_bn_grad_front {
  const tensor& x;
  const tensor& dy;
  bn_dims d;
  const tensor& mean;
  const tensor& inv_std;
};
sync_bn_grad_front sync_bn_grad_front_of(const kernel_context& ctx, input_fn fp32_input);

/// sync_batch_norm_grad_apply's Scale, checked to be [C].
const tensor& sync_bn_grad_scale(const kernel_context& ctx, input_fn fp32_input, const bn_dims& d);

/// Input Stats, checked to be [2C + 1].
const tensor& sync_bn_stats_input(const kernel_context& ctx, input_fn fp32_input, const bn_dims& d);

} // namespace pe
