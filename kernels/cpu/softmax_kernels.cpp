// CPU kernels of softmax and log_softmax along any axis, and of their grads (which, as in
// Paddle, read Out rather than X). The axis and the grad's inputs are checked by
// kernels/softmax_ops.hpp's front, shared with the CUDA kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/softmax_ops.hpp"

namespace pe {

namespace {

/// A tensor seen as [outer, n, inner] around the `axis` attribute: the lanes along the axis
/// are `outer * inner` runs of `n` elements `inner` apart.
struct lanes {
  std::int64_t outer = 1, n = 1, inner = 1;

  /// Calls f(first, stride) once per lane; its elements are first + k * stride, k < n.
  template <class F>
  void for_each(F&& f) const {
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) f(o * n * inner + i, inner);
  }
};

lanes lanes_of(const kernel_context& ctx, std::string_view slot, const tensor& t) {
  const std::size_t axis = softmax_axis(ctx, slot, t);
  lanes l;
  for (std::size_t d = 0; d < t.rank(); ++d)
    (d < axis ? l.outer : d == axis ? l.n : l.inner) *= t.dim(d);
  return l;
}

/// Out = softmax of X along the axis, or its log when `log`. Stable: with m the lane's
/// maximum, log softmax_k = (x_k - m) - log(sum_j exp(x_j - m)), so no exp overflows. In place
/// on X is fine: each Out element is written after the lane's sums, from its own X element.
void softmax_forward(kernel_context& ctx, bool log) {
  const tensor& x = fp32_input(ctx, "X");
  const lanes l = lanes_of(ctx, "X", x);
  tensor& out = ctx.output("Out");
  out.resize(dtype::fp32, x.shape());
  const float* xs = x.data<float>();
  float* os = out.data<float>();
  l.for_each([&](std::int64_t first, std::int64_t stride) {
    float max = xs[first];
    for (std::int64_t k = 1; k < l.n; ++k) max = std::max(max, xs[first + k * stride]);
    double sum = 0;
    for (std::int64_t k = 0; k < l.n; ++k)
      sum += std::exp(static_cast<double>(xs[first + k * stride] - max));
    const double log_sum = std::log(sum);
    for (std::int64_t k = 0; k < l.n; ++k) {
      const std::int64_t e = first + k * stride;
      const double log_softmax = static_cast<double>(xs[e] - max) - log_sum;
      os[e] = static_cast<float>(log ? log_softmax : std::exp(log_softmax));
    }
  });
}

/// X@GRAD from Out and Out@GRAD (g) along each lane:
///   softmax:     dx_k = out_k * (g_k - sum_j g_j out_j)
///   log_softmax: dx_k = g_k - exp(out_k) * sum_j g_j
/// In place on Out@GRAD or Out is fine, as in softmax_forward.
void softmax_backward(kernel_context& ctx, bool log) {
  const auto [out, dout] = softmax_grad_front_of(ctx, fp32_input);
  const lanes l = lanes_of(ctx, "Out", out);
  tensor& dx = ctx.output("X@GRAD");
  dx.resize(dtype::fp32, out.shape());
  const float* os = out.data<float>();
  const float* gs = dout.data<float>();
  float* dxs = dx.data<float>();
  l.for_each([&](std::int64_t first, std::int64_t stride) {
    double sum = 0;
    for (std::int64_t k = 0; k < l.n; ++k) {
      const std::int64_t e = first + k * stride;
      sum += log ? gs[e] : static_cast<double>(gs[e]) * os[e];
    }
    const auto s = static_cast<float>(sum);
    for (std::int64_t k = 0; k < l.n; ++k) {
      const std::int64_t e = first + k * stride;
      dxs[e] = log ? gs[e] - std::exp(os[e]) * s : os[e] * (gs[e] - s);
    }
  });
}

} // namespace

void register_softmax_kernels(kernel_registry& r) {
  register_softmax_ops(r, place::kind::cpu, softmax_forward, softmax_backward);
}

} // namespace pe
