// CPU kernels of the GEMM ops, mul, matmul_v2 and matmul, and their grads: all reduce to a
// batch of products alpha * op(X_b) * op(Y_b), computed by OpenBLAS through sgemm.
#include <algorithm>
#include <cstdint>

#include "devices/cpu/blas.hpp"
#include "devices/cpu/math_kernels.hpp"
#include "devices/math_shapes.hpp"

namespace pe {

namespace {

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

/// C_i = alpha * op(A_i) * op(B_i) for i < batch, operands `*_stride` elements apart; a stride
/// of 0 reuses one matrix. A C shared by every entry (c_stride 0) receives the sum of the
/// products.
void batched_sgemm(std::int64_t batch, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                   std::int64_t k, float alpha, const float* a, std::int64_t a_stride,
                   const float* b, std::int64_t b_stride, float* c, std::int64_t c_stride) {
  if (batch == 0 && c_stride == 0) std::fill(c, c + m * n, 0.f);
  for (std::int64_t i = 0; i < batch; ++i)
    sgemm(trans_a, trans_b, m, n, k, alpha, a + i * a_stride, b + i * b_stride,
          c_stride == 0 && i > 0 ? 1.f : 0.f, c + i * c_stride);
}

void gemm_forward(kernel_context& ctx, const gemm_operands& g) {
  const gemm_plan& p = g.plan;
  write_unaliased(ctx.output("Out"), {&g.x, &g.y}, [&](tensor& out) {
    out.resize(dtype::fp32, g.out_dims);
    batched_sgemm(p.batch, p.trans_x, p.trans_y, p.m, p.n, p.k, p.alpha, g.x.data<float>(),
                  p.x_stride(), g.y.data<float>(), p.y_stride(), out.data<float>(),
                  p.out_stride());
  });
}

/// X@GRAD and Y@GRAD of Out = alpha * op(X) * op(Y), each only when bound. With G = Out@GRAD:
/// dop(X) = alpha * G * op(Y)^T and dop(Y) = alpha * op(X)^T * G, transposed back where op
/// transposed.
void gemm_backward(kernel_context& ctx, const gemm_operands& g) {
  const gemm_plan& p = g.plan;
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, g.out_dims);
  const float* x = g.x.data<float>();
  const float* y = g.y.data<float>();
  const float* gd = dout.data<float>();
  const std::int64_t xs = p.x_stride(), ys = p.y_stride(), gs = p.out_stride();
  if (ctx.has_output("X@GRAD"))
    write_unaliased(ctx.output("X@GRAD"), {&g.x, &g.y, &dout}, [&](tensor& dx) {
      dx.resize(dtype::fp32, g.x.shape());
      float* d = dx.data<float>();
      if (p.trans_x) // dX = op(Y) * G^T
        batched_sgemm(p.batch, p.trans_y, true, p.k, p.m, p.n, p.alpha, y, ys, gd, gs, d, xs);
      else // dX = G * op(Y)^T
        batched_sgemm(p.batch, false, !p.trans_y, p.m, p.k, p.n, p.alpha, gd, gs, y, ys, d, xs);
    });
  if (ctx.has_output("Y@GRAD"))
    write_unaliased(ctx.output("Y@GRAD"), {&g.x, &g.y, &dout}, [&](tensor& dy) {
      dy.resize(dtype::fp32, g.y.shape());
      float* d = dy.data<float>();
      if (p.trans_y) // dY = G^T * op(X)
        batched_sgemm(p.batch, true, p.trans_x, p.n, p.k, p.m, p.alpha, gd, gs, x, xs, d, ys);
      else // dY = op(X)^T * G
        batched_sgemm(p.batch, !p.trans_x, false, p.k, p.n, p.m, p.alpha, x, xs, gd, gs, d, ys);
    });
}

/// mul: X and Y flattened to matrices at x_num_col_dims / y_num_col_dims.
gemm_operands mul_operands(const kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& y = fp32_input(ctx, "Y");
  mul_dims d = infer_mul(ctx, x.shape(), y.shape(), ctx.attrs().get<std::int32_t>("x_num_col_dims"),
                         ctx.attrs().get<std::int32_t>("y_num_col_dims"));
  return {x, y, {1, d.m, d.k, d.n, false, false, false, 1.f}, std::move(d.out)};
}

/// matmul_v2 and matmul: batched products; a shared Y with an untransposed X is a single
/// GEMM over X's stacked rows.
gemm_operands matmul_operands(const kernel_context& ctx, bool trans_x, bool trans_y,
                              float alpha) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& y = fp32_input(ctx, "Y");
  matmul_dims d = infer_matmul(ctx, x.shape(), y.shape(), trans_x, trans_y);
  gemm_plan plan{d.batch, d.m, d.k, d.n, trans_x, trans_y, d.y_shared, alpha};
  if (plan.y_shared && !trans_x)
    plan = {1, d.batch * d.m, d.k, d.n, false, trans_y, false, alpha};
  return {x, y, plan, std::move(d.out)};
}

gemm_operands matmul_v2_operands(const kernel_context& ctx) {
  const attribute_map& a = ctx.attrs();
  return matmul_operands(ctx, a.get<bool>("trans_x"), a.get<bool>("trans_y"), 1.f);
}

gemm_operands matmul_v1_operands(const kernel_context& ctx) {
  const attribute_map& a = ctx.attrs();
  return matmul_operands(ctx, a.get<bool>("transpose_X"), a.get<bool>("transpose_Y"),
                         a.get<float>("alpha"));
}

} // namespace

void register_gemm_kernels(kernel_registry& r) {
  r.add("mul", place::kind::cpu, [](kernel_context& ctx) { gemm_forward(ctx, mul_operands(ctx)); });
  r.add("mul_grad", place::kind::cpu,
        [](kernel_context& ctx) { gemm_backward(ctx, mul_operands(ctx)); });
  r.add("matmul_v2", place::kind::cpu,
        [](kernel_context& ctx) { gemm_forward(ctx, matmul_v2_operands(ctx)); });
  r.add("matmul_v2_grad", place::kind::cpu,
        [](kernel_context& ctx) { gemm_backward(ctx, matmul_v2_operands(ctx)); });
  r.add("matmul", place::kind::cpu,
        [](kernel_context& ctx) { gemm_forward(ctx, matmul_v1_operands(ctx)); });
  r.add("matmul_grad", place::kind::cpu,
        [](kernel_context& ctx) { gemm_backward(ctx, matmul_v1_operands(ctx)); });
}

} // namespace pe
