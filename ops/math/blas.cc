#include "ops/math/blas.h"

#include <cblas.h>

#include "ops/math/gemm_recorder.h"
#include "rill/parallel_for.h"

namespace rill {
namespace {

// BLAS rejects leading dimensions of 0, so empty products are handled here:
// nothing to do when C is empty, C = beta * C when the inner dim is 0.
template <class T>
bool HandledAsEmpty(int64_t m, int64_t n, int64_t k, T beta, T* c) {
  if (m == 0 || n == 0) return true;
  if (k != 0) return false;
  for (int64_t i = 0; i < m * n; ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
  return true;
}

}  // namespace

template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, const float* b, float beta, float* c) {
  GemmRecorder::Record({trans_a, trans_b, m, n, k, beta != 0.0f, false});
  if (HandledAsEmpty(m, n, k, beta, c)) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(trans_a ? m : k), b,
              static_cast<blasint>(trans_b ? k : n), beta, c, static_cast<blasint>(n));
}

template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, const double* b, double beta, double* c) {
  GemmRecorder::Record({trans_a, trans_b, m, n, k, beta != 0.0, true});
  if (HandledAsEmpty(m, n, k, beta, c)) return;
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(trans_a ? m : k), b,
              static_cast<blasint>(trans_b ? k : n), beta, c, static_cast<blasint>(n));
}

template <class T>
void GemmRowParts(bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  const int64_t parts = PartsOf(m, kGemmRowsPerPart);
  ParallelFor(parts, [&](int64_t part) {
    const int64_t begin = PartBegin(m, parts, part);
    const int64_t rows = PartBegin(m, parts, part + 1) - begin;
    Gemm<T>(false, trans_b, rows, n, k, T(1), a + begin * k, b, T(0), c + begin * n);
  });
}

template void GemmRowParts<float>(bool, int64_t, int64_t, int64_t, const float*, const float*,
                                  float*);
template void GemmRowParts<double>(bool, int64_t, int64_t, int64_t, const double*, const double*,
                                   double*);

}  // namespace rill
