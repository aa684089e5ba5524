// CPU kernels of the ops a synchronised batch_norm is lowered into (graph/sync_batch_norm.hpp):
// the local sums, in double, and the normalisation and its grad from the sums every place
// and process added up, with the CPU batch_norm kernel's conventions (biased variance,
// running = running * momentum + batch * (1 - momentum), SavedVariance the inverse std; at
// most one element per channel in the whole world: Y = X). X is [N, C, spatial] (NCHW).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/batch_norm_ops.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

/// Calls f(c, i) for every element i of X's channel c, channel by channel within each row.
template <class F>
void for_channels(const bn_dims& d, F&& f) {
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t c = 0; c < d.c; ++c) {
      const std::int64_t base = (n * d.c + c) * d.spatial;
      for (std::int64_t s = 0; s < d.spatial; ++s) f(c, base + s);
    }
}

void stats_kernel(kernel_context& ctx) {
  const sync_bn_stats_front f = sync_bn_stats_front_of(ctx, fp32_input);
  const float* x = f.x.data<float>();
  const float* shift = f.shift.data<float>();
  std::vector<double> sum(static_cast<std::size_t>(f.d.c)), squares(sum.size());
  for_channels(f.d, [&](std::int64_t c, std::int64_t i) {
    const double v = static_cast<double>(x[i]) - shift[c];
    sum[static_cast<std::size_t>(c)] += v;
    squares[static_cast<std::size_t>(c)] += v * v;
  });
  float* out = fp32_output(ctx, "Stats", {2 * f.d.c + 1});
  for (std::int64_t c = 0; c < f.d.c; ++c) {
    out[c] = static_cast<float>(sum[static_cast<std::size_t>(c)]);
    out[f.d.c + c] = static_cast<float>(squares[static_cast<std::size_t>(c)]);
  }
  out[2 * f.d.c] = static_cast<float>(f.d.n * f.d.spatial);
}

void apply_kernel(kernel_context& ctx) {
  const sync_bn_apply_front f = sync_bn_apply_front_of(ctx, fp32_input);
  const batch_norm_front& b = f.bn;
  const std::int64_t channels = b.d.c;
  const float* s = f.stats.data<float>();
  const float count = s[2 * channels];
  if (ctx.has_output("ReserveSpace")) ctx.output("ReserveSpace").resize(dtype::fp32, {0});
  // The running statistics are read before anything is written: MeanOut is usually Mean.
  std::vector<float> running_mean(b.mean.data<float>(), b.mean.data<float>() + channels);
  std::vector<float> running_variance(b.variance.data<float>(), b.variance.data<float>() + channels);
  std::vector<float> mean(static_cast<std::size_t>(channels)), inv_std(mean.size());
  std::vector<float> mean_out = running_mean, variance_out = running_variance;
  const bool pass_through = count <= 1; // Paddle's rule for one element per channel
  for (std::int64_t c = 0; c < channels && !pass_through; ++c) {
    const double shift = running_mean[static_cast<std::size_t>(c)];
    const double d = s[c] / static_cast<double>(count);
    const double variance = std::max(0.0, s[channels + c] / static_cast<double>(count) - d * d);
    const auto k = static_cast<std::size_t>(c);
    mean[k] = static_cast<float>(shift + d);
    inv_std[k] = 1.f / std::sqrt(static_cast<float>(variance) + b.epsilon);
    mean_out[k] = running_mean[k] * b.momentum + mean[k] * (1 - b.momentum);
    variance_out[k] = running_variance[k] * b.momentum + static_cast<float>(variance) * (1 - b.momentum);
  }
  tensor& y = ctx.output("Y");
  y.resize(dtype::fp32, b.x.shape()); // in place on X is fine: element by element
  if (pass_through) {
    if (&y != &b.x && b.x.bytes() > 0) std::memcpy(y.raw(), b.x.raw(), b.x.bytes());
  } else {
    const float* x = b.x.data<float>();
    const float* scale = b.scale.data<float>();
    const float* bias = b.bias.data<float>();
    float* out = y.data<float>();
    for_channels(b.d, [&](std::int64_t c, std::int64_t i) {
      out[i] = scale[c] * ((x[i] - mean[static_cast<std::size_t>(c)]) * inv_std[static_cast<std::size_t>(c)]) + bias[c];
    });
  }
  const auto write = [&](const char* slot, const std::vector<float>& values) {
    if (float* to = fp32_output(ctx, slot, {channels})) std::copy(values.begin(), values.end(), to);
  };
  write("MeanOut", mean_out);
  write("VarianceOut", variance_out);
  write("SavedMean", mean);
  write("SavedVariance", inv_std);
}

