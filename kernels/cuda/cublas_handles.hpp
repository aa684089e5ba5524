#pragma once

// cuBLAS handles, one per CUDA stream: a handle is bound to its stream (cublasSetStream) and
// must not be used by two threads at once; each stream's launch code runs on that stream's
// own thread, so a handle per stream needs no further locking. The stream owns it
// (cuda_stream_backend::library_state).

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/kernel.hpp"

namespace pe::cuda {

/// The cuBLAS handle of the kernel's stream (made on the stream's thread on first use, bound
/// to the stream, with CUBLAS_DEFAULT_MATH: no TF32, so FP32 GEMMs stay FP32 as on the CPU;
/// released with the stream).
cublasHandle_t cublas_handle(const kernel_context& ctx);

/// Throws pe::error prefixed with the op unless `status` is CUBLAS_STATUS_SUCCESS.
void check(const kernel_context& ctx, cublasStatus_t status, const char* what);

/// C_i = alpha * op(A_i) * op(B_i) for i < batch on the kernel's stream, all matrices dense
/// and row-major (op(A) m x k, op(B) k x n, C m x n), operands `*_stride` elements apart; a
/// stride of 0 reuses one matrix, and a C shared by every entry (c_stride 0) receives the sum
/// of the products (zeros for batch 0 or k 0). The CPU kernels' batched_sgemm, through cuBLAS.
void batched_sgemm(const kernel_context& ctx, std::int64_t batch, bool trans_a, bool trans_b,
                   std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                   std::int64_t a_stride, const float* b, std::int64_t b_stride, float* c,
                   std::int64_t c_stride);

} // namespace pe::cuda
