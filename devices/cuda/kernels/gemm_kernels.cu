// CUDA kernels of the GEMM ops, mul, matmul_v2 and matmul, and their grads: the CPU kernels'
// plans (devices/cpu/gemm_kernels.cpp) as batches of products alpha * op(X_b) * op(Y_b) run by
// cuBLAS. Row-major operands through the transposed trick: row-major C = op(A) op(B) is
// column-major C^T = op(B)^T op(A)^T, so cuBLAS is called with the operands swapped.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "devices/cuda/kernels/cublas_handles.hpp"
#include "devices/cuda/kernels/cuda_kernel_groups.hpp"
#include "devices/cuda/kernels/gpu_maps.cuh"
#include "devices/math_shapes.hpp"

namespace pe::cuda {

void check(const kernel_context& ctx, cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    ctx.fail(std::string(what) + " on " + to_string(ctx.where()) + ": " +
             cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

cublasHandle_t cublas_handle(const kernel_context& ctx, cudaStream_t stream) {
  static std::mutex mutex;
  static auto* handles = new std::map<cudaStream_t, cublasHandle_t>; // never destroyed
  std::lock_guard lock(mutex);
  auto it = handles->find(stream);
  if (it != handles->end()) return it->second;
  cublasHandle_t h = nullptr;
  check(ctx, cublasCreate(&h), "cublasCreate");
  check(ctx, cublasSetStream(h, stream), "cublasSetStream");
  check(ctx, cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  handles->emplace(stream, h);
  return h;
}

namespace {

int as_int(const kernel_context& ctx, std::int64_t v, const char* what) {
  if (v < 0 || v > 0x7fffffff) ctx.fail(std::string(what) + " " + std::to_string(v) + " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

} // namespace

void batched_sgemm(const kernel_context& ctx, std::int64_t batch, bool trans_a, bool trans_b,
                   std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                   std::int64_t a_stride, const float* b, std::int64_t b_stride, float* c,
                   std::int64_t c_stride) {
  const cudaStream_t stream = cuda_stream_of(ctx);
  if (m == 0 || n == 0) return;
  if (batch == 0) {
    if (c_stride == 0)
      check(ctx, cudaMemsetAsync(c, 0, static_cast<std::size_t>(m * n) * sizeof(float), stream),
            "cudaMemsetAsync");
    return;
  }
  cublasHandle_t h = cublas_handle(ctx, stream);
  const int mi = as_int(ctx, m, "m"), ni = as_int(ctx, n, "n"), ki = as_int(ctx, k, "k");
  // Leading dims of the row-major operands as stored (at least 1, as cuBLAS requires).
  const int lda = std::max(1, trans_a ? mi : ki);
  const int ldb = std::max(1, trans_b ? ki : ni);
  const int ldc = std::max(1, ni);
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (c_stride == 0) {
    for (std::int64_t i = 0; i < batch; ++i) {
      const float beta = i > 0 ? 1.f : 0.f;
      check(ctx,
            cublasSgemm(h, op_b, op_a, ni, mi, ki, &alpha, b + i * b_stride, ldb,
                        a + i * a_stride, lda, &beta, c, ldc),
            "cublasSgemm");
    }
    return;
  }
  const float beta = 0.f;
  check(ctx,
        cublasSgemmStridedBatched(h, op_b, op_a, ni, mi, ki, &alpha, b, ldb, b_stride, a, lda,
                                  a_stride, &beta, c, ldc, c_stride,
                                  as_int(ctx, batch, "batch")),
        "cublasSgemmStridedBatched");
}

namespace {

struct gemm_plan {
  std::int64_t batch, m, k, n;
  bool trans_x, trans_y, y_shared;
  float alpha;

  std::int64_t x_stride() const { return m * k; }
  std::int64_t y_stride() const { return y_shared ? 0 : k * n; }
  std::int64_t out_stride() const { return m * n; }
};

struct gemm_operands {
  const tensor& x;
  const tensor& y;
  gemm_plan plan;
  shape_t out_dims;
};


void gemm_forward(kernel_context& ctx, const gemm_operands& g) {
  const gemm_plan& p = g.plan;
  write_unaliased(ctx.output("Out"), {&g.x, &g.y}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, g.out_dims);
    batched_sgemm(ctx, p.batch, p.trans_x, p.trans_y, p.m, p.n, p.k, p.alpha, g.x.data<float>(),
                  p.x_stride(), g.y.data<float>(), p.y_stride(), out.data<float>(),
                  p.out_stride());
  });
}

void gemm_backward(kernel_context& ctx, const gemm_operands& g) {
  const gemm_plan& p = g.plan;
  const tensor& dout = gpu_fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, g.out_dims);
  const float* x = g.x.data<float>();
  const float* y = g.y.data<float>();
  const float* gd = dout.data<float>();
  const std::int64_t xs = p.x_stride(), ys = p.y_stride(), gs = p.out_stride();
  if (ctx.has_output("X@GRAD"))
    write_unaliased(ctx.output("X@GRAD"), {&g.x, &g.y, &dout}, [&](tensor& dx) {
      resize_output(ctx, dx, dtype::fp32, g.x.shape());
      float* d = dx.data<float>();
      if (p.trans_x)
        batched_sgemm(ctx, p.batch, p.trans_y, true, p.k, p.m, p.n, p.alpha, y, ys, gd, gs, d, xs);
      else
        batched_sgemm(ctx, p.batch, false, !p.trans_y, p.m, p.k, p.n, p.alpha, gd, gs, y, ys, d, xs);
    });
  if (ctx.has_output("Y@GRAD"))
    write_unaliased(ctx.output("Y@GRAD"), {&g.x, &g.y, &dout}, [&](tensor& dy) {
      resize_output(ctx, dy, dtype::fp32, g.y.shape());
      float* d = dy.data<float>();
      if (p.trans_y)
        batched_sgemm(ctx, p.batch, true, p.trans_x, p.n, p.k, p.m, p.alpha, gd, gs, x, xs, d, ys);
      else
        batched_sgemm(ctx, p.batch, !p.trans_x, false, p.k, p.n, p.m, p.alpha, x, xs, gd, gs, d, ys);
    });
}

gemm_operands mul_operands(const kernel_context& ctx) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const tensor& y = gpu_fp32_input(ctx, "Y");
  mul_dims d = infer_mul(ctx, x.shape(), y.shape(), ctx.attrs().get<std::int32_t>("x_num_col_dims"),
                         ctx.attrs().get<std::int32_t>("y_num_col_dims"));
  return {x, y, {1, d.m, d.k, d.n, false, false, false, 1.f}, std::move(d.out)};
}

gemm_operands matmul_operands(const kernel_context& ctx, bool trans_x, bool trans_y, float alpha) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const tensor& y = gpu_fp32_input(ctx, "Y");
  matmul_dims d = infer_matmul(ctx, x.shape(), y.shape(), trans_x, trans_y);
  gemm_plan plan{d.batch, d.m, d.k, d.n, trans_x, trans_y, d.y_shared, alpha};
  if (plan.y_shared && !trans_x) plan = {1, d.batch * d.m, d.k, d.n, false, trans_y, false, alpha};
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
  constexpr auto gpu = place::kind::gpu;
  r.add("mul", gpu, [](kernel_context& ctx) { gemm_forward(ctx, mul_operands(ctx)); });
  r.add("mul_grad", gpu, [](kernel_context& ctx) { gemm_backward(ctx, mul_operands(ctx)); });
  r.add("matmul_v2", gpu, [](kernel_context& ctx) { gemm_forward(ctx, matmul_v2_operands(ctx)); });
  r.add("matmul_v2_grad", gpu,
        [](kernel_context& ctx) { gemm_backward(ctx, matmul_v2_operands(ctx)); });
  r.add("matmul", gpu, [](kernel_context& ctx) { gemm_forward(ctx, matmul_v1_operands(ctx)); });
  r.add("matmul_grad", gpu,
        [](kernel_context& ctx) { gemm_backward(ctx, matmul_v1_operands(ctx)); });
}

} // namespace pe::cuda
