// CPU GEMM through OpenBLAS, for float and double, row-major:
//   C = alpha * op(A) * op(B) + beta * C,  op(A) is [m, k], op(B) is [k, n], C is [m, n].
// The BLAS thread count is process-wide (runtime/device/blas_threads.h).
#pragma once

#include <cstdint>

namespace rill {

template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          const T* b, T beta, T* c);

// C = op(A) * op(B) as GEMMs over blocks of C, run by ParallelFor
// (rill/parallel_for.h): other threads of the executor may take blocks. The
// blocks depend on the sizes only (GemmGridOf), so every executor computes the
// same bits; each element's sum over k is one GEMM's, whatever the cut. A small
// product is one GEMM, as Gemm.
template <class T>
void GemmParts(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
               T* c);

// GemmParts' cut: runs of at least kGemmRowsPerPart rows where C has twice as
// many, else runs of at least kGemmColsPerPart columns, and no part under
// kGemmMacsPerPart multiply-adds (a few hundred microseconds: handing a part
// to another thread costs a few).
inline constexpr int64_t kGemmRowsPerPart = 256;
inline constexpr int64_t kGemmColsPerPart = 256;
inline constexpr int64_t kGemmMacsPerPart = int64_t{1} << 24;
struct GemmGrid {
  int64_t row_parts = 1;
  int64_t col_parts = 1;
};
GemmGrid GemmGridOf(int64_t m, int64_t n, int64_t k);

}  // namespace rill
