// CPU kernels of the GEMM ops, mul, matmul_v2 and matmul, and their grads: all reduce to a
// batch of products alpha * op(X_b) * op(Y_b), computed by OpenBLAS through sgemm.
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/cpu/blas.hpp"
#include "kernels/gemm_ops.hpp"

namespace pe {

namespace {

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

/// A GEMM op's kernel (its grad when `backward`) through OpenBLAS.
void run_gemm(kernel_context& ctx, bool backward) {
  const gemm_operands g = gemm_operands_of(ctx, fp32_input(ctx, "X"), fp32_input(ctx, "Y"));
  auto size = [](tensor& t, const shape_t& dims) { t.resize(dtype::fp32, dims); };
  if (backward) gemm_backward(ctx, g, fp32_input(ctx, "Out@GRAD"), batched_sgemm, size);
  else gemm_forward(ctx, g, batched_sgemm, size);
}

} // namespace

void register_gemm_kernels(kernel_registry& r) {
  for (const std::string type : {"mul", "matmul_v2", "matmul"}) {
    r.add(type, place::kind::cpu, [](kernel_context& ctx) { run_gemm(ctx, false); });
    r.add(type + "_grad", place::kind::cpu, [](kernel_context& ctx) { run_gemm(ctx, true); });
  }
}

} // namespace pe
