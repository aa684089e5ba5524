// CUDA kernels of the GEMM ops, mul, matmul_v2 and matmul, and their grads: the plans and
// grad products of kernels/gemm_ops.hpp (shared with the CPU kernels) run by cuBLAS. Row-major operands through the transposed trick: row-major C = op(A) op(B) is
// column-major C^T = op(B)^T op(A)^T, so cuBLAS is called with the operands swapped.
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cuda/cublas_handles.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/gemm_ops.hpp"

namespace pe::cuda {

void check(const kernel_context& ctx, cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    ctx.fail(std::string(what) + " on " + to_string(ctx.where()) + ": " +
             cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

namespace {

/// The cuBLAS handle of a stream and the workspace it was given.
struct cublas_state {
  cublasHandle_t handle = nullptr;
  /// Owned here rather than cuBLAS's own pool: captured into a CUDA graph (--cuda-graphs),
  /// cuBLAS without a workspace of the user's allocates one with stream-ordered allocation
  /// nodes inside the graph (cuBLAS's "CUDA Graphs Support"); with this one the graph's
  /// GEMMs use memory that lives as long as the handle, which outlives every graph of its
  /// stream. 32 MiB: what cuBLAS recommends for Hopper (4 MiB before it).
  tensor workspace;
  ~cublas_state() {
    if (handle != nullptr) (void)cublasDestroy(handle); // before the workspace goes
  }
};

constexpr std::int64_t workspace_bytes = std::int64_t{32} << 20;

} // namespace

cublasHandle_t cublas_handle(const kernel_context& ctx) {
  static const char key = 0;
  const auto state = stream_library_state(ctx, &key, [&] {
    auto s = std::make_shared<cublas_state>();
    check(ctx, cublasCreate(&s->handle), "cublasCreate");
    // cublasSetStream resets the workspace to cuBLAS's pool: the stream first.
    check(ctx, cublasSetStream(s->handle, cuda_stream_of(ctx)), "cublasSetStream");
    check(ctx, cublasSetMathMode(s->handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    s->workspace = scratch(ctx, dtype::uint8, {workspace_bytes});
    check(ctx, cublasSetWorkspace(s->handle, s->workspace.raw(), static_cast<std::size_t>(workspace_bytes)),
          "cublasSetWorkspace");
    return std::shared_ptr<void>(s);
  });
  return static_cast<cublas_state*>(state.get())->handle;
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
  // Sums of nothing (no batch to sum over, or k = 0, as a grad over a place without rows
  // has) are zeros, written here: cuBLAS documents no k = 0 case.
  if (batch == 0 || k == 0) {
    const auto zero = [&](float* at) {
      check(ctx, cudaMemsetAsync(at, 0, static_cast<std::size_t>(m * n) * sizeof(float), stream),
            "cudaMemsetAsync");
    };
    if (c_stride == 0) zero(c);
    else
      for (std::int64_t i = 0; i < batch; ++i) zero(c + i * c_stride);
    return;
  }
  cublasHandle_t h = cublas_handle(ctx);
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

/// A GEMM op's kernel (its grad when `backward`) through cuBLAS.
void run_gemm(kernel_context& ctx, bool backward) {
  const gemm_operands g = gemm_operands_of(ctx, gpu_fp32_input(ctx, "X"), gpu_fp32_input(ctx, "Y"));
  auto gemm = [&ctx](auto... args) { batched_sgemm(ctx, args...); };
  auto size = [&ctx](tensor& t, const shape_t& dims) { resize_output(ctx, t, dtype::fp32, dims); };
  if (backward) gemm_backward(ctx, g, gpu_fp32_input(ctx, "Out@GRAD"), gemm, size);
  else gemm_forward(ctx, g, gemm, size);
}

} // namespace

void register_gemm_kernels(kernel_registry& r) {
  for (const std::string type : {"mul", "matmul_v2", "matmul"}) {
    r.add(type, place::kind::gpu, [](kernel_context& ctx) { run_gemm(ctx, false); });
    r.add(type + "_grad", place::kind::gpu, [](kernel_context& ctx) { run_gemm(ctx, true); });
  }
}

} // namespace pe::cuda
