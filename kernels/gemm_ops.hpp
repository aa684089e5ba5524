#pragma once
// The GEMM ops (mul, matmul_v2, matmul and their grads) on every kind of place: each is a batch
// of products alpha * op(X_b) * op(Y_b). Shared here: the plan the op's shape rule gives and the
// products its grads take. A place's kernels bring the batched product and how an output is
// sized (kernels/cpu/gemm_kernels.cpp: OpenBLAS; kernels/cuda/gemm_kernels.cu: cuBLAS).
#include <cstdint>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/kernel.hpp"

namespace pe {

/// `batch` products Out_b = alpha * op(X_b) * op(Y_b), op(X_b) m x k and op(Y_b) k x n, all
/// matrices dense and row-major; Y is one matrix used by every entry when `y_shared`.
struct gemm_plan {
  std::int64_t batch, m, k, n;
  bool trans_x, trans_y, y_shared;
  float alpha;

  std::int64_t x_stride() const { return m * k; }
  std::int64_t y_stride() const { return y_shared ? 0 : k * n; }
  std::int64_t out_stride() const { return m * n; }
};

/// A GEMM op's operands, plan and output dims, checked against its shape rule.
struct gemm_operands {
  const tensor& x;
  const tensor& y;
  gemm_plan plan;
  shape_t out_dims;
};

/// The operands of the kernel's op (mul, matmul_v2 or matmul, or one of their grads) with
/// X = `x` and Y = `y`: mul flattens them at x_num_col_dims / y_num_col_dims; matmul_v2 and
/// matmul are batched products, and a shared Y with an untransposed X is a single GEMM over
/// X's stacked rows. Fails the kernel on dims its shape rule refuses.
gemm_operands gemm_operands_of(const kernel_context& ctx, const tensor& x, const tensor& y);

/// Out = alpha * op(X) * op(Y). `gemm(batch, trans_a, trans_b, m, n, k, alpha, a, a_stride, b,
/// b_stride, c, c_stride)` computes C_i = alpha * op(A_i) * op(B_i), a stride of 0 reusing one
/// matrix and a C of stride 0 receiving the sum; `size(t, dims)` makes `t` FP32 `dims` on the
/// kernel's place.
template <class Gemm, class Size>
void gemm_forward(kernel_context& ctx, const gemm_operands& g, Gemm gemm, Size size) {
  const gemm_plan& p = g.plan;
  write_unaliased(ctx.output("Out"), {&g.x, &g.y}, [&](tensor& out) {
    size(out, g.out_dims);
    gemm(p.batch, p.trans_x, p.trans_y, p.m, p.n, p.k, p.alpha, g.x.data<float>(), p.x_stride(),
         g.y.data<float>(), p.y_stride(), out.data<float>(), p.out_stride());
  });
}

/// X@GRAD and Y@GRAD of Out = alpha * op(X) * op(Y), each only when bound. With G = `dout`
/// (Out@GRAD): dop(X) = alpha * G * op(Y)^T and dop(Y) = alpha * op(X)^T * G, transposed back
/// where op transposed. `gemm` and `size` as for gemm_forward.
template <class Gemm, class Size>
void gemm_backward(kernel_context& ctx, const gemm_operands& g, const tensor& dout, Gemm gemm, Size size) {
  const gemm_plan& p = g.plan;
  expect_dims(ctx, "Out@GRAD", dout, g.out_dims);
  const float* x = g.x.data<float>();
  const float* y = g.y.data<float>();
  const float* gd = dout.data<float>();
  const std::int64_t xs = p.x_stride(), ys = p.y_stride(), gs = p.out_stride();
  if (ctx.has_output("X@GRAD"))
    write_unaliased(ctx.output("X@GRAD"), {&g.x, &g.y, &dout}, [&](tensor& dx) {
      size(dx, g.x.shape());
      float* d = dx.data<float>();
      if (p.trans_x) // dX = op(Y) * G^T
        gemm(p.batch, p.trans_y, true, p.k, p.m, p.n, p.alpha, y, ys, gd, gs, d, xs);
      else // dX = G * op(Y)^T
        gemm(p.batch, false, !p.trans_y, p.m, p.k, p.n, p.alpha, gd, gs, y, ys, d, xs);
    });
  if (ctx.has_output("Y@GRAD"))
    write_unaliased(ctx.output("Y@GRAD"), {&g.x, &g.y, &dout}, [&](tensor& dy) {
      size(dy, g.y.shape());
      float* d = dy.data<float>();
      if (p.trans_y) // dY = G^T * op(X)
        gemm(p.batch, true, p.trans_x, p.n, p.k, p.m, p.alpha, gd, gs, x, xs, d, ys);
      else // dY = op(X)^T * G
        gemm(p.batch, !p.trans_x, false, p.k, p.n, p.m, p.alpha, x, xs, gd, gs, d, ys);
    });
}

} // namespace pe
