#pragma once

// The per-lane plans of the softmax kernels (softmax, log_softmax and their grads along any
// axis; the rows of softmax_with_cross_entropy): one block per lane (lanes.hpp), thread t of
// `threads` taking the lane elements t, t + threads, ... Each plan splits the kernel into
// the partials a block reduces (block_reduce.hpp) and the final per-element writes, so that
// the host tests replay it block by block, thread by thread. The arithmetic is the CPU
// kernels' (kernels/cpu/softmax_kernels.cpp): the lane maximum subtracted, sums in double.

#include <cmath>
#include <cstdint>

#include "kernels/cuda/block_reduce.hpp"
#include "kernels/cuda/lanes.hpp"

namespace pe::cuda {

/// Out = softmax (or log softmax) of X along each lane.
struct softmax_plan {
  const float* x;
  float* out;
  lane_layout l;
  bool log;

  PE_HOST_DEVICE float max_partial(std::int64_t lane, unsigned t, unsigned threads) const {
    const std::int64_t first = l.first(lane), stride = l.stride();
    return strided_fold(
        l.n, t, threads, x[first], [&](std::int64_t k) { return x[first + k * stride]; },
        max_op{});
  }
  PE_HOST_DEVICE double sum_partial(std::int64_t lane, unsigned t, unsigned threads,
                                    float max) const {
    const std::int64_t first = l.first(lane), stride = l.stride();
    return strided_fold(
        l.n, t, threads, 0.0,
        [&](std::int64_t k) { return exp(static_cast<double>(x[first + k * stride] - max)); },
        plus_op{});
  }
  /// Writes thread t's elements, given the lane's maximum and the log of its exp sum.
  PE_HOST_DEVICE void write(std::int64_t lane, unsigned t, unsigned threads, float max,
                            double log_sum) const {
    const std::int64_t first = l.first(lane), stride = l.stride();
    for (std::int64_t k = t; k < l.n; k += threads) {
      const std::int64_t e = first + k * stride;
      const double log_softmax = static_cast<double>(x[e] - max) - log_sum;
      out[e] = static_cast<float>(log ? log_softmax : exp(log_softmax));
    }
  }
};

/// X@GRAD from Out and Out@GRAD (g) along each lane:
///   softmax:     dx_k = out_k * (g_k - sum_j g_j out_j)
///   log_softmax: dx_k = g_k - exp(out_k) * sum_j g_j
struct softmax_grad_plan {
  const float* out;
  const float* dout;
  float* dx;
  lane_layout l;
  bool log;

  PE_HOST_DEVICE double sum_partial(std::int64_t lane, unsigned t, unsigned threads) const {
    const std::int64_t first = l.first(lane), stride = l.stride();
    return strided_fold(
        l.n, t, threads, 0.0,
        [&](std::int64_t k) {
          const std::int64_t e = first + k * stride;
          return log ? static_cast<double>(dout[e]) : static_cast<double>(dout[e]) * out[e];
        },
        plus_op{});
  }
  PE_HOST_DEVICE void write(std::int64_t lane, unsigned t, unsigned threads, double sum) const {
    const std::int64_t first = l.first(lane), stride = l.stride();
    const auto s = static_cast<float>(sum);
    for (std::int64_t k = t; k < l.n; k += threads) {
      const std::int64_t e = first + k * stride;
      const float g = dout[e], o = out[e];
      dx[e] = log ? g - expf(o) * s : o * (g - s);
    }
  }
};

} // namespace pe::cuda
