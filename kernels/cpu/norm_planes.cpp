#include "kernels/cpu/norm_planes.hpp"

#include <cmath>
#include <cstddef>

namespace pe {

namespace {

/// The sum of a plane's floats (vectorised: the lanes' partial sums, then their sum).
float plane_sum(const float* p, std::int64_t size) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < size; ++i) s += p[i];
  return s;
}

float plane_squared_deviation(const float* p, std::int64_t size, float mean) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < size; ++i) s += (p[i] - mean) * (p[i] - mean);
  return s;
}

/// y = (x - mean) * k + bias over one plane (not x * k + (bias - mean * k): where x is near
/// the mean, that form loses the difference to rounding).
void scale_plane(const float* in, std::int64_t size, float mean, float k, float bias, float* out) {
#pragma omp simd
  for (std::int64_t i = 0; i < size; ++i) out[i] = (in[i] - mean) * k + bias;
}

} // namespace

void norm_planes::train_forward(const float* x, const float* scale, const float* bias, float epsilon,
                                float* y, float* mean, float* variance) const {
  const auto count = static_cast<double>(n * spatial);
#pragma omp parallel for num_threads(threads)
  for (std::int64_t ch = 0; ch < c; ++ch) {
    // Two passes for the statistics (the second from the cache), a third writes y.
    double sum = 0;
    for (std::int64_t b = 0; b < n; ++b) sum += plane_sum(x + (b * c + ch) * spatial, spatial);
    const auto m = static_cast<float>(sum / count);
    double squares = 0;
    for (std::int64_t b = 0; b < n; ++b) squares += plane_squared_deviation(x + (b * c + ch) * spatial, spatial, m);
    mean[ch] = m;
    variance[ch] = static_cast<float>(squares / count);
    const float k = scale[ch] / std::sqrt(variance[ch] + epsilon);
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t at = (b * c + ch) * spatial;
      scale_plane(x + at, spatial, m, k, bias[ch], y + at);
    }
  }
}

void norm_planes::normalize(const float* x, const float* mean, const float* inv_std, const float* scale,
                            const float* bias, float* y) const {
#pragma omp parallel for num_threads(threads)
  for (std::int64_t plane = 0; plane < n * c; ++plane) {
    const std::int64_t ch = plane % c;
    scale_plane(x + plane * spatial, spatial, mean[ch], scale[ch] * inv_std[ch], bias[ch], y + plane * spatial);
  }
}

void norm_planes::backward(const float* x, const float* dy, const float* mean, const float* inv_std,
                           const float* scale, bool global, float* dscale, float* dbias, float* dx) const {
  const auto count = static_cast<float>(n * spatial);
#pragma omp parallel for num_threads(threads)
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const float m = mean[ch], s = inv_std[ch];
    double sum_dy = 0, sum_dy_xmu = 0;
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t at = (b * c + ch) * spatial;
      const float* px = x + at;
      const float* pdy = dy + at;
      float a = 0, d = 0;
#pragma omp simd reduction(+ : a, d)
      for (std::int64_t i = 0; i < spatial; ++i) {
        a += pdy[i];
        d += pdy[i] * (px[i] - m);
      }
      sum_dy += a;
      sum_dy_xmu += d;
    }
    dbias[ch] = static_cast<float>(sum_dy);
    dscale[ch] = static_cast<float>(sum_dy_xmu * s);
    if (dx == nullptr) continue;
    // Training: dx = k * (dy - mean(dy) - (x - m) * s^2 * mean(dy * (x - m))).
    const float k = scale[ch] * s;
    const float mean_dy = global ? 0.f : dbias[ch] / count;
    const float slope = global ? 0.f : static_cast<float>(sum_dy_xmu) / count * s * s;
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t at = (b * c + ch) * spatial;
      const float* px = x + at;
      const float* pdy = dy + at;
      float* out = dx + at;
#pragma omp simd
      for (std::int64_t i = 0; i < spatial; ++i) out[i] = k * (pdy[i] - mean_dy - (px[i] - m) * slope);
    }
  }
}

} // namespace pe
