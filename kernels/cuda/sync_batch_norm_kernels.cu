// CUDA kernels of the ops a synchronised batch_norm is lowered into (graph/sync_batch_norm.hpp),
// with the CPU kernels' conventions (kernels/cpu/sync_batch_norm_kernels.cpp): the local sums
// are block reductions in double (batch_norm_plans.hpp's geometry, split over several blocks
// per channel when the channels are few and long), the normalisation and its grad element
// maps that read the summed statistics, element count included, on the device: the host
// never waits for them, so a step stays capturable as a CUDA graph.
#include <cstdint>
#include <vector>

#include "kernels/batch_norm_ops.hpp"
#include "kernels/cuda/batch_norm_plans.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"

namespace pe::cuda {

namespace {

/// X's channel geometry ([N, C, spatial], C kept).
reduce_geometry channel_geometry(const tensor& x) {
  std::vector<bool> reduced(x.rank(), true);
  reduced[1] = false;
  return reduce_geometry::make(x.shape(), reduced);
}

/// sum[c] = the channel's sum of (x - shift[c]), or of its square.
struct shifted_sum_plan {
  const float* x;
  const float* shift;
  float* sum;
  bool squared;
  reduce_geometry g;
  PE_HOST_DEVICE double partial(std::int64_t c, unsigned t, unsigned threads) const {
    const double k = shift[c];
    return strided_fold(
        g.reduce_count(), t, threads, 0.0,
        [&](std::int64_t r) {
          const double d = x[g.full_index(c, r)] - k;
          return squared ? d * d : d;
        },
        plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t c, double total) const { sum[c] = static_cast<float>(total); }
};

/// The batch statistics from the summed ones, one channel per op(c): mean and inv_std (zero
/// when the world had at most one element per channel, which passes X through), and the
/// channel outputs (each may be null; MeanOut may be Mean: each channel read first).
struct sync_channel_map {
  const float* stats;
  std::int64_t channels;
  const float* running_mean;
  const float* running_variance;
  float* mean;
  float* inv_std;
  float* mean_out;
  float* variance_out;
  float* saved_mean;
  float* saved_variance;
  float momentum, epsilon;
  PE_HOST_DEVICE void operator()(std::int64_t c) const {
    const float rm = running_mean[c], rv = running_variance[c];
    const double count = stats[2 * channels];
    float m = 0, s = 0, nm = rm, nv = rv;
    if (count > 1) {
      const double d = stats[c] / count;
      double v = stats[channels + c] / count - d * d;
      if (v < 0) v = 0;
      m = static_cast<float>(rm + d);
      s = bn_inverse_std(static_cast<float>(v), epsilon);
      nm = rm * momentum + m * (1 - momentum);
      nv = rv * momentum + static_cast<float>(v) * (1 - momentum);
    }
    mean[c] = m;
    inv_std[c] = s;
    if (mean_out != nullptr) mean_out[c] = nm;
    if (variance_out != nullptr) variance_out[c] = nv;
    if (saved_mean != nullptr) saved_mean[c] = m;
    if (saved_variance != nullptr) saved_variance[c] = s;
  }
};

/// Y = Scale * (X - mean) * inv_std + Bias, or X where the world's count is at most one.
struct sync_forward_map {
  const float* x;
  float* y;
  const float* scale;
  const float* bias;
  const float* mean;
  const float* inv_std;
  const float* count;
  reduce_geometry g;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    if (*count <= 1) {
      y[i] = x[i];
      return;
    }
    const std::int64_t c = g.small_index(i);
    y[i] = bn_normalise(x[i], mean[c], inv_std[c], scale[c], bias[c]);
  }
};

/// The parameter gradients from the local sums (zero where the forward passed X through:
/// inv_std 0), and the element count, one channel per op(c).
struct grad_stats_map {
  float* stats;
  std::int64_t channels;
  const float* inv_std;
  float* scale_grad;
  float* bias_grad;
  float count;
  PE_HOST_DEVICE void operator()(std::int64_t c) const {
    if (inv_std[c] == 0) stats[c] = stats[channels + c] = 0;
    if (bias_grad != nullptr) bias_grad[c] = stats[c];
    if (scale_grad != nullptr) scale_grad[c] = stats[channels + c];
    if (c == 0) stats[2 * channels] = count;
  }
};

/// X@GRAD from the world's sums of dy and dy * xhat; dy where the forward passed X through.
struct sync_backward_map {
  const float* x;
  const float* dy;
  float* dx;
  const float* scale;
  const float* mean;
  const float* inv_std;
  const float* stats;
  std::int64_t channels;
  reduce_geometry g;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const float count = stats[2 * channels];
    if (count <= 1) {
      dx[i] = dy[i];
      return;
    }
    const std::int64_t c = g.small_index(i);
    dx[i] = bn_input_grad(x[i], dy[i], mean[c], inv_std[c], scale[c], stats[c], stats[channels + c], count);
  }
};

/// Output `slot` resized to `dims`, or null when not bound.
float* fp32_output(kernel_context& ctx, const char* slot, const shape_t& dims) {
  if (!ctx.has_output(slot)) return nullptr;
  tensor& t = ctx.output(slot);
  resize_output(ctx, t, dtype::fp32, dims);
  return t.data<float>();
}

void stats_kernel(kernel_context& ctx) {
  const sync_bn_stats_front f = sync_bn_stats_front_of(ctx, gpu_fp32_input);
  const reduce_geometry g = channel_geometry(f.x);
  const std::int64_t c = f.d.c;
  float* stats = fp32_output(ctx, "Stats", {2 * c + 1});
  for (bool squared : {false, true})
    reduce_blocks_split(ctx, c, g.reduce_count(),
                        shifted_sum_plan{f.x.data<float>(), f.shift.data<float>(),
                                         stats + (squared ? c : 0), squared, g});
  if (g.reduce_count() == 0) for_each(ctx, 2 * c, fill_map<float>{stats, 0.f}); // no rows here
  for_each(ctx, 1, fill_map<float>{stats + 2 * c, static_cast<float>(f.d.n * f.d.spatial)});
}

void apply_kernel(kernel_context& ctx) {
  const sync_bn_apply_front f = sync_bn_apply_front_of(ctx, gpu_fp32_input);
  const batch_norm_front& b = f.bn;
  const std::int64_t c = b.d.c;
  if (ctx.has_output("ReserveSpace")) resize_output(ctx, ctx.output("ReserveSpace"), dtype::fp32, {0});
  tensor mean = scratch(ctx, dtype::fp32, {c}), inv_std = scratch(ctx, dtype::fp32, {c});
  // The channel outputs first: Y may be written over X, and MeanOut over Mean.
  for_each(ctx, c,
           sync_channel_map{f.stats.data<float>(), c, b.mean.data<float>(), b.variance.data<float>(),
                            mean.data<float>(), inv_std.data<float>(), fp32_output(ctx, "MeanOut", {c}),
                            fp32_output(ctx, "VarianceOut", {c}), fp32_output(ctx, "SavedMean", {c}),
                            fp32_output(ctx, "SavedVariance", {c}), b.momentum, b.epsilon});
  tensor& y = ctx.output("Y");
  resize_output(ctx, y, dtype::fp32, b.x.shape());
  for_each(ctx, b.x.numel(),
           sync_forward_map{b.x.data<float>(), y.data<float>(), b.scale.data<float>(), b.bias.data<float>(),
                            mean.data<float>(), inv_std.data<float>(), f.stats.data<float>() + 2 * c,
                            channel_geometry(b.x)});
}

void grad_stats_kernel(kernel_context& ctx) {
  const sync_bn_grad_front f = sync_bn_grad_front_of(ctx, gpu_fp32_input);
  const reduce_geometry g = channel_geometry(f.x);
  const std::int64_t c = f.d.c;
  float* stats = fp32_output(ctx, "Stats", {2 * c + 1});
  for (bool xhat : {false, true})
    reduce_blocks_split(ctx, c, g.reduce_count(),
                        bn_grad_sum_plan{f.x.data<float>(), f.dy.data<float>(), f.mean.data<float>(),
                                         f.inv_std.data<float>(), stats + (xhat ? c : 0), xhat, g});
  if (g.reduce_count() == 0) for_each(ctx, 2 * c, fill_map<float>{stats, 0.f});
  for_each(ctx, c,
           grad_stats_map{stats, c, f.inv_std.data<float>(), fp32_output(ctx, "Scale@GRAD", {c}),
                          fp32_output(ctx, "Bias@GRAD", {c}), static_cast<float>(f.d.n * f.d.spatial)});
}

void grad_apply_kernel(kernel_context& ctx) {
  const sync_bn_grad_front f = sync_bn_grad_front_of(ctx, gpu_fp32_input);
  const tensor& scale = sync_bn_grad_scale(ctx, gpu_fp32_input, f.d);
  const tensor& stats = sync_bn_stats_input(ctx, gpu_fp32_input, f.d);
  // Element by element: X@GRAD may be X or Y@GRAD itself.
  tensor& dx = ctx.output("X@GRAD");
  resize_output(ctx, dx, dtype::fp32, f.x.shape());
  for_each(ctx, f.x.numel(),
           sync_backward_map{f.x.data<float>(), f.dy.data<float>(), dx.data<float>(), scale.data<float>(),
                             f.mean.data<float>(), f.inv_std.data<float>(), stats.data<float>(), f.d.c,
                             channel_geometry(f.x)});
}

/// c_allreduce_sum where the world is this one place (and in the reference executor): its
/// Out is its X (the schema insists), already the sum.
void world_of_one_all_reduce(kernel_context&) {}

} // namespace

void register_sync_batch_norm_kernels(kernel_registry& r) {
  r.add("c_allreduce_sum", place::kind::gpu, world_of_one_all_reduce);
  r.add("sync_batch_norm_stats", place::kind::gpu, stats_kernel);
  r.add("sync_batch_norm_apply", place::kind::gpu, apply_kernel);
  r.add("sync_batch_norm_grad_stats", place::kind::gpu, grad_stats_kernel);
  r.add("sync_batch_norm_grad_apply", place::kind::gpu, grad_apply_kernel);
}

} // namespace pe::cuda
