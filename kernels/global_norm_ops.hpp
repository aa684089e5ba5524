#pragma once
// sqrt and squared_l2_norm, the ops Paddle's ClipGradByGlobalNorm adds (sqrt of the sum of
// every gradient's squared_l2_norm), on every kind of place: shared here is the per-element
// math of the forward and grad kernels, PE_HOST_DEVICE so that the CPU kernels
// (kernels/cpu/global_norm_kernels.cpp) and the CUDA kernels
// (kernels/cuda/global_norm_kernels.cu) compute each element by the same expression.
// squared_l2_norm's sum itself is each place's own (a double loop; a block reduction).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/host_device.hpp"

namespace pe {

/// sqrt's Out = sqrt(X) (NaN for X < 0, as Paddle).
struct sqrt_fn {
  PE_HOST_DEVICE float operator()(float x) const { return sqrtf(x); }
};

/// sqrt_grad's X@GRAD from (Out, Out@GRAD): Out@GRAD * 0.5 / Out, as Paddle's
/// SqrtGradFunctor, which reads Out rather than X.
struct sqrt_grad_fn {
  PE_HOST_DEVICE float operator()(float out, float dout) const { return dout * 0.5f / out; }
};

/// squared_l2_norm's term of element i: X[i]^2.
struct squared_term {
  const float* x;
  PE_HOST_DEVICE double operator()(std::int64_t i) const {
    const double v = x[i];
    return v * v;
  }
};

/// squared_l2_norm_grad: X@GRAD[i] = 2 * Out@GRAD[0] * X[i] (Out@GRAD holds one element).
/// In place over X is fine: element i is read before it is written.
struct squared_l2_norm_grad_map {
  const float* x;
  const float* dout;
  float* dx;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { dx[i] = 2.f * dout[0] * x[i]; }
};

} // namespace pe
