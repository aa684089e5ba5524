// CUDA kernels of layer_norm and layer_norm_grad, X viewed as [left, N] (cut at
// begin_norm_axis): a block per row for the row's statistics and its normalisation
// (layer_norm_kernel) and for X@GRAD's two row sums (layer_norm_grad_kernel), a block per
// column for Scale@GRAD and Bias@GRAD (reduce_blocks). The arithmetic is the CPU kernel's
// (kernels/cpu/layer_norm_kernels.cpp), expression for expression: FP32 tensors, double in
// between (the sums, two passes for the variance, and the element expressions), so the two
// differ only in the order of the sums and where nvcc fuses a multiply-add. Inputs and
// attributes are read and checked by kernels/layer_norm_ops.hpp's fronts, shared with the
// CPU kernels.
// Compiled and linked by every CUDA build, not yet run on a GPU: cuda_kernels_gpu_test's
// LayerNorm case compares it with the CPU kernel on a GPU machine (it skips without one).
#include <cmath>
#include <cstdint>
#include <utility>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/layer_norm_ops.hpp"

namespace pe::cuda {

namespace {

PE_HOST_DEVICE inline double ln_inverse_std(double variance, float epsilon) {
  return 1 / sqrt(variance + epsilon);
}

/// The rows' Mean and Variance and Y, one block per row; thread t of `threads` takes the row
/// elements t, t + threads, ... Scale and Bias may be null (absent), as may Mean and Variance
/// (not bound).
struct ln_forward_plan {
  const float* x;
  float* y;
  const float* scale;
  const float* bias;
  float* mean;
  float* variance;
  std::int64_t n;
  float epsilon;

  PE_HOST_DEVICE double sum_partial(std::int64_t row, unsigned t, unsigned threads) const {
    const float* xr = x + row * n;
    return strided_fold(
        n, t, threads, 0.0, [&](std::int64_t j) { return static_cast<double>(xr[j]); }, plus_op{});
  }
  PE_HOST_DEVICE double square_partial(std::int64_t row, unsigned t, unsigned threads,
                                       double m) const {
    const float* xr = x + row * n;
    return strided_fold(
        n, t, threads, 0.0,
        [&](std::int64_t j) {
          const double d = xr[j] - m;
          return d * d;
        },
        plus_op{});
  }
  /// Writes thread t's elements of Y from the row's unrounded statistics, and (thread 0) the
  /// statistics rounded to Mean and Variance.
  PE_HOST_DEVICE void write(std::int64_t row, unsigned t, unsigned threads, double m,
                            double var) const {
    const double rstd = ln_inverse_std(var, epsilon);
    const float* xr = x + row * n;
    float* yr = y + row * n;
    for (std::int64_t j = t; j < n; j += threads) {
      double v = (xr[j] - m) * rstd;
      if (scale != nullptr) v *= scale[j];
      if (bias != nullptr) v += bias[j];
      yr[j] = static_cast<float>(v);
    }
    if (t != 0) return;
    if (mean != nullptr) mean[row] = static_cast<float>(m);
    if (variance != nullptr) variance[row] = static_cast<float>(var);
  }
};

/// The mean of `total` over n elements; 0 for none, as the CPU kernel.
__device__ double row_average(double total, std::int64_t n) {
  return n > 0 ? total / static_cast<double>(n) : 0.0;
}

__global__ void layer_norm_kernel(ln_forward_plan p, std::int64_t rows) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const double mean =
        row_average(block_reduce(p.sum_partial(row, threadIdx.x, blockDim.x), plus_op{}), p.n);
    const double variance = row_average(
        block_reduce(p.square_partial(row, threadIdx.x, blockDim.x, mean), plus_op{}), p.n);
    // Both sums are reduced (block_reduce's barriers) before any thread writes: Y may be X.
    p.write(row, threadIdx.x, blockDim.x, mean, variance);
  }
}

/// A row's statistics as the grad reads them: the saved Mean and 1 / sqrt(Variance + epsilon).
struct ln_row_stats {
  double mean, rstd;
  PE_HOST_DEVICE double xhat(float x) const { return (x - mean) * rstd; }
};

/// What both grad plans read: X and Y@GRAD as [left, n], the forward's Mean and Variance.
struct ln_grad_inputs {
  const float* x;
  const float* dy;
  const float* mean;
  const float* variance;
  std::int64_t n;
  float epsilon;
  PE_HOST_DEVICE ln_row_stats stats(std::int64_t row) const {
    return {mean[row], ln_inverse_std(variance[row], epsilon)};
  }
};

/// X@GRAD, one block per row: g = Y@GRAD * Scale (Scale may be null: 1), and
/// dx = rstd * (g - sum(g) / N - xhat * sum(g * xhat) / N).
struct ln_grad_plan {
  ln_grad_inputs in;
  const float* scale;
  float* dx;

