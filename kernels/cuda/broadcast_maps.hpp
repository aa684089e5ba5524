#pragma once

// The broadcasting and reducing element maps of the elementwise ops, mean and reduce_mean,
// over a reduce_geometry: forward and X@GRAD maps (one full element per op(i)), and the
// per-small-element reduction plans of Y@GRAD and the averages (one block per small element,
// its threads folding the full elements that map to it; block_reduce.hpp). The sums run in
// double, as the CPU kernels sum long runs.

#include <cstdint>

#include "kernels/cuda/block_reduce.hpp"
#include "kernels/cuda/elementwise_functors.hpp"
#include "kernels/cuda/reduce_geometry.hpp"

namespace pe::cuda {

/// out[i] = f(x[i], y[small_index(i)]), in T (FP32; INT64 or INT32 for add, sub and mul).
template <class F, class T = float>
struct broadcast_forward_map {
  const T* x;
  const T* y;
  T* out;
  reduce_geometry g;
  F f;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = f(x[i], y[g.small_index(i)]); }
};

/// The grad_element of full element i (Out only when the grad reads it).
struct grad_inputs {
  const float* x;
  const float* y;
  const float* out; ///< null when the grad op reads no Out
  const float* dout;
  reduce_geometry g;

  PE_HOST_DEVICE grad_element at(std::int64_t i, std::int64_t j) const {
    return {x[i], y[j], out != nullptr ? out[i] : 0.f, dout[i]};
  }
};

/// X@GRAD[i] = grad.dx(element i).
template <class G>
struct broadcast_dx_map {
  grad_inputs in;
  float* dx;
  G grad;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    dx[i] = grad.dx(in.at(i, in.g.small_index(i)));
  }
};

/// Y@GRAD[j] = the sum of grad.dy over the full elements mapping to j.
template <class G>
struct broadcast_dy_plan {
  grad_inputs in;
  float* dy;
  G grad;
  PE_HOST_DEVICE double partial(std::int64_t j, unsigned t, unsigned threads) const {
    return strided_fold(
        in.g.reduce_count(), t, threads, 0.0,
        [&](std::int64_t r) { return static_cast<double>(grad.dy(in.at(in.g.full_index(j, r), j))); },
        plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t j, double total) const { dy[j] = static_cast<float>(total); }
};

/// small[j] = scale * the sum of the full elements mapping to j (mean, reduce_mean: scale is
/// 1 / count; reduce_sum: 1).
struct average_plan {
  const float* full;
  float* small;
  reduce_geometry g;
  float scale;
  PE_HOST_DEVICE double partial(std::int64_t j, unsigned t, unsigned threads) const {
    return strided_fold(
        g.reduce_count(), t, threads, 0.0,
        [&](std::int64_t r) { return static_cast<double>(full[g.full_index(j, r)]); }, plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t j, double total) const {
    small[j] = static_cast<float>(total) * scale;
  }
};

/// full[i] = scale * small[small_index(i)] (the averages' grads).
struct broadcast_scaled_map {
  const float* small;
  float* full;
  reduce_geometry g;
  float scale;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { full[i] = scale * small[g.small_index(i)]; }
};

} // namespace pe::cuda
