// CPU kernels of layer_norm and layer_norm_grad: plain loops over the rows of X's [left, N]
// view (cut at begin_norm_axis). Inputs and attributes are read and checked by
// kernels/layer_norm_ops.hpp's fronts, shared with the CUDA kernels
// (kernels/cuda/layer_norm_kernels.cu), which compute the same expressions in the same
// precision. The tensors are FP32; what lies between them is double:
//   - a row's mean and biased variance are two passes over the row summed in double (the
//     variance sums (x - mean)^2, which does not cancel as E[x^2] - mean^2 would); Mean and
//     Variance hold them rounded to float, and a row of no elements (N = 0) gets 0 and 0;
//   - Y = (x - mean) * rstd * Scale + Bias, rstd = 1 / sqrt(variance + epsilon), from the
//     unrounded mean and variance, rounded once (an absent Scale counts as 1, an absent Bias
//     as 0): a row's Y carries no error shared by the whole row (a rounded rstd or mean would
//     put one there), which is what a loss summed over Y sees;
//   - the grad, from the saved Mean and Variance, with xhat = (x - mean) * rstd and
//     g = Y@GRAD * Scale per row:
//       X@GRAD     = rstd * (g - sum(g) / N - xhat * sum(g * xhat) / N),
//       Scale@GRAD = sum over the rows of Y@GRAD * xhat,   Bias@GRAD = sum over the rows of Y@GRAD,
//     each output only when the op binds it.
// In place is safe: a row is read whole before any of it is written, so Y may be X and X@GRAD
// may be X or Y@GRAD.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/layer_norm_ops.hpp"

namespace pe {

namespace {

/// A row's mean and biased variance.
struct row_moments {
  double mean, variance;
};

/// Two passes over the n elements at x.
row_moments moments_of(const float* x, std::int64_t n) {
  if (n == 0) return {0, 0};
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double d = x[j] - mean;
    squares += d * d;
  }
  return {mean, squares / static_cast<double>(n)};
}

double inverse_std(double variance, float epsilon) { return 1 / std::sqrt(variance + epsilon); }

/// `param`'s data, or n copies of `absent` in `fill` when the op binds none: the loops then
/// need no branch per element, and multiplying by 1 or adding 0 changes no result.
const float* param_or(const tensor* param, std::vector<float>& fill, std::int64_t n, float absent) {
  if (param != nullptr) return param->data<float>();
  fill.assign(static_cast<std::size_t>(n), absent);
  return fill.data();
}

void layer_norm_forward(kernel_context& ctx) {
  const layer_norm_front f = layer_norm_front_of(ctx, fp32_input);
  const std::int64_t left = f.d.left, n = f.d.n;
  std::vector<float> ones, zeros;
  const float* scale = param_or(f.scale, ones, n, 1.f);
  const float* bias = param_or(f.bias, zeros, n, 0.f);
  float* mean = fp32_output(ctx, "Mean", f.d.stats);
  float* variance = fp32_output(ctx, "Variance", f.d.stats);
  tensor& y_out = ctx.output("Y");
  y_out.resize(dtype::fp32, f.x.shape()); // in place on X is fine: a row is read before written
  const float* x = f.x.data<float>();
  float* y = y_out.data<float>();
  for (std::int64_t r = 0; r < left; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const row_moments m = moments_of(xr, n);
    const double rstd = inverse_std(m.variance, f.epsilon);
    for (std::int64_t j = 0; j < n; ++j) yr[j] = static_cast<float>((xr[j] - m.mean) * rstd * scale[j] + bias[j]);
    if (mean != nullptr) mean[r] = static_cast<float>(m.mean);
    if (variance != nullptr) variance[r] = static_cast<float>(m.variance);
  }
}

void layer_norm_backward(kernel_context& ctx) {
  const layer_norm_grad_front f = layer_norm_grad_front_of(ctx, fp32_input);
  const std::int64_t left = f.d.left, n = f.d.n;
  std::vector<float> ones;
  const float* scale = param_or(f.scale, ones, n, 1.f);
  const float* mean = f.mean.data<float>();
  const float* variance = f.variance.data<float>();
  const bool want_dscale = ctx.has_output("Scale@GRAD"), want_dbias = ctx.has_output("Bias@GRAD");
  // The column sums, written to Scale@GRAD and Bias@GRAD once every row has been read.
  std::vector<double> dscale(want_dscale ? static_cast<std::size_t>(n) : 0);
  std::vector<double> dbias(want_dbias ? static_cast<std::size_t>(n) : 0);
  float* dx = nullptr;
  if (ctx.has_output("X@GRAD")) {
    tensor& t = ctx.output("X@GRAD");
    t.resize(dtype::fp32, f.x.shape()); // in place on X or Y@GRAD is fine (row by row)
    dx = t.data<float>();
  }
  const float* x = f.x.data<float>();
  const float* dy = f.dy.data<float>();
  // One row's xhat and g = Y@GRAD * Scale, computed once: the sums and X@GRAD read them.
  std::vector<double> xhat(static_cast<std::size_t>(n)), g(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < left && n > 0; ++r) {
    const float* xr = x + r * n;
    const float* dyr = dy + r * n;
    const double m = mean[r], rstd = inverse_std(variance[r], f.epsilon);
    double sum_g = 0, sum_gx = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      xhat[j] = (xr[j] - m) * rstd;
      g[j] = static_cast<double>(dyr[j]) * scale[j];
      sum_g += g[j];
      sum_gx += g[j] * xhat[j];
    }
    if (want_dscale)
      for (std::int64_t j = 0; j < n; ++j) dscale[j] += dyr[j] * xhat[j];
    if (want_dbias)
      for (std::int64_t j = 0; j < n; ++j) dbias[j] += dyr[j];
    if (dx == nullptr) continue;
    const double mean_g = sum_g / static_cast<double>(n), mean_gx = sum_gx / static_cast<double>(n);
    float* dxr = dx + r * n;
    for (std::int64_t j = 0; j < n; ++j) dxr[j] = static_cast<float>(rstd * (g[j] - mean_g - xhat[j] * mean_gx));
  }
  const auto store = [&](const char* slot, const shape_t& dims, const std::vector<double>& sums) {
    float* to = fp32_output(ctx, slot, dims);
    for (std::size_t j = 0; j < sums.size(); ++j) to[j] = static_cast<float>(sums[j]);
  };
  if (want_dscale) store("Scale@GRAD", f.scale_grad_dims, dscale);
  if (want_dbias) store("Bias@GRAD", f.bias_grad_dims, dbias);
}

} // namespace

void register_layer_norm_kernels(kernel_registry& r) {
  r.add("layer_norm", place::kind::cpu, layer_norm_forward);
  r.add("layer_norm_grad", place::kind::cpu, layer_norm_backward);
}

} // namespace pe
