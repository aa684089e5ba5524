#include "kernels/cpu/blas.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include <cblas.h>
#include <dnnl.h>

#include "core/error.hpp"
#include "kernels/cpu/dnnl_cache.hpp"

namespace pe {

namespace {

/// Pins OpenBLAS to one thread the first time the engine touches BLAS (see set_blas_threads).
/// Done lazily rather than in a static initialiser so that it happens after OpenBLAS's own
/// start-up, whatever the link order.
void apply_default_threads() {
  static const bool applied = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)applied;
}

blasint blas_dim(std::int64_t value, const char* name) {
  if (value < 0 || value > std::numeric_limits<blasint>::max())
    throw error("sgemm: dimension " + std::string(name) + " = " + std::to_string(value) +
                " does not fit BLAS's integers");
  return static_cast<blasint>(value);
}

/// From this many multiply-adds (m * n * k) on, oneDNN's sgemm computes the product: its
/// jitted kernels ran 1.2-1.4x OpenBLAS's 0.3.21 on the MLPs' and the convolutions' shapes
/// (64 x 256 x 784 in 130 against 176 us on one thread; 8 x 256 x 784 in 16 against 46 us,
/// Xeon with AVX-512, Debian's libdnnl 2.6), but each call costs ~0.3 us more, which loses
/// below about 100k multiply-adds (4 x 10 x 128: 0.4 against 0.3 us).
constexpr std::int64_t dnnl_min_multiply_adds = std::int64_t{1} << 17;

} // namespace

void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, const float* b, float beta, float* c) {
  apply_default_threads();
  if (m == 0 || n == 0) return;
  // BLAS requires leading dimensions >= 1 even when k == 0 (then C = beta * C).
  const std::int64_t lda = std::max<std::int64_t>(1, trans_a ? m : k);
  const std::int64_t ldb = std::max<std::int64_t>(1, trans_b ? k : n);
  if (k > 0 && m * n >= dnnl_min_multiply_adds / k) {
    // oneDNN's OpenMP team on this thread is blas_threads(), as for its primitives.
    dnnl_team_size();
    if (dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, n) ==
        dnnl_success)
      return;
    // Refused (a shape oneDNN's integers cannot hold): BLAS below checks and reports it.
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_dim(m, "m"), blas_dim(n, "n"),
              blas_dim(k, "k"), alpha, a, blas_dim(lda, "lda"), b, blas_dim(ldb, "ldb"), beta, c,
              blas_dim(n, "ldc"));
}

void set_blas_threads(int n) {
  if (n < 1) throw error("set_blas_threads: thread count must be >= 1, got " + std::to_string(n));
  apply_default_threads();
  openblas_set_num_threads(n);
}

int blas_threads() {
  apply_default_threads();
  return openblas_get_num_threads();
}

} // namespace pe
