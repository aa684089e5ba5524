// CUDA kernels of batch_norm and batch_norm_grad (NCHW, X of rank 2 to 5 viewed as
// [N, C, spatial]) with the CPU kernel's statistics conventions (batch_norm_plans.hpp): the
// channel statistics are block reductions, split over several blocks per channel when the
// channels are few and long (reduce_blocks_split), the normalisation and its grad element maps.
// Inputs and attributes are read and checked by kernels/batch_norm_ops.hpp's fronts, shared
// with the CPU kernels.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/batch_norm_plans.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/batch_norm_ops.hpp"

namespace pe::cuda {

namespace {

/// X's channel geometry ([N, C, spatial], C kept) and its channel count.
struct norm_view {
  reduce_geometry g;
  std::int64_t c, per_channel;
};

norm_view view_of(const tensor& x) {
  std::vector<bool> reduced(x.rank(), true);
  reduced[1] = false;
  const reduce_geometry g = reduce_geometry::make(x.shape(), reduced);
  return {g, x.dim(1), g.reduce_count()};
}

/// Output `slot` resized to [C], or null when not bound.
float* channel_output(kernel_context& ctx, const char* slot, const norm_view& v) {
  if (!ctx.has_output(slot)) return nullptr;
  tensor& t = ctx.output(slot);
  resize_output(ctx, t, dtype::fp32, {v.c});
  return t.data<float>();
}

void batch_norm_forward(kernel_context& ctx) {
  const batch_norm_front f = batch_norm_front_of(ctx, gpu_fp32_input);
  const tensor &x = f.x, &mean = f.mean, &variance = f.variance;
  const bool global = f.global;
  const norm_view v = view_of(x);
  if (ctx.has_output("ReserveSpace")) resize_output(ctx, ctx.output("ReserveSpace"), dtype::fp32, {0});

  // Scratch copies of the running statistics: MeanOut and VarianceOut may be Mean and
  // Variance, which the stats map reads per channel before writing.
  tensor used_mean = global ? mean : scratch(ctx, dtype::fp32, {v.c});
  tensor used_variance = global ? variance : scratch(ctx, dtype::fp32, {v.c});
  tensor& y = ctx.output("Y");
  resize_output(ctx, y, dtype::fp32, x.shape()); // in place on X is fine: element-wise

  if (!global && v.per_channel <= 1) {
    // At most one element per channel (none: a place an uneven split left without rows): Y =
    // X, saved statistics zero, running ones unchanged, as on the CPU.
    copy_on_device(ctx, y.raw(), x.raw(), x.bytes());
    float* saved_mean = channel_output(ctx, "SavedMean", v);
    float* saved_variance = channel_output(ctx, "SavedVariance", v);
    if (saved_mean != nullptr) for_each(ctx, v.c, fill_map<float>{saved_mean, 0.f});
    if (saved_variance != nullptr) for_each(ctx, v.c, fill_map<float>{saved_variance, 0.f});
    for (const auto& [out_slot, in] : {std::pair<const char*, const tensor*>{"MeanOut", &mean},
                                       {"VarianceOut", &variance}})
      if (ctx.has_output(out_slot) && &ctx.output(out_slot) != in) {
        float* to = channel_output(ctx, out_slot, v);
        copy_on_device(ctx, to, in->raw(), in->bytes());
      }
    return;
  }
  if (!global) {
    reduce_blocks_split(ctx, v.c, v.per_channel, bn_mean_plan{x.data<float>(), used_mean.data<float>(), v.g});
    reduce_blocks_split(ctx, v.c, v.per_channel,
                        bn_variance_plan{x.data<float>(), used_mean.data<float>(),
                                         used_variance.data<float>(), v.g});
  }
  // The statistics first: Y may be written over X, which the sums read.
  float* mean_out = channel_output(ctx, "MeanOut", v);
  float* variance_out = channel_output(ctx, "VarianceOut", v);
  float* saved_mean = channel_output(ctx, "SavedMean", v);
  float* saved_variance = channel_output(ctx, "SavedVariance", v);
  // Under global statistics used_mean is Mean itself, and MeanOut may be it too: the map
  // reads each channel before writing it.
  for_each(ctx, v.c,
           bn_stats_map{mean.data<float>(), variance.data<float>(), used_mean.data<float>(),
                        used_variance.data<float>(), mean_out, variance_out, saved_mean,
                        saved_variance, f.momentum, f.epsilon, global});
  for_each(ctx, x.numel(),
           bn_forward_map{x.data<float>(), y.data<float>(), f.scale.data<float>(),
                          f.bias.data<float>(), used_mean.data<float>(),
                          used_variance.data<float>(), f.epsilon, v.g});
}

void batch_norm_backward(kernel_context& ctx) {
  const batch_norm_grad_front f = batch_norm_grad_front_of(ctx, gpu_fp32_input);
  const tensor &x = f.x, &dy = f.dy, &scale = f.scale, &mean = f.mean;
  const bool global = f.global;
  const norm_view v = view_of(x);
  tensor inv_std;
  if (global) {
    inv_std = scratch(ctx, dtype::fp32, {v.c});
    for_each(ctx, v.c, bn_inverse_std_map{f.variance.data<float>(), inv_std.data<float>(), f.epsilon});
  } else {
    inv_std = f.variance;
  }
  // Built aside and bound at the end: an output may be an input still to be read.
  tensor dscale = scratch(ctx, dtype::fp32, {v.c}), dbias = scratch(ctx, dtype::fp32, {v.c});
  tensor dx;
  if (!global && v.per_channel <= 1) {
    for_each(ctx, v.c, fill_map<float>{dscale.data<float>(), 0.f});
    for_each(ctx, v.c, fill_map<float>{dbias.data<float>(), 0.f});
    if (ctx.has_output("X@GRAD")) {
      dx = scratch(ctx, dtype::fp32, x.shape());
      copy_on_device(ctx, dx.raw(), dy.raw(), dy.bytes());
    }
  } else {
    reduce_blocks_split(ctx, v.c, v.per_channel,
                        bn_grad_sum_plan{x.data<float>(), dy.data<float>(), mean.data<float>(),
                                         inv_std.data<float>(), dbias.data<float>(), false, v.g});
    reduce_blocks_split(ctx, v.c, v.per_channel,
                        bn_grad_sum_plan{x.data<float>(), dy.data<float>(), mean.data<float>(),
                                         inv_std.data<float>(), dscale.data<float>(), true, v.g});
    if (ctx.has_output("X@GRAD")) {
      dx = scratch(ctx, dtype::fp32, x.shape());
      for_each(ctx, x.numel(),
               bn_backward_map{x.data<float>(), dy.data<float>(), dx.data<float>(),
                               scale.data<float>(), mean.data<float>(), inv_std.data<float>(),
                               dscale.data<float>(), dbias.data<float>(), global, v.g});
    }
  }
  if (ctx.has_output("X@GRAD")) ctx.output("X@GRAD") = std::move(dx);
  if (ctx.has_output("Scale@GRAD")) ctx.output("Scale@GRAD") = std::move(dscale);
  if (ctx.has_output("Bias@GRAD")) ctx.output("Bias@GRAD") = std::move(dbias);
}

} // namespace

void register_batch_norm_kernels(kernel_registry& r) {
  r.add("batch_norm", place::kind::gpu, batch_norm_forward);
  r.add("batch_norm_grad", place::kind::gpu, batch_norm_backward);
  // Unlowered (graph/sync_batch_norm.hpp), as the reference executor runs it: one place alone.
  r.add("sync_batch_norm", place::kind::gpu, batch_norm_forward);
  r.add("sync_batch_norm_grad", place::kind::gpu, batch_norm_backward);
}

} // namespace pe::cuda
