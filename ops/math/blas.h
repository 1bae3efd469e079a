// CPU GEMM through OpenBLAS, for float and double, row-major:
//   C = alpha * op(A) * op(B) + beta * C,  op(A) is [m, k], op(B) is [k, n], C is [m, n].
// The BLAS thread count is process-wide (runtime/device/blas_threads.h).
#pragma once

#include <cstdint>

namespace rill {

template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          const T* b, T beta, T* c);

// C = A * op(B) (A not transposed) as GEMMs over runs of A's and C's rows,
// at least kGemmRowsPerPart each, run by ParallelFor (rill/parallel_for.h):
// other threads of the executor may take runs. The runs depend on m only, so
// every executor computes the same bits; fewer rows make one GEMM, as Gemm.
inline constexpr int64_t kGemmRowsPerPart = 256;
template <class T>
void GemmRowParts(bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c);

}  // namespace rill
