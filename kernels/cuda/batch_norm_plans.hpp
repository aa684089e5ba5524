#pragma once

// The per-channel plans and element maps of the CUDA batch_norm kernels, X viewed as
// [N, C, spatial] (reduce_geometry with N and spatial reduced, C kept), with the statistics
// conventions of the CPU kernel (kernels/cpu/dnnl_norm_kernels.cpp): biased batch variance,
// running = running * momentum + batch * (1 - momentum), SavedVariance the inverse std.
// The channel sums are block reductions in double (block_reduce.hpp).

#include <cmath>
#include <cstdint>

#include "kernels/cuda/block_reduce.hpp"
#include "kernels/cuda/reduce_geometry.hpp"

namespace pe::cuda {

/// mean[c] = the channel's average of x.
struct bn_mean_plan {
  const float* x;
  float* mean;
  reduce_geometry g;
  PE_HOST_DEVICE double partial(std::int64_t c, unsigned t, unsigned threads) const {
    return strided_fold(
        g.reduce_count(), t, threads, 0.0,
        [&](std::int64_t r) { return static_cast<double>(x[g.full_index(c, r)]); }, plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t c, double total) const {
    mean[c] = static_cast<float>(total / static_cast<double>(g.reduce_count()));
  }
};

/// var[c] = the channel's average of (x - mean)^2 (biased).
struct bn_variance_plan {
  const float* x;
  const float* mean;
  float* variance;
  reduce_geometry g;
  PE_HOST_DEVICE double partial(std::int64_t c, unsigned t, unsigned threads) const {
    const double m = mean[c];
    return strided_fold(
        g.reduce_count(), t, threads, 0.0,
        [&](std::int64_t r) {
          const double d = x[g.full_index(c, r)] - m;
          return d * d;
        },
        plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t c, double total) const {
    variance[c] = static_cast<float>(total / static_cast<double>(g.reduce_count()));
  }
};

PE_HOST_DEVICE inline float bn_inverse_std(float variance, float epsilon) {
  return 1.f / sqrtf(variance + epsilon);
}

/// scale * (x - mean) * inv_std + bias: one element of batch_norm's output.
PE_HOST_DEVICE inline float bn_normalise(float x, float mean, float inv_std, float scale, float bias) {
  return scale * ((x - mean) * inv_std) + bias;
}

/// One element of X@GRAD in training, from the channel's sums over its `count` elements:
/// scale * inv_std * (dy - sum(dy) / count - xhat * sum(dy * xhat) / count).
PE_HOST_DEVICE inline float bn_input_grad(float x, float dy, float mean, float inv_std, float scale,
                                          float sum_dy, float sum_dy_xhat, float count) {
  const float xhat = (x - mean) * inv_std;
  return scale * inv_std * (dy - sum_dy / count - xhat * sum_dy_xhat / count);
}

/// Y = Scale * (X - mean) * inv_std + Bias, one element per op(i).
struct bn_forward_map {
  const float* x;
  float* y;
  const float* scale;
  const float* bias;
  const float* mean;
  const float* variance;
  float epsilon;
  reduce_geometry g;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t c = g.small_index(i);
    y[i] = bn_normalise(x[i], mean[c], bn_inverse_std(variance[c], epsilon), scale[c], bias[c]);
  }
};

/// The channel outputs, one channel per op(c): MeanOut and VarianceOut (the running
/// statistics updated, or kept under global statistics), SavedMean and SavedVariance (the
/// inverse std). Each pointer may be null (slot not bound); MeanOut may be Mean.
struct bn_stats_map {
  const float* running_mean;
  const float* running_variance;
  const float* mean;     ///< the statistics Y was normalised with
  const float* variance;
  float* mean_out;
  float* variance_out;
  float* saved_mean;
  float* saved_variance;
  float momentum, epsilon;
  bool global;
  PE_HOST_DEVICE void operator()(std::int64_t c) const {
    const float rm = running_mean[c], rv = running_variance[c], m = mean[c], v = variance[c];
    if (mean_out != nullptr) mean_out[c] = global ? rm : rm * momentum + m * (1 - momentum);
    if (variance_out != nullptr) variance_out[c] = global ? rv : rv * momentum + v * (1 - momentum);
    if (saved_mean != nullptr) saved_mean[c] = m;
    if (saved_variance != nullptr) saved_variance[c] = bn_inverse_std(v, epsilon);
  }
};

/// Bias@GRAD[c] = sum dy, or (with `xhat`) Scale@GRAD[c] = sum dy * (x - mean) * inv_std.
struct bn_grad_sum_plan {
  const float* x;
  const float* dy;
  const float* mean;
  const float* inv_std;
  float* sum;
  bool xhat;
  reduce_geometry g;
  PE_HOST_DEVICE double partial(std::int64_t c, unsigned t, unsigned threads) const {
    const float m = mean[c], s = inv_std[c];
    return strided_fold(
        g.reduce_count(), t, threads, 0.0,
        [&](std::int64_t r) {
          const std::int64_t i = g.full_index(c, r);
          return xhat ? static_cast<double>(dy[i]) * ((x[i] - m) * s) : static_cast<double>(dy[i]);
        },
        plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t c, double total) const { sum[c] = static_cast<float>(total); }
};

/// X@GRAD, one element per op(i): training, Scale * inv_std * (dy - dbias / M - xhat *
/// dscale / M); with global statistics, Scale * inv_std * dy.
struct bn_backward_map {
  const float* x;
  const float* dy;
  float* dx;
  const float* scale;
  const float* mean;
  const float* inv_std;
  const float* dscale;
  const float* dbias;
  bool global;
  reduce_geometry g;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t c = g.small_index(i);
    const float s = inv_std[c], k = scale[c] * s;
    if (global) {
      dx[i] = k * dy[i];
      return;
    }
    dx[i] = bn_input_grad(x[i], dy[i], mean[c], s, scale[c], dbias[c], dscale[c],
                          static_cast<float>(g.reduce_count()));
  }
};

/// inv_std[c] = 1 / sqrt(variance[c] + epsilon) (the backward of global statistics).
struct bn_inverse_std_map {
  const float* variance;
  float* inv_std;
  float epsilon;
  PE_HOST_DEVICE void operator()(std::int64_t c) const {
    inv_std[c] = bn_inverse_std(variance[c], epsilon);
  }
};

} // namespace pe::cuda