  PE_HOST_DEVICE double g(std::int64_t i, std::int64_t j) const {
    return scale != nullptr ? static_cast<double>(in.dy[i]) * scale[j] : in.dy[i];
  }
  /// Thread t's part of the row's sum of g, or (with `times_xhat`) of g * xhat.
  PE_HOST_DEVICE double partial(std::int64_t row, unsigned t, unsigned threads,
                                bool times_xhat) const {
    const ln_row_stats s = in.stats(row);
    const std::int64_t first = row * in.n;
    return strided_fold(
        in.n, t, threads, 0.0,
        [&](std::int64_t j) {
          const double gj = g(first + j, j);
          return times_xhat ? gj * s.xhat(in.x[first + j]) : gj;
        },
        plus_op{});
  }
  PE_HOST_DEVICE void write(std::int64_t row, unsigned t, unsigned threads, double sum_g,
                            double sum_gx) const {
    const ln_row_stats s = in.stats(row);
    const auto count = static_cast<double>(in.n);
    const double mean_g = sum_g / count, mean_gx = sum_gx / count;
    const std::int64_t first = row * in.n;
    for (std::int64_t j = t; j < in.n; j += threads) {
      const double xhat = s.xhat(in.x[first + j]);
      dx[first + j] = static_cast<float>(s.rstd * (g(first + j, j) - mean_g - xhat * mean_gx));
    }
  }
};

__global__ void layer_norm_grad_kernel(ln_grad_plan p, std::int64_t rows) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const double sum_g = block_reduce(p.partial(row, threadIdx.x, blockDim.x, false), plus_op{});
    const double sum_gx = block_reduce(p.partial(row, threadIdx.x, blockDim.x, true), plus_op{});
    p.write(row, threadIdx.x, blockDim.x, sum_g, sum_gx);
  }
}

/// A reduce_blocks plan, one block per column j of N: Scale@GRAD[j] = the sum over the `left`
/// rows of Y@GRAD * xhat, or (without `times_xhat`) Bias@GRAD[j] = the sum of Y@GRAD.
struct ln_param_grad_plan {
  ln_grad_inputs in;
  std::int64_t left;
  bool times_xhat;
  float* sum;

  PE_HOST_DEVICE double partial(std::int64_t j, unsigned t, unsigned threads) const {
    return strided_fold(
        left, t, threads, 0.0,
        [&](std::int64_t r) {
          const std::int64_t i = r * in.n + j;
          const double d = in.dy[i];
          return times_xhat ? d * in.stats(r).xhat(in.x[i]) : d;
        },
        plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t j, double total) const {
    sum[j] = static_cast<float>(total);
  }
};

/// The data of output `slot` resized to FP32 `dims` on the place, or null when not bound.
float* bound_output(kernel_context& ctx, const char* slot, const shape_t& dims) {
  if (!ctx.has_output(slot)) return nullptr;
  tensor& t = ctx.output(slot);
  resize_output(ctx, t, dtype::fp32, dims);
  return t.data<float>();
}

const float* data_or_null(const tensor* t) { return t != nullptr ? t->data<float>() : nullptr; }

void layer_norm_forward(kernel_context& ctx) {
  const layer_norm_front f = layer_norm_front_of(ctx, gpu_fp32_input);
  const std::int64_t left = f.d.left;
  float* mean = bound_output(ctx, "Mean", f.d.stats);
  float* variance = bound_output(ctx, "Variance", f.d.stats);
  tensor& y = ctx.output("Y");
  resize_output(ctx, y, dtype::fp32, f.x.shape()); // in place on X is fine (layer_norm_kernel)
  if (left == 0) return;
  layer_norm_kernel<<<lane_blocks(left), reduce_threads, 0, cuda_stream_of(ctx)>>>(
      ln_forward_plan{f.x.data<float>(), y.data<float>(), data_or_null(f.scale),
                      data_or_null(f.bias), mean, variance, f.d.n, f.epsilon},
      left);
  check_launch(ctx, "layer_norm_kernel");
}

void layer_norm_backward(kernel_context& ctx) {
  const layer_norm_grad_front f = layer_norm_grad_front_of(ctx, gpu_fp32_input);
  const std::int64_t left = f.d.left, n = f.d.n;
  const ln_grad_inputs in{f.x.data<float>(), f.dy.data<float>(), f.mean.data<float>(),
                          f.variance.data<float>(), n, f.epsilon};
  // Built aside and bound at the end: an output may be an input still to be read.
  const auto column_sums = [&](const shape_t& dims, bool times_xhat) {
    tensor t = scratch(ctx, dtype::fp32, dims);
    reduce_blocks(ctx, n, ln_param_grad_plan{in, left, times_xhat, t.data<float>()});
    return t;
  };
  tensor dscale, dbias, dx;
  if (ctx.has_output("Scale@GRAD")) dscale = column_sums(f.scale_grad_dims, true);
  if (ctx.has_output("Bias@GRAD")) dbias = column_sums(f.bias_grad_dims, false);
  if (ctx.has_output("X@GRAD")) {
    dx = scratch(ctx, dtype::fp32, f.x.shape());
    if (left > 0 && n > 0) {
      layer_norm_grad_kernel<<<lane_blocks(left), reduce_threads, 0, cuda_stream_of(ctx)>>>(
          ln_grad_plan{in, data_or_null(f.scale), dx.data<float>()}, left);
      check_launch(ctx, "layer_norm_grad_kernel");
    }
  }
  if (ctx.has_output("X@GRAD")) ctx.output("X@GRAD") = std::move(dx);
  if (ctx.has_output("Scale@GRAD")) ctx.output("Scale@GRAD") = std::move(dscale);
  if (ctx.has_output("Bias@GRAD")) ctx.output("Bias@GRAD") = std::move(dbias);
}

} // namespace

void register_layer_norm_kernels(kernel_registry& r) {
  r.add("layer_norm", place::kind::gpu, layer_norm_forward);
  r.add("layer_norm_grad", place::kind::gpu, layer_norm_backward);
}

} // namespace pe::cuda