void grad_stats_kernel(kernel_context& ctx) {
  const sync_bn_grad_front f = sync_bn_grad_front_of(ctx, fp32_input);
  const float* x = f.x.data<float>();
  const float* dy = f.dy.data<float>();
  const float* mean = f.mean.data<float>();
  const float* inv_std = f.inv_std.data<float>();
  std::vector<double> dbias(static_cast<std::size_t>(f.d.c)), dscale(dbias.size());
  for_channels(f.d, [&](std::int64_t c, std::int64_t i) {
    dbias[static_cast<std::size_t>(c)] += dy[i];
    dscale[static_cast<std::size_t>(c)] += static_cast<double>(dy[i]) * ((x[i] - mean[c]) * inv_std[c]);
  });
  // The forward passed X through (SavedVariance 0, never an inverse std otherwise): nothing
  // reaches Scale and Bias.
  for (std::int64_t c = 0; c < f.d.c; ++c)
    if (inv_std[c] == 0) dbias[static_cast<std::size_t>(c)] = dscale[static_cast<std::size_t>(c)] = 0;
  const std::int64_t channels = f.d.c;
  float* stats = fp32_output(ctx, "Stats", {2 * channels + 1});
  float* scale_grad = fp32_output(ctx, "Scale@GRAD", {channels});
  float* bias_grad = fp32_output(ctx, "Bias@GRAD", {channels});
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto k = static_cast<std::size_t>(c);
    stats[c] = static_cast<float>(dbias[k]);
    stats[channels + c] = static_cast<float>(dscale[k]);
    if (bias_grad != nullptr) bias_grad[c] = stats[c];
    if (scale_grad != nullptr) scale_grad[c] = stats[channels + c];
  }
  stats[2 * channels] = static_cast<float>(f.d.n * f.d.spatial);
}

void grad_apply_kernel(kernel_context& ctx) {
  const sync_bn_grad_front f = sync_bn_grad_front_of(ctx, fp32_input);
  const tensor& scale = sync_bn_grad_scale(ctx, fp32_input, f.d);
  const tensor& stats = sync_bn_stats_input(ctx, fp32_input, f.d);
  const std::int64_t channels = f.d.c;
  const float* s = stats.data<float>();
  const float count = s[2 * channels];
  // Element by element: X@GRAD may be X or Y@GRAD itself.
  tensor& dx = ctx.output("X@GRAD");
  dx.resize(dtype::fp32, f.x.shape());
  if (count <= 1) { // the forward passed X through
    if (&dx != &f.dy && f.dy.bytes() > 0) std::memcpy(dx.raw(), f.dy.raw(), f.dy.bytes());
    return;
  }
  const float* x = f.x.data<float>();
  const float* dy = f.dy.data<float>();
  const float* mean = f.mean.data<float>();
  const float* inv_std = f.inv_std.data<float>();
  const float* gamma = scale.data<float>();
  float* out = dx.data<float>();
  for_channels(f.d, [&](std::int64_t c, std::int64_t i) {
    const float xhat = (x[i] - mean[c]) * inv_std[c];
    out[i] = gamma[c] * inv_std[c] * (dy[i] - s[c] / count - xhat * s[channels + c] / count);
  });
}

/// c_allreduce_sum where the world is this one place (and in the reference executor): its
/// Out is its X (the schema insists), already the sum.
void world_of_one_all_reduce(kernel_context&) {}

} // namespace

void register_sync_batch_norm_kernels(kernel_registry& r) {
  r.add("c_allreduce_sum", place::kind::cpu, world_of_one_all_reduce);
  r.add("sync_batch_norm_stats", place::kind::cpu, stats_kernel);
  r.add("sync_batch_norm_apply", place::kind::cpu, apply_kernel);
  r.add("sync_batch_norm_grad_stats", place::kind::cpu, grad_stats_kernel);
  r.add("sync_batch_norm_grad_apply", place::kind::cpu, grad_apply_kernel);
}

} // namespace pe
