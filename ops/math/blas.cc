#include "ops/math/blas.h"

#include <cblas.h>

#include <algorithm>

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

// C = alpha * op(A) * op(B) + beta * C with leading dimensions of their own
// (a block of columns of a row-major matrix has its whole row as leading
// dimension).
void GemmStrided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void GemmStrided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                 int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// Rows [row, row + rows) and columns [col, col + cols) of C = op(A) * op(B),
// C [m, n] row-major, op(A) [m, k], op(B) [k, n].
template <class T>
void GemmBlock(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
               T* c, int64_t row, int64_t rows, int64_t col, int64_t cols) {
  GemmRecorder::Record({trans_a, trans_b, rows, cols, k, false, sizeof(T) == sizeof(double)});
  if (rows == 0 || cols == 0) return;
  if (k == 0) {  // BLAS rejects it (HandledAsEmpty's case), row by row: C's rows are longer
    for (int64_t i = row; i < row + rows; ++i) std::fill_n(c + i * n + col, cols, T(0));
    return;
  }
  const T* a_block = trans_a ? a + row : a + row * k;  // op(A) = A^T: A is [k, m]
  const T* b_block = trans_b ? b + col * k : b + col;  // op(B) = B^T: B is [n, k]
  GemmStrided(trans_a, trans_b, rows, cols, k, T(1), a_block, trans_a ? m : k, b_block,
              trans_b ? k : n, T(0), c + row * n + col, n);
}

}  // namespace

template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          const T* b, T beta, T* c) {
  GemmRecorder::Record({trans_a, trans_b, m, n, k, beta != T(0), sizeof(T) == sizeof(double)});
  if (HandledAsEmpty(m, n, k, beta, c)) return;
  GemmStrided(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, const float*,
                          float, float*);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                           const double*, double, double*);

template <class T>
void GemmParts(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
               T* c) {
  const GemmGrid grid = GemmGridOf(m, n, k);
  ParallelFor(grid.row_parts * grid.col_parts, [&](int64_t part) {
    const int64_t r = part / grid.col_parts, q = part % grid.col_parts;
    const int64_t row = PartBegin(m, grid.row_parts, r);
    const int64_t col = PartBegin(n, grid.col_parts, q);
    GemmBlock(trans_a, trans_b, m, n, k, a, b, c, row, PartBegin(m, grid.row_parts, r + 1) - row,
              col, PartBegin(n, grid.col_parts, q + 1) - col);
  });
}

GemmGrid GemmGridOf(int64_t m, int64_t n, int64_t k) {
  GemmGrid grid;
  // Parts of at least kGemmMacsPerPart multiply-adds, cut from C's rows where
  // it has enough of them (contiguous blocks), else from its columns.
  const int64_t most = std::max<int64_t>(1, m * n * std::max<int64_t>(k, 1) / kGemmMacsPerPart);
  grid.row_parts = std::min(PartsOf(m, kGemmRowsPerPart), most);
  if (grid.row_parts == 1) grid.col_parts = std::min(PartsOf(n, kGemmColsPerPart), most);
  return grid;
}

template void GemmParts<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*,
                               float*);
template void GemmParts<double>(bool, bool, int64_t, int64_t, int64_t, const double*, const double*,
                                double*);

}  // namespace rill
