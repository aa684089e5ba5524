#pragma once

#include <cstdint>

namespace pe {

/// Batch normalization over NCHW data viewed as [n, c, spatial], channel by channel: each
/// channel's planes (n of them, `spatial` contiguous floats each) are read from memory once
/// and, while they are still in the core's cache, read again and written, so a training
/// step moves X and Y (and Y@GRAD, X@GRAD) once each. oneDNN's fast kernels want the
/// channel-blocked layout, and reordering into and out of it moved every tensor two more
/// times (the built-in CNN's first batch_norm_grad: ~52 MB of traffic for ~14 MB of data).
/// Sums are of floats within a plane and of doubles across planes, in one order whatever
/// `threads` (an OpenMP team over channels) is: the results do not depend on it.
struct norm_planes {
  std::int64_t n, c, spatial;
  int threads = 1;

  /// The smallest plane these loops are for: below it a plane is no vector's worth of
  /// contiguous floats, and a channel's elements lie a cache line or more apart (X of rank
  /// 2 is all planes of one), which the channel-blocked layout serves better.
  static constexpr std::int64_t min_spatial = 8;

  /// Training: per channel, the batch `mean` and biased `variance` of x, then y = scale *
  /// (x - mean) / sqrt(variance + epsilon) + bias (y may be x).
  void train_forward(const float* x, const float* scale, const float* bias, float epsilon, float* y,
                     float* mean, float* variance) const;

  /// Given statistics: y = scale * (x - mean) * inv_std + bias, per channel (y may be x).
  void normalize(const float* x, const float* mean, const float* inv_std, const float* scale,
                 const float* bias, float* y) const;

  /// Per channel, dbias = sum(dy) and dscale = sum(dy * (x - mean) * inv_std); then, where
  /// dx is not null, dx = scale * inv_std * (dy - dbias / count - xhat * dscale / count) in
  /// training (`global` false) or scale * inv_std * dy with global statistics. dx may be x
  /// or dy.
  void backward(const float* x, const float* dy, const float* mean, const float* inv_std,
                const float* scale, bool global, float* dscale, float* dbias, float* dx) const;
};

} // namespace pe
