#pragma once

#include <cstdint>

namespace pe {

/// C = alpha * op(A) * op(B) + beta * C on row-major FP32 matrices, where op(A) is m x k,
/// op(B) is k x n and C is m x n; op transposes when `trans_a` / `trans_b` is set. Leading
/// dimensions follow from the shapes (the matrices are dense). With beta == 0, C need not be
/// initialised. Throws pe::error when a dimension exceeds BLAS's 32-bit integers.
///
/// Products of at least 2^17 multiply-adds run in oneDNN's sgemm (faster on these shapes),
/// smaller ones in OpenBLAS (less overhead per call); both on blas_threads() threads, each
/// deterministic for a given thread count.
void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, const float* b, float beta, float* c);

/// Sets how many threads OpenBLAS (and oneDNN, on the thread of its next kernel) uses for each call.
///
/// The engine defaults to ONE BLAS thread, applied before its first GEMM: data-parallel
/// places already occupy the cores, and BLAS threads on top of them oversubscribe the
/// machine (measured 5-20x slower, reference §6). Applications with fewer places than cores
/// raise it here; OPENBLAS_NUM_THREADS in the environment does not override the default.
void set_blas_threads(int n);

/// The number of threads OpenBLAS uses for each call (1 unless set_blas_threads changed it).
int blas_threads();

} // namespace pe
